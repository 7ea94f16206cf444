package pipe

import (
	"gnnmpi/dense"
	"gnnmpi/model"
)

// sparseDensity is the fraction of nonzero features below which the input
// layer keeps the features as sparse rows and multiplies them sparsely:
// bag-of-words inputs such as coauthor-physics (35 of 8415 per row) then
// cost nnz·Hidden instead of rows·In·Hidden, which matters because with
// GCNII every stage runs the input layer.
var sparseDensity = 0.1

// sparseRows is a CSR matrix of feature rows with float32 values.
type sparseRows struct {
	ptr  []int64
	col  []int32
	val  []float32
	cols int
}

func (s *sparseRows) rows() int { return len(s.ptr) - 1 }

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

// toSparse returns the nonzeros of m.
func toSparse(m *dense.Matrix) *sparseRows {
	s := &sparseRows{ptr: make([]int64, m.Rows+1), cols: m.Cols}
	for i := range m.Rows {
		for j, v := range m.Row(i) {
			if v != 0 {
				s.col = append(s.col, int32(j))
				s.val = append(s.val, v)
			}
		}
		s.ptr[i+1] = int64(len(s.col))
	}
	return s
}

// normalizeRows divides every row by its sum as dense.RowNormalized does
// (the same float64 sum in column order, zeros adding nothing), so the
// result is bitwise that of normalising the dense rows first.
func (s *sparseRows) normalizeRows() {
	for i := range s.rows() {
		lo, hi := s.ptr[i], s.ptr[i+1]
		var sum float64
		for _, v := range s.val[lo:hi] {
			sum += float64(v)
		}
		inv := dense.RowScale(sum)
		for e := lo; e < hi; e++ {
			s.val[e] = float32(float64(s.val[e]) * inv)
		}
	}
}

// gatherSparse returns rows ids of s as a new matrix.
func gatherSparse(s *sparseRows, ids []int32) *sparseRows {
	out := &sparseRows{ptr: make([]int64, len(ids)+1), cols: s.cols}
	for i, id := range ids {
		lo, hi := s.ptr[id], s.ptr[id+1]
		out.col = append(out.col, s.col[lo:hi]...)
		out.val = append(out.val, s.val[lo:hi]...)
		out.ptr[i+1] = int64(len(out.col))
	}
	return out
}

// dropSparse applies dropNonzeros's mask to s in place: row i is vertex
// gids[i], and its stored entries draw in column order, as the dense rows'
// nonzeros do, so both layouts drop the same entries.
func dropSparse(s *sparseRows, gids []int64, rate float32, key uint64) {
	if rate == 0 {
		return
	}
	scale := 1 / (1 - rate)
	for i, gid := range gids {
		m := newMask(key, gid, rate)
		for e := s.ptr[i]; e < s.ptr[i+1]; e++ {
			s.val[e] = dropped(s.val[e], m.keep(), scale)
		}
	}
}

// sparseLinear computes x·W + b for the Linear lin (its Params are W
// In×Hidden and b), x sparse.
func sparseLinear(x *sparseRows, lin *model.Linear) *dense.Matrix {
	ps := lin.Params()
	w, b := ps[0], ps[1]
	f := w.Cols
	out := dense.New(x.rows(), f)
	for i := range x.rows() {
		row := out.Data[i*f : (i+1)*f]
		copy(row, b.W)
		for e := x.ptr[i]; e < x.ptr[i+1]; e++ {
			a := x.val[e]
			if a == 0 {
				continue
			}
			wr := w.W[int(x.col[e])*f : (int(x.col[e])+1)*f]
			for j, v := range wr {
				row[j] += a * v
			}
		}
	}
	return out
}

// sparseLinearBackward adds dW = xᵀ·dy and db = Σ dy into lin's gradients.
func sparseLinearBackward(x *sparseRows, lin *model.Linear, dy *dense.Matrix) {
	ps := lin.Params()
	w, b := ps[0], ps[1]
	f := w.Cols
	for i := range x.rows() {
		d := dy.Data[i*f : (i+1)*f]
		for j, v := range d {
			b.G[j] += v
		}
		for e := x.ptr[i]; e < x.ptr[i+1]; e++ {
			a := x.val[e]
			if a == 0 {
				continue
			}
			g := w.G[int(x.col[e])*f : (int(x.col[e])+1)*f]
			for j, v := range d {
				g[j] += a * v
			}
		}
	}
}
