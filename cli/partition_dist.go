package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gnnmpi/collective"
	"gnnmpi/graph"
	"gnnmpi/partition"
	"gnnmpi/partition/dist"
	"gnnmpi/partition/ptscotch"
	"gnnmpi/sparse"
)

// MPIAccess reaches the MPI communicator beneath a collective.Comm, for
// libraries that make MPI calls themselves; main fills it from
// collective/mpi (FortranHandle and Call), so that this package picks no
// backend.
type MPIAccess struct {
	// Handle returns the Fortran handle of c's MPI communicator, or false
	// when c has none.
	Handle func(c collective.Comm) (int, bool)
	// Call runs f where MPI calls may be made.
	Call func(f func())
}

// ptscotchEngine returns a dist.Engine partitioning with PT-Scotch over
// the MPI communicator beneath c, allowing imbalance (0: PT-Scotch's
// package default, 3%); check verifies the graph with SCOTCH_dgraphCheck
// first.
func ptscotchEngine(m *MPIAccess, imbalance float64, check bool) dist.Engine {
	return func(c collective.Comm, g *dist.Graph, parts int, seed int64) ([]int32, error) {
		// These checks see the same values on every rank, so they fail
		// every rank alike before PT-Scotch communicates.
		h, ok := m.Handle(c)
		if !ok {
			return nil, errors.New("ptscotch: the communicator is not an MPI communicator")
		}
		if g.N > ptscotch.MaxNum || g.NNZ > ptscotch.MaxNum || int64(parts) > ptscotch.MaxNum {
			return nil, fmt.Errorf("ptscotch: %d vertices and %d stored edges exceed this PT-Scotch build's SCOTCH_Num (max %d); link the 64-bit variant (partition/ptscotch doc)",
				g.N, g.NNZ, ptscotch.MaxNum)
		}
		var part []int32
		var err error
		m.Call(func() {
			part, err = ptscotch.Part(h, g.Adj.Indptr, g.Adj.Indices, parts, ptscotch.Options{Imbalance: imbalance, Seed: seed}, check)
		})
		return part, err
	}
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

// runDistPartition partitions the binary dataset o.data into o.parts parts
// with a distributed method, every rank reading its block of rows: with
// PT-Scotch ("ptscotch") or into consecutive blocks ("block", no engine).
// It writes the book on rank 0 (o.book) and the partitioned dataset
// (o.out) from the ranks' blocks (writeDistParts), so that no rank holds
// the whole graph.
func runDistPartition(env *Env, o distOptions) error {
	c := env.Comm
	k, method, data := o.parts, o.method, o.data
	if k < 1 {
		return fmt.Errorf("partition: --parts %d < 1", k)
	}
	if o.imbalance < 0 || o.imbalance >= 1 {
		return fmt.Errorf("partition: --imbalance %g outside [0,1)", o.imbalance)
	}
	if method == "ptscotch" {
		if env.MPI == nil {
			return fmt.Errorf("partition: --method %s needs the MPI backend: run under mpirun (in-process ranks cannot reach PT-Scotch)", method)
		}
		if !ptscotch.Available {
			return fmt.Errorf("partition: %w", ptscotch.Unavailable)
		}
	}
	notBinary := func(err error) error {
		return fmt.Errorf("partition: --method %s reads row blocks of a binary dataset; convert %s first (gnnmpi convert): %w", method, data, err)
	}
	if st, err := os.Stat(data); err == nil && st.IsDir() {
		return notBinary(errors.New("a directory"))
	}
	r, err := graph.OpenBinaryRows(data)
	if err != nil {
		if errors.Is(err, graph.ErrNotBinary) {
			return notBinary(err)
		}
		return err
	}
	defer r.Close()
	if o.out != "" && o.symmetrize && !r.Symmetric() {
		return fmt.Errorf("partition: --symmetrize with --out and --method %s: %s is not symmetric; write a symmetrized copy first (gnnmpi convert --symmetrize) and partition that", method, data)
	}
	n := r.NumNodes()
	lo, hi := dist.BlockRange(n, c.Size(), c.Rank())
	block, err := r.Rows(lo, hi)
	if err = collective.Agree(c, err); err != nil {
		return err
	}
	cutBlock := block
	if o.symmetrize && !r.Symmetric() {
		if cutBlock, err = dist.Symmetrize(c, n, lo, block); err != nil {
			return err
		}
	}
	nnz, err := collective.AllreduceScalar(c, cutBlock.NNZ(), collective.Sum)
	if err != nil {
		return err
	}
	env.Progress("partition: rank 0 holds rows [%d,%d) of %d (%d of %d edges)", lo, hi, n, cutBlock.NNZ(), nnz)

	t0 := time.Now()
	var part []int32
	switch method {
	case "ptscotch":
		if part, err = dist.Partition(c, n, lo, cutBlock, k, int64(o.seed), ptscotchEngine(env.MPI, o.imbalance, o.check)); err != nil {
			return fmt.Errorf("partition: %s: %w", data, err)
		}
	case "block":
		part = blockParts(n, k, lo, hi)
	default:
		panic("cli: internal error: no distributed method " + method)
	}
	took, err := collective.AllreduceScalar(c, time.Since(t0).Seconds(), collective.Max)
	if err != nil {
		return err
	}
	cut, err := dist.EdgeCut(c, n, lo, cutBlock, part)
	if err != nil {
		return err
	}
	sizes, err := dist.Sizes(c, part, k)
	if err != nil {
		return err
	}
	empty := 0
	for _, s := range sizes {
		if s == 0 {
			empty++
		}
	}
	env.Printf("partitioned %s into %d parts with %s on %d ranks in %.2fs: edge cut %d of %d (%.1f%%), sizes %v\n",
		data, k, method, c.Size(), took, cut, nnz, 100*float64(cut)/float64(max(nnz, 1)), sizes)
	env.Printf("balance (max/mean) of vertices: %.3f\n", dist.Imbalance(sizes))
	if empty > 0 && c.Rank() == 0 {
		env.Warn("partition: %d of %d parts are empty", empty, k)
	}
	if o.book != "" {
		all, err := dist.GatherParts(c, part, 0)
		if err != nil {
			return err
		}
		err = RankZero(c, func() error {
			b, err := partition.New(all, k, method)
			if err != nil {
				return err
			}
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
	if cutBlock != block {
		panic("cli: internal error: writing a symmetrized block")
	}
	return writeDistParts(env, r, o, lo, block, part, cut)
}

// blockParts returns the part of each row [lo, hi) of the block book of n
// vertices and k parts (partition.Block), without the book's O(n) array.
func blockParts(n int64, k int, lo, hi int64) []int32 {
	part := make([]int32, hi-lo)
	q := 0
	for v := lo; v < hi; v++ {
		for _, qhi := dist.BlockRange(n, k, q); v >= qhi; _, qhi = dist.BlockRange(n, k, q) {
			q++
		}
		part[v-lo] = int32(q)
	}
	return part
}

// writeDistParts writes the partitioned dataset o.out from the ranks' row
// blocks of the binary dataset r: every rank reads its features, labels
// and split members, dist.Redistribute relabels them and sends each part
// to its writer (rank q mod p writes part q), the writers write their
// part files (graph.WritePart), and rank 0 writes the manifest last. An
// error on any rank fails every rank, and leaves no manifest. adj is this
// rank's rows [lo, …) and part their parts; cut is the edge cut.
func writeDistParts(env *Env, r *graph.BinaryRows, o distOptions, lo int64, adj *sparse.CSR, part []int32, cut int64) error {
	c := env.Comm
	n, hi := r.NumNodes(), lo+adj.NRows
	format, err := graph.ParseFeatureFormat(string(o.format))
	if err != nil {
		return fmt.Errorf("partition: %w", err)
	}
	// Rank 0 makes the directory and removes an old manifest first, so
	// that a failed run leaves none.
	err = RankZero(c, func() error {
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return fmt.Errorf("partition: cannot make %s: %w", o.out, err)
		}
		if err := os.Remove(filepath.Join(o.out, graph.PartManifestName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("partition: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	b := &dist.Block{Lo: lo, Adj: adj, Splits: map[string]dist.Members{}}
	var fb *graph.FeatureBlock
	err = func() error {
		var err error
		if b.Labels, err = r.Labels(lo, hi); err != nil {
			return err
		}
		splits, err := r.SplitMembers(lo, hi)
		if err != nil {
			return err
		}
		for name, s := range splits {
			b.Splits[name] = dist.Members{s.Train, s.Valid, s.Test}
		}
		fb, err = r.Features(lo, hi)
		return err
	}()
	if err = collective.Agree(c, err); err != nil {
		return err
	}
	if fb != nil {
		// The format of the whole matrix, decided alike on every rank.
		nnz, ones := fb.Stats()
		allOnes := int64(0)
		if !ones {
			allOnes = 1
		}
		if err := collective.AllreduceVars(c, collective.Sum, &nnz, &allOnes); err != nil {
			return err
		}
		b.Feat, b.FeatCSR, err = fb.Rows(format, n, nnz, allOnes == 0)
		if err = collective.Agree(c, err); err != nil {
			return err
		}
		fb = nil
	}
	// As Dataset.FeatureFormat: every rank decided alike.
	var featFormat graph.FeatureFormat
	switch {
	case b.FeatCSR != nil:
		featFormat = graph.FeatureCSR
	case b.Feat != nil:
		featFormat = graph.FeatureDense
	}
	symmetric := r.Symmetric()
	if !symmetric {
		if symmetric, err = dist.Reciprocal(c, n, lo, adj); err != nil {
			return err
		}
	}
	offsets, mine, err := dist.Redistribute(c, n, b, part, o.parts)
	if err != nil {
		return err
	}
	b = nil

	// The writers write their parts; entries[q] describes part q.
	numClasses := r.NumClasses()
	var files []graph.PartFile
	var fnnz int64
	fones := true
	err = func() error {
		for _, pr := range mine {
			p := &graph.Part{Name: r.Name(), NumNodes: n, Lo: pr.Lo, Hi: pr.Hi, Adj: pr.Adj, Feat: pr.Feat, FeatCSR: pr.FeatCSR,
				Labels: pr.Labels, NumClasses: numClasses, Splits: map[string]graph.Split{}, OrigIDs: pr.OrigIDs,
				Symmetric: symmetric, Weighted: r.Weighted()}
			for name, m := range pr.Splits {
				p.Splits[name] = graph.Split{Train: m[0], Valid: m[1], Test: m[2]}
			}
			z, ones := p.FeatureStats()
			fnnz, fones = fnnz+z, fones && ones
			f, err := graph.WritePart(filepath.Join(o.out, graph.PartFileName(pr.Part)), p, pr.Part, o.parts)
			if err != nil {
				return err
			}
			files = append(files, f)
			if c.Rank() == 0 {
				env.Progress("wrote part %d of %d: %s, vertices [%d,%d), %d edges, %d bytes", pr.Part+1, o.parts, f.Name, p.Lo, p.Hi, f.Edges, f.Bytes)
			}
		}
		return nil
	}()
	if err = collective.Agree(c, err); err != nil {
		return err
	}
	mine = nil
	notOnes := int64(0)
	if !fones {
		notOnes = 1
	}
	if err := collective.AllreduceVars(c, collective.Sum, &fnnz, &notOnes); err != nil {
		return err
	}
	all, err := gatherPartFiles(c, files, o.parts)
	if err != nil {
		return err
	}
	nnz, err := collective.AllreduceScalar(c, adj.NNZ(), collective.Sum)
	if err != nil {
		return err
	}
	return RankZero(c, func() error {
		m := &graph.PartManifest{Format: graph.PartFormat, Version: graph.PartVersion, Name: r.Name(), NumNodes: n, NumEdges: nnz,
			NumFeatures: r.NumFeatures(), HasLabels: r.HasLabels(), NumClasses: numClasses, Symmetric: symmetric,
			Weighted: r.Weighted(), Method: o.method, Parts: o.parts, Offsets: offsets, EdgeCut: cut,
			Splits: []graph.SplitSizes{}, Files: all, Dir: o.out}
		if featFormat != "" {
			m.FeatureFormat, m.FeatureNNZ, m.FeaturePattern = featFormat, fnnz, notOnes == 0
		}
		sizes := r.SplitSizes()
		slices.SortFunc(sizes, func(a, b graph.SplitSizes) int { return strings.Compare(a.Name, b.Name) })
		m.Splits = append(m.Splits, sizes...)
		if err := graph.WritePartManifest(o.out, m); err != nil {
			return err
		}
		reportParts(env, o.out, m)
		return nil
	})
}

// gatherPartFiles returns the manifest entries of the parts parts, in part
// order, from the entries files of the parts each rank wrote (rank r the
// parts r, r+p, …, ascending). It is collective over c.
func gatherPartFiles(c collective.Comm, files []graph.PartFile, parts int) ([]graph.PartFile, error) {
	const fields = 3
	mine := make([]int64, 0, fields*len(files))
	for _, f := range files {
		mine = append(mine, f.Bytes, int64(f.Checksum), f.Edges)
	}
	all, counts, err := collective.AllgatherSlice(c, mine)
	if err != nil {
		return nil, err
	}
	p := c.Size()
	out := make([]graph.PartFile, parts)
	at := 0
	for r, k := range counts {
		for i := range k / fields {
			q := r + i*p
			if q >= parts {
				return nil, fmt.Errorf("partition: rank %d wrote %d parts of %d", r, k/fields, parts)
			}
			x := all[at+fields*i:]
			out[q] = graph.PartFile{Name: graph.PartFileName(q), Bytes: x[0], Checksum: uint32(x[1]), Edges: x[2]}
		}
		at += k
	}
	return out, nil
}
