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
// Forward picks the cheaper of two orders by an operation count (sageOrder):
// aggregate first (an SpMM over fin columns, then two GEMMs with NDst rows),
// the cheaper order on sampled blocks, where NSrc is many times NDst; or
// multiply first (X·W_neigh over all NSrc rows, then an SpMM over fout
// columns), the cheaper order for full-neighbour inference on wide
// features, where the SpMM over fin columns is bound by memory bandwidth.
type SAGE struct {
	// Normalize enables the L2 normalisation of output rows.
	Normalize bool

	wSelf, wNeigh, b *Param
	fin, fout        int
	impl             blas.Float32Level3

	blk  *Block
	mean *weighting              // the block's row weights 1/|N(i)|
	x    *dense.Matrix           // the input (all of it: multiply first, or !dstOnly)
	xs   *sparse.Matrix[float32] // the input of the last ForwardSparse, else nil
	scr  []float32               // NSrc×fout scratch of the sparse path: X·W_neigh, then dL/d(X·W_neigh)
	xd   []float32               // NDst×fin: the destinations' input rows (aggregate first with dstOnly)
	agg  []float32               // NDst×fin: neighbour means
	h    []float32               // NDst×fout: output before normalisation (Normalize only)
	norm []float64               // NDst: ‖h_i‖ (Normalize only)

	// order forces an order (tests): 0 chooses, 1 aggregates first, 2
	// multiplies first.
	order    int
	mulFirst bool
	// dstOnly keeps a copy of x's first NDst rows, which are all that
	// Backward reads when aggregating first, instead of x: a deep stack's
	// caller allocates x (NSrc rows) for one layer only.
	dstOnly bool

	// own makes Forward and Backward return matrices the layer owns and
	// keep their scratch, reused by the next call (a Model's layers), so
	// that a step allocates nothing once the buffers have grown; without
	// it every result and scratch array is new (a deep stack, whose
	// caller keeps the outputs of many layers).
	own       bool
	out, dx   *dense.Matrix // the results when own
	xn, aggO  []float32     // multiply first: X·W_neigh (NSrc×fout) and M·X·W_neigh (NDst×fout), when own
	dagg, dhb []float32     // Backward's scratch when own: dL/d(agg) (NDst×fin), dL/dh (NDst×fout, Normalize)
}

// sparseCost is the cost of one SpMM multiply-add over rows of the given
// width, in GEMM multiply-adds. GEMM runs at 100+ GFLOP/s here while the
// SpMM gathers whole rows; rows wider than a few hundred values miss the
// caches and the SpMM becomes bound by memory bandwidth (about 0.5 G
// multiply-adds/s over 8415-wide rows against 60+ for GEMM), so the cost
// grows with the width.
func sparseCost(width int) int64 { return 4 + int64(width)/256 }

// sageOrder reports whether multiplying first is cheaper for a block of nd
// destinations, ns sources and nnz entries.
func sageOrder(nd, ns int, nnz int64, fin, fout int) (mulFirst bool) {
	agg := nnz*int64(fin)*sparseCost(fin) + int64(nd)*int64(fin)*int64(fout)
	mul := int64(ns)*int64(fin)*int64(fout) + nnz*int64(fout)*sparseCost(fout)
	return mul < agg
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
		wSelf:     NewParam("w_self", fin, fout),
		wNeigh:    NewParam("w_neigh", fin, fout),
		b:         NewParam("b", 1, fout),
		fin:       fin,
		fout:      fout,
		impl:      dense.BLASOrDefault(impl),
	}
	glorot(s.wSelf, fin, fout, rng)
	glorot(s.wNeigh, fin, fout, rng)
	return s
}

// shared returns a SAGE layer with s's Params (gradients accumulate into
// the same G), settings and BLAS and its own forward cache.
func (s *SAGE) shared() *SAGE {
	return &SAGE{
		Normalize: s.Normalize,
		wSelf:     s.wSelf,
		wNeigh:    s.wNeigh,
		b:         s.b,
		fin:       s.fin,
		fout:      s.fout,
		impl:      s.impl,
		order:     s.order,
		dstOnly:   s.dstOnly,
		own:       s.own,
	}
}

