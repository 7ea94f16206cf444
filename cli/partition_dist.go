package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"gnnmpi/collective"
	"gnnmpi/graph"
	"gnnmpi/internal/memlimit"
	"gnnmpi/partition"
	"gnnmpi/partition/dist"
	"gnnmpi/partition/distpart"
	"gnnmpi/partition/ptscotch"
)

// MPIAccess reaches the MPI communicator beneath a collective.Comm, for
// libraries that make MPI calls themselves; main fills it from
// collective/mpi (FortranHandle and Call), so that this package picks no
// backend (see distpart.PTScotch).
type MPIAccess struct {
	// Handle returns the Fortran handle of c's MPI communicator, or false
	// when c has none.
	Handle func(c collective.Comm) (int, bool)
	// Call runs f where MPI calls may be made.
	Call func(f func())
}

// distOptions are the flags of a distributed `gnnmpi partition`.
type distOptions struct {
	partitionOptions
	imbalance float64
	check     bool
}

// binaryFile reports whether path is a binary dataset that can be read in
// row blocks.
func binaryFile(path string) bool {
	r, err := graph.OpenBinaryRows(path)
	if err != nil {
		return false
	}
	r.Close()
	return true
}

// ogbBinaryDir reports whether path is a directory in OGB's binary layout
// (raw/data.npz), which distpart.OpenOGB reads in slices.
func ogbBinaryDir(path string) bool {
	st, err := os.Stat(filepath.Join(path, "raw", "data.npz"))
	return err == nil && !st.IsDir()
}

// runDistPartition partitions the binary dataset o.data, or the directory
// in OGB's binary layout o.data (distpart.OpenOGB: every rank reads 1/p of
// the edges and sends each to its row's owner, symmetrized with
// --symmetrize), into o.parts parts with a distributed method, every rank
// holding its block of rows: with
// PT-Scotch ("ptscotch") or into consecutive blocks ("block", no engine).
// It writes the book on rank 0 (o.book) and the partitioned dataset
// (o.out) from the ranks' blocks (package partition/distpart), so that no
// rank holds the whole graph.
func runDistPartition(env *Env, o distOptions) error {
	c := env.Comm
	k, method, data := o.parts, o.method, o.data
	if k < 1 {
		return fmt.Errorf("partition: --parts %d < 1", k)
	}
	if o.imbalance < 0 || o.imbalance >= 1 {
		return fmt.Errorf("partition: --imbalance %g outside [0,1)", o.imbalance)
	}
	if method == partition.MethodPTScotch {
		if env.MPI == nil {
			return fmt.Errorf("partition: --method %s needs the MPI backend: run under mpirun (in-process ranks cannot reach PT-Scotch)", method)
		}
		if !ptscotch.Available {
			return fmt.Errorf("partition: %w", ptscotch.Unavailable)
		}
	}
	notBinary := func(err error) error {
		return fmt.Errorf("partition: --method %s reads row blocks of a binary dataset or OGB's binary layout (raw/data.npz); convert %s first (gnnmpi convert): %w", method, data, err)
	}
	var r distpart.Source
	if ogbBinaryDir(data) {
		if err := checkIngest(c, data, o.symmetrize, k); err != nil {
			return err
		}
		g, err := distpart.OpenOGB(c, data, distpart.OGBOptions{Symmetrize: o.symmetrize, Progress: env.Progress})
		if err != nil {
			return err
		}
		defer g.Close()
		r = g
	} else {
		if st, err := os.Stat(data); err == nil && st.IsDir() {
			return notBinary(errors.New("a directory without raw/data.npz"))
		}
		b, err := graph.OpenBinaryRows(data)
		if err != nil {
			if errors.Is(err, graph.ErrNotBinary) {
				return notBinary(err)
			}
			return err
		}
		defer b.Close()
		r = b
	}
	if n := r.NumNodes(); int64(k) > n {
		return fmt.Errorf("partition: --parts %d is more than the %d vertices of %s: every part needs one", k, n, data)
	}
	if o.out != "" && o.symmetrize && !r.Symmetric() {
		return fmt.Errorf("partition: --symmetrize with --out and --method %s: %s is not symmetric; write a symmetrized copy first (gnnmpi convert --symmetrize) and partition that", method, data)
	}
	var engine dist.Engine
	if method == partition.MethodPTScotch {
		engine = distpart.PTScotch(env.MPI.Handle, env.MPI.Call, o.imbalance, o.check)
	}
	res, err := distpart.Partition(c, r, distpart.Options{Parts: k, Engine: engine, Seed: int64(o.seed), Symmetrize: o.symmetrize,
		Progress: env.Progress})
	if err != nil {
		return err
	}
	empty := 0
	for _, s := range res.Sizes {
		if s == 0 {
			empty++
		}
	}
	env.Printf("partitioned %s into %d parts with %s on %d ranks in %.2fs: edge cut %d of %d (%.1f%%), sizes %v\n",
		data, k, method, c.Size(), res.Seconds, res.Cut, res.NNZ, 100*float64(res.Cut)/float64(max(res.NNZ, 1)), res.Sizes)
	env.Printf("balance (max/mean) of vertices: %.3f\n", dist.Imbalance(res.Sizes))
	if empty > 0 && c.Rank() == 0 {
		env.Warn("partition: %d of %d parts are empty", empty, k)
	}
	if o.book != "" {
		b, err := distpart.Book(c, res, string(method))
		if err != nil {
			return err
		}
		err = collective.RankZero(c, func() error {
			if err := partition.Write(o.book, b); err != nil {
				return err
			}
			env.Printf("wrote %s\n", o.book)
			return nil
		})
		if err != nil {
			return err
		}
	}
	if o.out == "" {
		return nil
	}
	m, err := distpart.WriteParts(c, r, res, distpart.WriteOptions{Dir: o.out, Method: string(method), Format: o.format, Progress: env.Progress})
	if err != nil {
		return err
	}
	if m != nil {
		reportParts(env, o.out, m)
	}
	return reportMemory(env)
}

