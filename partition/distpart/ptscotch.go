package distpart

import (
	"errors"
	"fmt"

	"gnnmpi/collective"
	"gnnmpi/partition/dist"
	"gnnmpi/partition/ptscotch"
)

// PTScotch returns a dist.Engine partitioning with PT-Scotch over the MPI
// communicator beneath c: handle returns the Fortran handle of c's MPI
// communicator (false when c has none) and call runs f where MPI calls may
// be made (collective/mpi's FortranHandle and Call, which package main
// hands down). imbalance is the allowed part size over the mean, minus 1
// (0: PT-Scotch's default, 3%); check verifies the graph with
// SCOTCH_dgraphCheck first.
//
// The engine is collective over c; it fails every rank alike, before
// PT-Scotch communicates, when c is not an MPI communicator or the graph
// exceeds this build's SCOTCH_Num.
func PTScotch(handle func(c collective.Comm) (int, bool), call func(f func()), imbalance float64, check bool) dist.Engine {
	return func(c collective.Comm, g *dist.Graph, parts int, seed int64) ([]int32, error) {
		h, ok := handle(c)
		if !ok {
			return nil, errors.New("ptscotch: the communicator is not an MPI communicator")
		}
		if g.N > ptscotch.MaxNum || g.NNZ > ptscotch.MaxNum || int64(parts) > ptscotch.MaxNum {
			return nil, fmt.Errorf("ptscotch: %d vertices and %d stored edges exceed this PT-Scotch build's SCOTCH_Num (max %d); link the 64-bit variant (partition/ptscotch doc)",
				g.N, g.NNZ, ptscotch.MaxNum)
		}
		var part []int32
		var err error
		call(func() {
			part, err = ptscotch.Part(h, g.Adj.Indptr, g.Adj.Indices, parts, ptscotch.Options{Imbalance: imbalance, Seed: seed}, check)
		})
		return part, err
	}
}