// matrix returns a rows×cols matrix for a result (ownedMatrix).
func (s *SAGE) matrix(buf **dense.Matrix, rows, cols int) *dense.Matrix {
	return ownedMatrix(s.own, buf, rows, cols)
}

// scratch returns n float32s of scratch (ownedScratch).
func (s *SAGE) scratch(buf *[]float32, n int) []float32 { return ownedScratch(s.own, buf, n) }

// ownedMatrix returns a rows×cols matrix for a layer's result: *buf
// reused when the layer owns its results (own), else a new one. Its
// contents are unspecified unless new (zero).
func ownedMatrix(own bool, buf **dense.Matrix, rows, cols int) *dense.Matrix {
	if !own {
		return dense.New(rows, cols)
	}
	*buf = dense.Reuse(*buf, rows, cols)
	return *buf
}

// ownedScratch returns n float32s of a layer's scratch: *buf grown when
// the layer owns its results (own), else a new slice. Its contents are
// unspecified unless new (zero).
func ownedScratch(own bool, buf *[]float32, n int) []float32 {
	if !own {
		return make([]float32, n)
	}
	*buf = dense.Grow(*buf, n)
	return *buf
}

// release drops s's forward cache and buffers (Model.Release).
func (s *SAGE) release() { *s = *s.shared() }

// Params returns W_self, W_neigh and b.
func (s *SAGE) Params() []*Param { return []*Param{s.wSelf, s.wNeigh, s.b} }

// OutDim returns fout.
func (s *SAGE) OutDim() int { return s.fout }

// Forward computes the layer on block a (NDst×NSrc) and x (NSrc×fin) and
// returns an NDst×fout matrix: a new one, or, in a Model (which New
// builds), one the layer owns, valid until its next Forward or
// ForwardSparse (callers that keep it copy it). train and rng are unused.
// It will panic if the shapes do not conform.
func (s *SAGE) Forward(a *sparse.CSR, x *dense.Matrix, train bool, rng *rand.Rand) *dense.Matrix {
	checkBlock(a, x, s.fin)
	return s.forward(NewBlock(a), x)
}

// forward is Forward on a Block, whose row weights and their transpose it
// shares with every other layer on the block.
func (s *SAGE) forward(b *Block, x *dense.Matrix) *dense.Matrix {
	a := b.CSR()
	checkBlock(a, x, s.fin)
	s.blk, s.x, s.xs = b, x, nil
	s.mean = b.meanWeights()
	invDeg := s.mean.rowScale
	nd, fin, fout := int(a.NRows), s.fin, s.fout
	ns := int(a.NCols)
	s.mulFirst = s.rowOrder(int64(nd), int64(ns), a.NNZ())
	var xn []float32
	if s.mulFirst {
		xn = s.scratch(&s.xn, ns*fout)
		dense.Gemm(s.impl, blas.NoTrans, blas.NoTrans, ns, fout, fin, 1, x.Data, s.wNeigh.W, 0, xn)
	}
	out := s.combine(nd, x.Data, s.mulFirst, xn, x.Data, func(dst, src []float32, f int) { spmm(dst, a, nil, invDeg, src, f) })
	if !s.mulFirst && s.dstOnly {
		s.xd = dense.Grow(s.xd, nd*fin)
		copy(s.xd, x.Data)
		s.x = nil
	}
	return out
}

