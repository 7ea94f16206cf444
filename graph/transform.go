package graph

import (
	"slices"

	"gnnmpi/sparse"
)

// This file holds pure transformations of adjacency matrices. None modifies
// its input; each returns a new matrix sharing no memory with it. Values
// are carried along for weighted matrices (non-nil Values) and stay nil for
// pattern matrices.

// Dedupe returns a copy of a with the columns of every row sorted ascending
// and repeated columns merged into one entry. For a weighted matrix the
// merged entry's value is the sum of the repeated entries' values, added in
// storage order.
func Dedupe(a *sparse.CSR) *sparse.CSR {
	s := sparse.SortedRows(a)
	w := int64(0)
	for i := int64(0); i < s.NRows; i++ {
		lo, hi := s.Indptr[i], s.Indptr[i+1]
		s.Indptr[i] = w
		start := w
		for k := lo; k < hi; k++ {
			j := s.Indices[k]
			if w > start && s.Indices[w-1] == j {
				if s.Values != nil {
					s.Values[w-1] += s.Values[k]
				}
				continue
			}
			s.Indices[w] = j
			if s.Values != nil {
				s.Values[w] = s.Values[k]
			}
			w++
		}
	}
	s.Indptr[s.NRows] = w
	if w != int64(len(s.Indices)) {
		s.Indices = slices.Clone(s.Indices[:w])
		if s.Values != nil {
			s.Values = slices.Clone(s.Values[:w])
		}
	}
	return s
}

// transpose returns aᵀ. Because a's rows are visited in order, every row of
// the result is sorted ascending, and it has no repeated columns if a has
// none.
func transpose(a *sparse.CSR) *sparse.CSR {
	ptr := make([]int64, a.NCols+2)
	for _, j := range a.Indices {
		ptr[j+2]++
	}
	for j := int64(2); j < a.NCols+2; j++ {
		ptr[j] += ptr[j-1]
	}
	ind := make([]int64, len(a.Indices))
	var val []float64
	if a.Values != nil {
		val = make([]float64, len(a.Values))
	}
	for i := int64(0); i < a.NRows; i++ {
		for k := a.Indptr[i]; k < a.Indptr[i+1]; k++ {
			j := a.Indices[k]
			dst := ptr[j+1]
			ptr[j+1]++
			ind[dst] = i
			if val != nil {
				val[dst] = a.Values[k]
			}
		}
	}
	return &sparse.CSR{NRows: a.NCols, NCols: a.NRows, Indptr: ptr[: a.NCols+1 : a.NCols+1], Indices: ind, Values: val}
}

// Symmetrize returns the symmetric matrix A ∪ Aᵀ: entry (i, j) is present
// when (i, j) or (j, i) is in a. Rows are sorted and hold no repeated
// columns. For a weighted matrix, repeated entries of a are first summed
// (as by Dedupe); then where both (i, j) and (j, i) are present the larger
// of the two values is used, so that a symmetric input is returned
// unchanged apart from sorting and deduplication.
//
// Symmetrize panics if a is not square.
func Symmetrize(a *sparse.CSR) *sparse.CSR {
	if a.NRows != a.NCols {
		panic("graph: Symmetrize of a non-square matrix")
	}
	d := Dedupe(a)
	t := transpose(d)
	n := d.NRows
	weighted := d.Values != nil

	// First pass: the size of every row of the union.
	ptr := make([]int64, n+1)
	for i := int64(0); i < n; i++ {
		x, y := d.Row(i), t.Row(i)
		c := int64(0)
		for len(x) > 0 && len(y) > 0 {
			switch {
			case x[0] < y[0]:
				x = x[1:]
			case x[0] > y[0]:
				y = y[1:]
			default:
				x, y = x[1:], y[1:]
			}
			c++
		}
		ptr[i+1] = ptr[i] + c + int64(len(x)+len(y))
	}

	// Second pass: merge.
	ind := make([]int64, ptr[n])
	var val []float64
	if weighted {
		val = make([]float64, ptr[n])
	}
	for i := int64(0); i < n; i++ {
		p, pe := d.Indptr[i], d.Indptr[i+1]
		q, qe := t.Indptr[i], t.Indptr[i+1]
		w := ptr[i]
		for p < pe || q < qe {
			var j int64
			var v float64
			switch {
			case q == qe || (p < pe && d.Indices[p] < t.Indices[q]):
				j = d.Indices[p]
				if weighted {
					v = d.Values[p]
				}
				p++
			case p == pe || t.Indices[q] < d.Indices[p]:
				j = t.Indices[q]
				if weighted {
					v = t.Values[q]
				}
				q++
			default:
				j = d.Indices[p]
				if weighted {
					v = max(d.Values[p], t.Values[q])
				}
				p++
				q++
			}
			ind[w] = j
			if weighted {
				val[w] = v
			}
			w++
		}
	}
	return &sparse.CSR{NRows: n, NCols: n, Indptr: ptr, Indices: ind, Values: val}
}

