package model

import (
	"gonum.org/v1/gonum/blas"

	"gnnmpi/dense"
	"gnnmpi/sparse"
)

// Layer-wise inference over a whole graph in row blocks of its own
// adjacency. When one process holds the whole graph and the whole previous
// layer (n rows, row v the input of vertex v), a layer's output rows
// lo…hi need no block of their own: the rows of the adjacency, with their
// global column ids, index the previous layer in place, and the
// destinations' own rows are rows lo…hi of it. Nothing is relabelled or
// gathered. A RowPass computes the products of Forward on the one block of
// the whole graph (destination v being source v), restricted to the rows
// asked for, in the order that block takes: the same rows bit for bit when
// the BLAS computes a row of a product apart from the others (gonum's
// does; OpenBLAS's kernels for a few rows round some products otherwise,
// so there the rows depend on the blocks at the last bits).

// RowPass is one layer of whole-graph inference in row blocks
// (Model.RowPass).
type RowPass struct {
	m        *Model
	l        int
	s        *SAGE
	x        *dense.Matrix
	mulFirst bool
	pre      []float32 // X·W_neigh of every vertex, when mulFirst
}

// RowPassOrder reports whether layer l has a row form (SAGE; the
// others take blocks) and, for a graph of n vertices and nnz stored
// entries, whether it projects every vertex first, which takes
// n × OutDim() floats beside the output (RowPass computes them).
func (m *Model) RowPassOrder(l int, n, nnz int64) (ok, mulFirst bool) {
	s, ok := m.Layers[l].(*SAGE)
	if !ok {
		return false, false
	}
	return true, s.rowOrder(n, nnz)
}

// rowOrder is the order Forward takes on the one block of a whole graph
// of n vertices and nnz entries (destinations and sources all n), unless
// order forces one.
func (s *SAGE) rowOrder(n, nnz int64) bool {
	switch s.order {
	case 1:
		return false
	case 2:
		return true
	}
	return sageOrder(int(n), int(n), nnz, s.fin, s.fout)
}

// RowPass returns layer l's pass over x (n × the layer's input width, row
// v vertex v's input) for a graph of n vertices and nnz stored entries, or
// nil when the layer has no row form (RowPassOrder). When it projects
// first it computes X·W_neigh of every vertex now. x must not change
// while the pass is in use.
func (m *Model) RowPass(l int, x *dense.Matrix, nnz int64) *RowPass {
	s, ok := m.Layers[l].(*SAGE)
	if !ok {
		return nil
	}
	if x.Cols != s.fin {
		panic("model: RowPass input width mismatch")
	}
	p := &RowPass{m: m, l: l, s: s, x: x, mulFirst: s.rowOrder(int64(x.Rows), nnz)}
	if p.mulFirst {
		p.pre = make([]float32, x.Rows*s.fout)
		dense.Gemm(s.impl, blas.NoTrans, blas.NoTrans, x.Rows, s.fout, s.fin, 1, x.Data, s.wNeigh.W, 0, p.pre)
	}
	m.ready = false
	return p
}

// Rows computes the layer's output rows lo…lo+a.NRows, with the layer's
// activation, as Model.ForwardLayer on the whole graph's block gives
// them: a holds those rows of the graph's adjacency (global column ids
// into the pass's x, each row sorted without repeats, as that block's rows
// are). The result is the layer's own, valid until its next call.
// It will panic if the rows or columns do not conform.
func (p *RowPass) Rows(a *sparse.CSR, lo int) *dense.Matrix {
	if a.NCols != int64(p.x.Rows) || lo < 0 || int64(lo)+a.NRows > int64(p.x.Rows) {
		panic("model: RowPass rows out of range")
	}
	h := p.s.forwardRows(a, p.x, lo, p.mulFirst, p.pre)
	if act := p.m.acts[p.l]; act != nil {
		h = act.Forward(h)
	}
	p.m.ready = false
	return h
}

// forwardRows is forward on the whole graph's block restricted to rows
// lo…lo+a.NRows (RowPass.Rows), with pre = X·W_neigh of every vertex when
// mulFirst.
func (s *SAGE) forwardRows(a *sparse.CSR, x *dense.Matrix, lo int, mulFirst bool, pre []float32) *dense.Matrix {
	nd, fin, fout := int(a.NRows), s.fin, s.fout
	s.blk, s.x, s.xs, s.mean = nil, nil, nil, nil
	inv := make([]float32, nd)
	for i := range nd {
		if d := a.Indptr[i+1] - a.Indptr[i]; d > 0 {
			inv[i] = 1 / float32(d)
		}
	}
	out := s.matrix(&s.out, nd, fout)
	dense.Gemm(s.impl, blas.NoTrans, blas.NoTrans, nd, fout, fin, 1, x.Data[lo*fin:(lo+nd)*fin], s.wSelf.W, 0, out.Data)
	if mulFirst {
		aggOut := s.scratch(&s.aggO, nd*fout)
		spmm(aggOut, a, nil, inv, pre, fout)
		dense.Axpy(1, aggOut, out.Data)
	} else {
		s.agg = dense.Grow(s.agg, nd*fin)
		spmm(s.agg, a, nil, inv, x.Data, fin)
		dense.Gemm(s.impl, blas.NoTrans, blas.NoTrans, nd, fout, fin, 1, s.agg, s.wNeigh.W, 1, out.Data)
	}
	s.finish(out)
	return out
}
