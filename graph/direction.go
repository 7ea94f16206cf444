package graph

import (
	"slices"

	"gnnmpi/sparse"
)

// This file holds what concerns the direction of edges: how many edges of a
// graph have their reverse, and the symmetrized copy of a dataset.

// reciprocityChunk is the number of rows one task of Reciprocity checks.
const reciprocityChunk = 1 << 14

// Reciprocity returns how many entries (i, j) of the square matrix a have
// their reverse (j, i) in a, and how many entries a has. A self-loop (i, i)
// is its own reverse; repeated entries count once each. For a graph stored
// with both directions of every edge reciprocated equals edges; for an edge
// list that stores each undirected edge once it is about 0 (only the
// self-loops).
//
// Rows sorted ascending (as Dedupe, Symmetrize and the binary format leave
// them, and as OGB edge files usually list them) are searched in place;
// otherwise a sorted copy of a is made first. The rows are checked in
// parallel. Reciprocity panics if a is not square.
func Reciprocity(a *sparse.CSR) (reciprocated, edges int64) {
	if a.NRows != a.NCols {
		panic("graph: Reciprocity of a non-square matrix")
	}
	s := a
	if !a.RowsSorted() {
		s = sparse.SortedRows(a)
	}
	tasks := int((s.NRows + reciprocityChunk - 1) / reciprocityChunk)
	counts := make([]int64, tasks)
	genParallel(tasks, func(t int) {
		lo := int64(t) * reciprocityChunk
		hi := min(lo+reciprocityChunk, s.NRows)
		c := int64(0)
		for i := lo; i < hi; i++ {
			for _, j := range s.Row(i) {
				if j == i {
					c++
				} else if _, ok := slices.BinarySearch(s.Row(j), i); ok {
					c++
				}
			}
		}
		counts[t] = c
	})
	for _, c := range counts {
		reciprocated += c
	}
	return reciprocated, a.NNZ()
}

// Symmetrized returns d with every edge's reverse added: a shallow copy of
// d whose Adj is Symmetrize(d.Adj) and whose Symmetric is true, sharing
// everything else with d. When d.Symmetric is already set it returns d
// itself, so a file recorded as symmetric is neither copied nor checked.
//
// Symmetrized panics if d holds only some rows (Rows not nil) or has no
// adjacency: the reverse of an edge may live in a row it does not hold.
func (d *Dataset) Symmetrized() *Dataset {
	if d.Rows != nil || d.Adj == nil {
		panic("graph: Symmetrized of a partial dataset or one without adjacency")
	}
	if d.Symmetric {
		return d
	}
	s := *d
	s.Adj = Symmetrize(d.Adj)
	s.Symmetric = true
	return &s
}
