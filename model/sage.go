package model

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"

	"gnnmpi/dense"
	"gnnmpi/sparse"
)

// normEps is the smallest row norm Normalize divides by, as in PyTorch's
// F.normalize.
const normEps = 1e-12

// SAGE is a GraphSAGE layer with the mean aggregator (Hamilton et al. 2017;
// PyG SAGEConv with root weight). For destination i of a block,
//
//	h_i = x_i·W_self + (1/|N(i)|)·Σ_{j∈N(i)} x_j·W_neigh + b,
//
// where N(i) are the stored entries of row i (a repeated column counts
// twice; an empty row gives a zero neighbour term) and x_i is row i of x. The
// block's Values are ignored: the aggregation is an unweighted mean. With
// Normalize, the output is h_i/max(‖h_i‖₂, 1e-12), otherwise h_i. W_self and
// W_neigh are fin×fout, b is 1×fout.
//
// Forward aggregates first (an SpMM over fin columns, then two GEMMs with
// NDst rows), which is the cheaper order on sampled blocks, where NSrc is
// many times NDst.
type SAGE struct {
	// Normalize enables the L2 normalisation of output rows.
	Normalize bool

	wSelf, wNeigh, b *Param
	fin, fout        int
	impl             blas.Float32Level3

	a      *sparse.CSR
	x      *dense.Matrix
	invDeg []float32 // NDst: 1/|N(i)|, 0 for an empty row
	agg    []float32 // NDst×fin: neighbour means
	h      []float32 // NDst×fout: output before normalisation (Normalize only)
	norm   []float64 // NDst: ‖h_i‖ (Normalize only)
	dh     []float32 // NDst×fout scratch
	dagg   []float32 // NDst×fin scratch
	at     transposed
}

var _ Layer = (*SAGE)(nil)

// NewSAGE returns a SAGE layer from fin to fout features with Glorot
// uniform weights drawn from rng (W_self, then W_neigh) and a zero bias.
// Dense products use impl, or gonum's pure Go BLAS if impl is nil.
// It will panic if fin or fout is not positive.
func NewSAGE(fin, fout int, normalize bool, rng *rand.Rand, impl blas.Float32Level3) *SAGE {
	if fin <= 0 || fout <= 0 {
		panic("model: non-positive layer width")
	}
	s := &SAGE{
		Normalize: normalize,
		wSelf:     newParam("w_self", fin, fout),
		wNeigh:    newParam("w_neigh", fin, fout),
		b:         newParam("b", 1, fout),
		fin:       fin,
		fout:      fout,
		impl:      blasOrDefault(impl),
	}
	glorot(s.wSelf, fin, fout, rng)
	glorot(s.wNeigh, fin, fout, rng)
	return s
}

// Params returns W_self, W_neigh and b.
func (s *SAGE) Params() []*Param { return []*Param{s.wSelf, s.wNeigh, s.b} }

// OutDim returns fout.
func (s *SAGE) OutDim() int { return s.fout }

// Forward computes the layer on block a (NDst×NSrc) and x (NSrc×fin) and
// returns a new NDst×fout matrix. train and rng are unused.
// It will panic if the shapes do not conform.
func (s *SAGE) Forward(a *sparse.CSR, x *dense.Matrix, train bool, rng *rand.Rand) *dense.Matrix {
	checkBlock(a, x, s.fin)
	s.a, s.x = a, x
	nd, fin, fout := int(a.NRows), s.fin, s.fout
	s.invDeg = grow(s.invDeg, nd)
	for i := range nd {
		s.invDeg[i] = 0
		if d := a.Indptr[i+1] - a.Indptr[i]; d > 0 {
			s.invDeg[i] = 1 / float32(d)
		}
	}
	s.agg = grow(s.agg, nd*fin)
	spmm(s.agg, a, nil, s.invDeg, x.Data, fin)

	out := dense.New(nd, fout)
	gemm(s.impl, blas.NoTrans, blas.NoTrans, nd, fout, fin, 1, x.Data, s.wSelf.W, 0, out.Data)
	gemm(s.impl, blas.NoTrans, blas.NoTrans, nd, fout, fin, 1, s.agg, s.wNeigh.W, 1, out.Data)
	addRowVec(out.Data, s.b.W, nd, fout)
	if s.Normalize {
		s.h = grow(s.h, nd*fout)
		copy(s.h, out.Data)
		if cap(s.norm) < nd {
			s.norm = make([]float64, nd)
		}
		s.norm = s.norm[:nd]
		for i := range nd {
			row := out.Data[i*fout : (i+1)*fout]
			s.norm[i] = math.Sqrt(float64(dot(row, row)))
			scale(float32(1/math.Max(s.norm[i], normEps)), row)
		}
	}
	return out
}

// Backward adds dL/dW_self, dL/dW_neigh and dL/db into the parameters' G and
// returns dL/dx (NSrc×fin, new) if needInput, else nil.
// It will panic if dy is not NDst×fout or no Forward preceded it.
func (s *SAGE) Backward(dy *dense.Matrix, needInput bool) *dense.Matrix {
	if s.a == nil {
		panic("model: Backward before Forward")
	}
	nd, ns, fin, fout := int(s.a.NRows), int(s.a.NCols), s.fin, s.fout
	checkGrad(dy, nd, fout)
	dh := dy.Data
	if s.Normalize {
		// o = h/‖h‖: dL/dh = (dy − o·(o·dy))/‖h‖, or dy/eps where the norm is clamped.
		s.dh = grow(s.dh, nd*fout)
		dh = s.dh
		for i := range nd {
			h := s.h[i*fout : (i+1)*fout]
			g := dy.Data[i*fout : (i+1)*fout]
			out := dh[i*fout : (i+1)*fout]
			copy(out, g)
			if s.norm[i] <= normEps {
				scale(1/normEps, out)
				continue
			}
			inv := float32(1 / s.norm[i])
			axpy(-dot(h, g)*inv*inv, h, out) // dy − o·(o·dy) with o = h/‖h‖
			scale(inv, out)
		}
	}
	colSumAdd(s.b.G, dh, nd, fout)
	gemm(s.impl, blas.Trans, blas.NoTrans, fin, fout, nd, 1, s.x.Data, dh, 1, s.wSelf.G)
	gemm(s.impl, blas.Trans, blas.NoTrans, fin, fout, nd, 1, s.agg, dh, 1, s.wNeigh.G)
	if !needInput {
		return nil
	}
	dx := dense.New(ns, fin)
	gemm(s.impl, blas.NoTrans, blas.Trans, nd, fin, fout, 1, dh, s.wSelf.W, 0, dx.Data)
	s.dagg = grow(s.dagg, nd*fin)
	gemm(s.impl, blas.NoTrans, blas.Trans, nd, fin, fout, 1, dh, s.wNeigh.W, 0, s.dagg)
	s.at.build(s.a, nil, s.invDeg)
	s.at.mulAdd(dx.Data, s.dagg, fin)
	return dx
}