// combine computes the layer's output for nd destinations whose input
// rows are xd (nd×fin): xd·W_self plus the neighbour term, with mulFirst
// M·pre, pre being X·W_neigh of the sources (fout wide), else
// (M·X)·W_neigh over the sources' rows x, into s.agg; mean(dst, src, f)
// computes dst = M·src over f columns, M the row-mean matrix. Then the
// bias and, with Normalize, the normalisation (finish).
func (s *SAGE) combine(nd int, xd []float32, mulFirst bool, pre, x []float32, mean func(dst, src []float32, f int)) *dense.Matrix {
	fin, fout := s.fin, s.fout
	out := s.matrix(&s.out, nd, fout)
	dense.Gemm(s.impl, blas.NoTrans, blas.NoTrans, nd, fout, fin, 1, xd, s.wSelf.W, 0, out.Data)
	if mulFirst {
		aggOut := s.scratch(&s.aggO, nd*fout)
		mean(aggOut, pre, fout)
		dense.Axpy(1, aggOut, out.Data)
	} else {
		s.agg = dense.Grow(s.agg, nd*fin)
		mean(s.agg, x, fin)
		dense.Gemm(s.impl, blas.NoTrans, blas.NoTrans, nd, fout, fin, 1, s.agg, s.wNeigh.W, 1, out.Data)
	}
	s.finish(out)
	return out
}

// ForwardSparse computes the layer on block a and sparse rows x (NSrc×fin)
// by projecting first,
//
//	out = X_dst·W_self + M·(X·W_neigh) + b,
//
// X_dst being x's first NDst rows and M the row-mean matrix of a, and
// returns an NDst×fout matrix, new or the layer's own as Forward's.
// train and rng are unused. Backward after
// it adds the parameter gradients and panics if needInput is true.
// It will panic if the shapes do not conform.
func (s *SAGE) ForwardSparse(a *sparse.CSR, x *sparse.Matrix[float32], train bool, rng *rand.Rand) *dense.Matrix {
	checkSparseBlock(a, x, s.fin)
	b := NewBlock(a)
	s.blk, s.x, s.xs, s.mulFirst = b, nil, x, true
	s.mean = b.meanWeights()
	nd, ns, fout := int(a.NRows), int(a.NCols), s.fout
	s.scr = dense.Grow(s.scr, ns*fout)
	sparseMulTo(s.scr, x, ns, s.wNeigh.W, fout)
	out := s.matrix(&s.out, nd, fout)
	spmm(out.Data, a, nil, s.mean.rowScale, s.scr, fout)
	sparseMulAdd(out.Data, x, nd, s.wSelf.W, fout)
	s.finish(out)
	return out
}

// finish adds the bias to the NDst×fout out and, with Normalize, keeps it
// for Backward and normalises its rows, all in place.
func (s *SAGE) finish(out *dense.Matrix) {
	nd, fout := out.Rows, out.Cols
	addRowVec(out.Data, s.b.W, nd, fout)
	if s.Normalize {
		s.h = dense.Grow(s.h, nd*fout)
		copy(s.h, out.Data)
		if cap(s.norm) < nd {
			s.norm = make([]float64, nd)
		}
		s.norm = s.norm[:nd]
		for i := range nd {
			row := out.Data[i*fout : (i+1)*fout]
			s.norm[i] = math.Sqrt(float64(dense.Dot(row, row)))
			dense.Scale(float32(1/math.Max(s.norm[i], normEps)), row)
		}
	}
}