// DropSelfLoops returns a copy of a without its diagonal entries (i, i).
// Other entries keep their order. a need not be square.
func DropSelfLoops(a *sparse.CSR) *sparse.CSR {
	loops := int64(0)
	for i := int64(0); i < a.NRows; i++ {
		for _, j := range a.Row(i) {
			if j == i {
				loops++
			}
		}
	}
	ptr := make([]int64, a.NRows+1)
	ind := make([]int64, 0, a.NNZ()-loops)
	var val []float64
	if a.Values != nil {
		val = make([]float64, 0, a.NNZ()-loops)
	}
	for i := int64(0); i < a.NRows; i++ {
		for k := a.Indptr[i]; k < a.Indptr[i+1]; k++ {
			if a.Indices[k] == i {
				continue
			}
			ind = append(ind, a.Indices[k])
			if val != nil {
				val = append(val, a.Values[k])
			}
		}
		ptr[i+1] = int64(len(ind))
	}
	return &sparse.CSR{NRows: a.NRows, NCols: a.NCols, Indptr: ptr, Indices: ind, Values: val}
}

// AddSelfLoops returns a copy of a with exactly one diagonal entry (i, i)
// in every row, as Â = A + I in GCN. A row without one gets it, with value
// 1 in a weighted matrix; a row with one or more keeps the first, with its
// value (as PyTorch Geometric's add_remaining_self_loops), and loses the
// others. The diagonal entry is placed just before the first larger column,
// so sorted rows stay sorted; other entries keep their order.
//
// AddSelfLoops panics if a is not square.
func AddSelfLoops(a *sparse.CSR) *sparse.CSR {
	if a.NRows != a.NCols {
		panic("graph: AddSelfLoops of a non-square matrix")
	}
	n := a.NRows
	ptr := make([]int64, n+1)
	for i := int64(0); i < n; i++ {
		c := int64(1)
		for _, j := range a.Row(i) {
			if j != i {
				c++
			}
		}
		ptr[i+1] = ptr[i] + c
	}
	ind := make([]int64, ptr[n])
	var val []float64
	if a.Values != nil {
		val = make([]float64, ptr[n])
	}
	for i := int64(0); i < n; i++ {
		lo, hi := a.Indptr[i], a.Indptr[i+1]
		diag := 1.0
		for k := lo; k < hi; k++ {
			if a.Indices[k] == i {
				if a.Values != nil {
					diag = a.Values[k]
				}
				break
			}
		}
		w := ptr[i]
		placed := false
		for k := lo; k < hi; k++ {
			j := a.Indices[k]
			if j == i {
				continue
			}
			if !placed && j > i {
				ind[w] = i
				if val != nil {
					val[w] = diag
				}
				w++
				placed = true
			}
			ind[w] = j
			if val != nil {
				val[w] = a.Values[k]
			}
			w++
		}
		if !placed {
			ind[w] = i
			if val != nil {
				val[w] = diag
			}
		}
	}
	return &sparse.CSR{NRows: n, NCols: n, Indptr: ptr, Indices: ind, Values: val}
}
