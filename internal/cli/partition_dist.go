package cli

import (
	"errors"
	"fmt"
	"os"
	"time"

	"gnnmpi/collective"
	"gnnmpi/graph"
	"gnnmpi/internal/ptscotch"
	"gnnmpi/partition"
	"gnnmpi/partition/dist"
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
			return nil, fmt.Errorf("ptscotch: %d vertices and %d stored edges exceed this PT-Scotch build's SCOTCH_Num (max %d); link the 64-bit variant (internal/ptscotch doc)",
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

// runDistPartition partitions the binary dataset data into k parts with a
// distributed partitioner, every rank reading and partitioning its block
// of rows, and writes the book on rank 0. method is "ptscotch".
func runDistPartition(env *Env, data string, k int, method string, seed uint64, symmetrize bool, imbalance float64, check bool, out string) error {
	c := env.Comm
	if k < 1 {
		return fmt.Errorf("partition: --parts %d < 1", k)
	}
	if imbalance < 0 || imbalance >= 1 {
		return fmt.Errorf("partition: --imbalance %g outside [0,1)", imbalance)
	}
	if env.MPI == nil {
		return fmt.Errorf("partition: --method %s needs the MPI backend: run under mpirun (in-process ranks cannot reach PT-Scotch)", method)
	}
	if !ptscotch.Available {
		return fmt.Errorf("partition: %w", ptscotch.ErrNoMPI)
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
	n := r.NumNodes()
	lo, hi := dist.BlockRange(n, c.Size(), c.Rank())
	block, err := r.Rows(lo, hi)
	if err != nil {
		return err
	}
	if symmetrize && !r.Symmetric() {
		if block, err = dist.Symmetrize(c, n, lo, block); err != nil {
			return err
		}
	}
	nnz, err := collective.AllreduceScalar(c, block.NNZ(), collective.Sum)
	if err != nil {
		return err
	}
	env.Progress("partition: rank 0 holds rows [%d,%d) of %d (%d of %d edges)", lo, hi, n, block.NNZ(), nnz)

	t0 := time.Now()
	part, err := dist.Partition(c, n, lo, block, k, int64(seed), ptscotchEngine(env.MPI, imbalance, check))
	if err != nil {
		return fmt.Errorf("partition: %s: %w", data, err)
	}
	took, err := collective.AllreduceScalar(c, time.Since(t0).Seconds(), collective.Max)
	if err != nil {
		return err
	}
	cut, err := dist.EdgeCut(c, n, lo, block, part)
	if err != nil {
		return err
	}
	sizes, err := dist.Sizes(c, part, k)
	if err != nil {
		return err
	}
	all, err := dist.GatherParts(c, part, 0)
	if err != nil {
		return err
	}
	return RankZero(c, func() error {
		b, err := partition.New(all, k, method)
		if err != nil {
			return err
		}
		if err := partition.Write(out, b); err != nil {
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
		if empty > 0 {
			env.Warn("partition: %d of %d parts are empty", empty, k)
		}
		env.Printf("wrote %s\n", out)
		return nil
	})
}