// Backward adds dL/dW_self, dL/dW_neigh and dL/db into the parameters' G and
// returns dL/dx (NSrc×fin) if needInput, else nil: a new matrix, or in a
// Model one the layer owns, valid until its next Backward.
// It will panic if dy is not NDst×fout or no Forward preceded it, or if
// needInput follows a ForwardSparse.
func (s *SAGE) Backward(dy *dense.Matrix, needInput bool) *dense.Matrix {
	if s.blk == nil {
		panic("model: Backward before Forward")
	}
	a := s.blk.CSR()
	nd, ns, fin, fout := int(a.NRows), int(a.NCols), s.fin, s.fout
	checkGrad(dy, nd, fout)
	if s.xs != nil {
		noInputGrad(needInput)
	}
	dh := s.preNormGrad(dy)
	colSumAdd(s.b.Grad(), dh, nd, fout)
	if s.xs != nil {
		// out = X_dst·W_self + M·Z with Z = X·W_neigh: dL/dZ = Mᵀ·dh;
		// both weight gradients by one call, tiled over columns.
		dz := dense.Grow(s.scr, ns*fout)
		s.blk.transpose(s.mean).mulTo(dz, dh, fout)
		sparseTMulAddTerms(s.xs, fout, gradTerm(s.wSelf, dh, nd), gradTerm(s.wNeigh, dz, ns))
		return nil
	}
	xd := s.xd
	if s.x != nil {
		xd = s.x.Data
	}
	dw, beta := s.wSelf.gemmDst()
	dense.Gemm(s.impl, blas.Trans, blas.NoTrans, fin, fout, nd, 1, xd, dh, beta, dw)
	if s.mulFirst {
		return s.backwardMulFirst(dh, needInput)
	}
	dw, beta = s.wNeigh.gemmDst()
	dense.Gemm(s.impl, blas.Trans, blas.NoTrans, fin, fout, nd, 1, s.agg, dh, beta, dw)
	if !needInput {
		return nil
	}
	dx := s.matrix(&s.dx, ns, fin)
	dense.Gemm(s.impl, blas.NoTrans, blas.Trans, nd, fin, fout, 1, dh, s.wSelf.W, 0, dx.Data)
	clear(dx.Data[nd*fin:]) // the sources that are not destinations
	dagg := s.scratch(&s.dagg, nd*fin)
	dense.Gemm(s.impl, blas.NoTrans, blas.Trans, nd, fin, fout, 1, dh, s.wNeigh.W, 0, dagg)
	s.blk.transpose(s.mean).mulAdd(dx.Data, dagg, fin)
	return dx
}

// preNormGrad returns dL/dh, h the output before normalisation, from dy =
// dL/dout: dy itself without Normalize.
func (s *SAGE) preNormGrad(dy *dense.Matrix) []float32 {
	nd, fout := dy.Rows, dy.Cols
	dh := dy.Data
	if s.Normalize {
		// o = h/‖h‖: dL/dh = (dy − o·(o·dy))/‖h‖, or dy/eps where the norm is clamped.
		dh = s.scratch(&s.dhb, nd*fout)
		for i := range nd {
			h := s.h[i*fout : (i+1)*fout]
			g := dy.Data[i*fout : (i+1)*fout]
			out := dh[i*fout : (i+1)*fout]
			copy(out, g)
			if s.norm[i] <= normEps {
				dense.Scale(1/normEps, out)
				continue
			}
			inv := float32(1 / s.norm[i])
			dense.Axpy(-dense.Dot(h, g)*inv*inv, h, out) // dy − o·(o·dy) with o = h/‖h‖
			dense.Scale(inv, out)
		}
	}
	return dh
}

// backwardMulFirst is Backward's neighbour term of the multiply-first
// order on a dense input, dh being dL/dh.
func (s *SAGE) backwardMulFirst(dh []float32, needInput bool) *dense.Matrix {
	a := s.blk.CSR()
	nd, ns, fin, fout := int(a.NRows), int(a.NCols), s.fin, s.fout
	// out = X_dst·W_self + M·X·W_neigh with M the row-mean matrix:
	// dL/d(X·W_neigh) = Mᵀ·dh, dW_neigh = Xᵀ·Mᵀ·dh.
	dxn := s.scratch(&s.xn, ns*fout)
	s.blk.transpose(s.mean).mulTo(dxn, dh, fout)
	dw, beta := s.wNeigh.gemmDst()
	dense.Gemm(s.impl, blas.Trans, blas.NoTrans, fin, fout, ns, 1, s.x.Data, dxn, beta, dw)
	if !needInput {
		return nil
	}
	dx := s.matrix(&s.dx, ns, fin)
	dense.Gemm(s.impl, blas.NoTrans, blas.Trans, ns, fin, fout, 1, dxn, s.wNeigh.W, 0, dx.Data)
	dense.Gemm(s.impl, blas.NoTrans, blas.Trans, nd, fin, fout, 1, dh, s.wSelf.W, 1, dx.Data)
	return dx
}