// checkIngest fails every rank, before any edge is read, when the
// ingest of the OGB layout in dir into k parts (distpart.IngestBytes)
// does not fit what a rank may allocate (memlimit.Available): each rank
// that does not fit names its need and its limit. It is collective over
// c.
func checkIngest(c collective.Comm, dir string, symmetrize bool, k int) error {
	err := func() error {
		g, err := graph.OpenOGBRows(dir)
		if err != nil {
			return err
		}
		defer g.Close()
		f, err := g.FeatureReader()
		if f != nil {
			f.Close()
		}
		if err != nil {
			return err
		}
		n, m, p := g.NumNodes(), g.NumEdges(), c.Size()
		need := distpart.IngestBytes(n, m, symmetrize, p, k, g.NumFeatures(), f != nil)
		if b := memlimit.Available(); need > b.Bytes {
			sym := ""
			if symmetrize {
				sym = ", symmetrized"
			}
			return fmt.Errorf("partition: out of memory: ingesting %s (%d vertices, %d edges%s) into %d parts on %d ranks needs about %.2f GiB a rank, but this rank may allocate only %s; run on more ranks (each holds 1/p of the edges) or raise the limit",
				dir, n, m, sym, k, p, float64(need)/(1<<30), b)
		}
		return nil
	}()
	if e := collective.Agree(c, err); err == nil {
		return e
	}
	return err
}

// reportMemory prints on rank 0 the ranks' largest peak resident set
// (VmHWM, with the pages of mapped files), peak of anonymous memory
// (memlimit.PeakAnon, sampled) and peak live heap (memlimit.PeakLiveHeap:
// what the collections found live), each with its rank: one Allgather of
// three int64s.
func reportMemory(env *Env) error {
	all, _, err := collective.AllgatherSlice(env.Comm, []int64{memlimit.PeakRSS(), memlimit.PeakAnon(), memlimit.PeakLiveHeap()})
	if err != nil {
		return err
	}
	const k = 3
	top := [k]int{}
	for r := 0; r < len(all)/k; r++ {
		for i := range k {
			if all[k*r+i] > all[k*top[i]+i] {
				top[i] = r
			}
		}
	}
	gb := func(i int) float64 { return float64(all[k*top[i]+i]) / (1 << 30) }
	env.Printf("memory: peak resident set %.2f GiB (rank %d, mapped files included); anonymous %.2f GiB (rank %d, sampled); live heap %.2f GiB (rank %d)\n",
		gb(0), top[0], gb(1), top[1], gb(2), top[2])
	return nil
}
