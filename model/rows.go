package model

import (
	"slices"

	"gonum.org/v1/gonum/blas"

	"gnnmpi/dense"
	"gnnmpi/sparse"
)

// Layer-wise inference in row blocks of a graph's own adjacency. When a
// process holds the whole previous layer of the vertices it computes (row
// v the input of its vertex v), and of the other vertices their rows name
// (a halo, after them), a layer's output rows lo…hi need no block of
// their own: the adjacency rows, with their columns numbered as those
// sources, index the previous layer in place, and the destinations' own
// rows are rows lo…hi of it. Nothing is relabelled or gathered. On a whole
// graph (no halo) a RowPass computes the products of Forward on the one
// block of the graph (destination v being source v), restricted to the
// rows asked for, in the order that block takes: the same rows bit for bit
// when the BLAS computes a row of a product apart from the others (gonum's
// does; OpenBLAS's kernels for a few rows round some products otherwise,
// so there the rows depend on the blocks at the last bits).

// RowPass is one layer of inference in row blocks (Model.RowPass).
type RowPass struct {
	m        *Model
	l        int
	s        *SAGE
	x, halo  *dense.Matrix // the sources: x's rows, then halo's (nil: none)
	mulFirst bool
	pre      []float32 // X·W_neigh of every source (x's rows, then halo's), when mulFirst
}

// rowOrder is the order Forward takes on one block of nd destinations, ns
// sources and nnz entries (a whole graph: nd = ns, its vertices), unless
// order forces one.
func (s *SAGE) rowOrder(nd, ns, nnz int64) bool {
	switch s.order {
	case 1:
		return false
	case 2:
		return true
	}
	return sageOrder(int(nd), int(ns), nnz, s.fin, s.fout)
}

// RowPass returns layer l's pass over the sources x (the vertices whose
// rows the pass computes, in order, each row the layer's input width) and
// halo (other sources, after them; nil for none), for rows of nnz stored
// entries in all, or nil when the layer has no row form (SAGE has one;
// the others take blocks). It takes the order Forward would on one block
// of those rows (on a whole graph, the graph's one block), except that it
// projects first only when the projections of every source, ns × OutDim()
// floats, are at most maxPre; it computes them now. x and halo must not
// change while the pass is in use.
func (m *Model) RowPass(l int, x, halo *dense.Matrix, nnz, maxPre int64) *RowPass {
	s, ok := m.Layers[l].(*SAGE)
	if !ok {
		return nil
	}
	nh := 0
	if halo != nil {
		nh = halo.Rows
		if halo.Cols != s.fin {
			panic("model: RowPass halo width mismatch")
		}
	}
	if x.Cols != s.fin {
		panic("model: RowPass input width mismatch")
	}
	ns := int64(x.Rows + nh)
	p := &RowPass{m: m, l: l, s: s, x: x, halo: halo, mulFirst: s.rowOrder(int64(x.Rows), ns, nnz) && ns*int64(s.fout) <= maxPre}
	if p.mulFirst {
		p.pre = make([]float32, (x.Rows+nh)*s.fout)
		dense.Gemm(s.impl, blas.NoTrans, blas.NoTrans, x.Rows, s.fout, s.fin, 1, x.Data, s.wNeigh.W, 0, p.pre)
		if nh > 0 {
			dense.Gemm(s.impl, blas.NoTrans, blas.NoTrans, nh, s.fout, s.fin, 1, halo.Data, s.wNeigh.W, 0, p.pre[x.Rows*s.fout:])
		}
	}
	m.ready = false
	return p
}

// Rows computes the layer's output rows lo…lo+a.NRows of the pass's
// vertices, with the layer's activation: a holds those vertices' rows,
// column j < x.Rows naming vertex j and x.Rows + k halo row k, each row
// sorted without repeats. On a whole graph (no halo) they are the rows
// Model.ForwardLayer gives on the graph's one block. The result is the
// layer's own, valid until its next call.
// It will panic if the rows or columns do not conform.
func (p *RowPass) Rows(a *sparse.CSR, lo int) *dense.Matrix {
	ns := p.x.Rows
	if p.halo != nil {
		ns += p.halo.Rows
	}
	if a.NCols != int64(ns) || lo < 0 || int64(lo)+a.NRows > int64(p.x.Rows) {
		panic("model: RowPass rows out of range")
	}
	h := p.s.forwardRows(a, p.x, p.halo, lo, p.mulFirst, p.pre)
	if act := p.m.acts[p.l]; act != nil {
		h = act.Forward(h)
	}
	p.m.ready = false
	return h
}

// forwardRows is forward on one block restricted to rows lo…lo+a.NRows
// (RowPass.Rows): the destinations are x's rows, the sources x's and then
// halo's; pre = X·W_neigh of every source when mulFirst.
func (s *SAGE) forwardRows(a *sparse.CSR, x, halo *dense.Matrix, lo int, mulFirst bool, pre []float32) *dense.Matrix {
	nd, fin := int(a.NRows), s.fin
	s.blk, s.x, s.xs, s.mean = nil, nil, nil, nil
	inv := meanScale(a)
	mean := func(dst, src []float32, f int) { spmm(dst, a, nil, inv, src, f) }
	if halo != nil { // the sources in two matrices: the inputs, or their projections
		xa, xb := x.Data, halo.Data
		if mulFirst {
			xa, xb = pre[:x.Rows*s.fout], pre[x.Rows*s.fout:]
		}
		mean = func(dst, _ []float32, f int) { spmmSplit(dst, a, inv, xa, xb, x.Rows, f) }
	}
	return s.combine(nd, x.Data[lo*fin:(lo+nd)*fin], mulFirst, pre, x.Data, mean)
}

// spmmSplit is spmm with row i scaled by rowScale[i] and no weights over
// sources in two matrices: column j < na is row j of xa, na + k row k of
// xb (both f wide). Each row of a must be sorted, so that its columns in
// xa come first: the terms are added in the row's order, as spmm adds
// them over one matrix.
func spmmSplit(dst []float32, a *sparse.CSR, rowScale []float32, xa, xb []float32, na, f int) {
	nr := int(a.NRows)
	dst = dst[:nr*f]
	parallel(nr, 1, (a.Indptr[nr]-a.Indptr[0])*int64(f), func(lo, hi int) {
		var alpha []float32
		var idx []int64
		for i := lo; i < hi; i++ {
			out := dst[i*f : (i+1)*f]
			e0, e1 := a.Indptr[i], a.Indptr[i+1]
			row := a.Indices[e0:e1]
			k, _ := slices.BinarySearch(row, int64(na))
			alpha = alpha[:0]
			for range row {
				alpha = append(alpha, rowScale[i])
			}
			gatherRowTo(out, alpha[:k], row[:k], xa, f)
			idx = idx[:0]
			for _, j := range row[k:] {
				idx = append(idx, j-int64(na))
			}
			if len(idx) > 0 {
				gatherRow(out, alpha[k:], idx, xb, f)
			}
		}
	})
}
