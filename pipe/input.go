package pipe

import (
	"gnnmpi/dense"
	"gnnmpi/sparse"
)

// sparseDensity is the fraction of nonzero features below which the input
// layer keeps the features as sparse rows and multiplies them sparsely:
// bag-of-words inputs such as coauthor-physics (35 of 8415 per row) then
// cost nnz·Hidden instead of rows·In·Hidden, which matters because with
// GCNII every stage runs the input layer.
var sparseDensity = 0.1

// density returns the fraction of nonzero entries of m.
func density(m *dense.Matrix) float64 {
	if len(m.Data) == 0 {
		return 1
	}
	nz := 0
	for _, v := range m.Data {
		if v != 0 {
			nz++
		}
	}
	return float64(nz) / float64(len(m.Data))
}

// withValues returns s itself when it has values, else a copy of the
// pattern with every value 1.
func withValues(s *sparse.Matrix[float32]) *sparse.Matrix[float32] {
	if s.Values != nil {
		return s
	}
	v := make([]float32, len(s.Indices))
	for i := range v {
		v[i] = 1
	}
	return &sparse.Matrix[float32]{NRows: s.NRows, NCols: s.NCols, Indptr: s.Indptr, Indices: s.Indices, Values: v}
}

// gatherSparse returns rows ids of s as a new matrix.
func gatherSparse(s *sparse.Matrix[float32], ids []int32) *sparse.Matrix[float32] {
	rows := make([]int64, len(ids))
	for i, id := range ids {
		rows[i] = int64(id)
	}
	return sparse.SelectRows(s, rows)
}

// dropSparse applies dropNonzeros's mask to s (which has values) in place:
// row i is vertex gids[i], and its stored entries draw in column order, as
// the dense rows' nonzeros do, so both layouts drop the same entries.
func dropSparse(s *sparse.Matrix[float32], gids []int64, rate float32, key uint64) {
	if rate == 0 {
		return
	}
	scale := 1 / (1 - rate)
	for i, gid := range gids {
		m := newMask(key, gid, rate)
		for e := s.Indptr[i]; e < s.Indptr[i+1]; e++ {
			s.Values[e] = dropped(s.Values[e], m.keep(), scale)
		}
	}
}
