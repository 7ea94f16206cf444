package model

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"

	"gnnmpi/dense"
	"gnnmpi/sparse"
)

// spmmCost is the cost of one sparse multiply-add in dense multiply-adds,
// used to choose the order of GCN's two products: SpMM runs at a fraction of
// GEMM's speed because its reads are gathers.
const spmmCost = 4

// GCN is a graph convolution layer (Kipf and Welling 2017):
//
//	H′ = Â·X·W + b,
//
// where Â is the block a with its Values (NDst×NSrc; see GCNNorm), X is
// NSrc×fin, W is fin×fout and b is 1×fout. The block must carry Values,
// including any self-loop entries it wants.
//
// The layer computes (Â·X)·W when that is cheaper and Â·(X·W) otherwise,
// comparing nnz·fin·c + NDst·fin·fout with NSrc·fin·fout + nnz·fout·c
// multiply-adds, where c = 4 weighs a sparse multiply-add against a dense
// one. On sampled blocks (NSrc ≫ NDst) that is nearly always aggregate
// first; on full-graph blocks it is multiply first when fout < fin.
type GCN struct {
	w, b      *Param
	fin, fout int
	impl      blas.Float32Level3

	blk      *Block
	wt       *weighting              // the block's Values as float32
	x        *dense.Matrix           // the input, kept only when !aggFirst
	xs       *sparse.Matrix[float32] // the input of the last ForwardSparse, else nil
	aggFirst bool
	t        []float32 // NDst×fin (Â·X) when aggFirst, else NSrc×fout (X·W; after a sparse Backward, dL/d(X·W))

	// own makes Forward and Backward return matrices the layer owns and
	// keep their scratch, as SAGE's own (a Model's layers).
	own     bool
	out, dx *dense.Matrix // the results when own
	scr     []float32     // Backward's scratch when own
}

var _ Layer = (*GCN)(nil)

// NewGCN returns a GCN layer from fin to fout features with Glorot uniform
// weights drawn from rng and a zero bias. Dense products use impl, or gonum's
// pure Go BLAS if impl is nil. It will panic if fin or fout is not positive.
func NewGCN(fin, fout int, rng *rand.Rand, impl blas.Float32Level3) *GCN {
	w, b := newAffine(fin, fout, rng)
	return &GCN{w: w, b: b, fin: fin, fout: fout, impl: dense.BLASOrDefault(impl)}
}

// shared returns a GCN with g's Params (gradients accumulate into the same
// G) and BLAS and its own forward cache.
func (g *GCN) shared() *GCN {
	return &GCN{w: g.w, b: g.b, fin: g.fin, fout: g.fout, impl: g.impl, own: g.own}
}

// release drops g's forward cache and buffers (Model.Release).
func (g *GCN) release() { *g = *g.shared() }

// Params returns W and b.
func (g *GCN) Params() []*Param { return []*Param{g.w, g.b} }

// OutDim returns fout.
func (g *GCN) OutDim() int { return g.fout }

// Forward computes Â·X·W + b on block a and returns an NDst×fout matrix:
// a new one, or, in a Model, one the layer owns, valid until its next
// Forward or ForwardSparse (callers that keep it copy it).
// train and rng are unused. It will panic if a.Values is nil or the shapes
// do not conform.
func (g *GCN) Forward(a *sparse.CSR, x *dense.Matrix, train bool, rng *rand.Rand) *dense.Matrix {
	checkBlock(a, x, g.fin)
	return g.forward(NewBlock(a), x)
}

// forward is Forward on a Block, whose float32 values and transpose it
// shares with every other layer on the block. It keeps x only when the
// order needs it in Backward (multiply first).
func (g *GCN) forward(b *Block, x *dense.Matrix) *dense.Matrix {
	a := b.CSR()
	checkNormBlock(a, x, g.fin, "model: GCN block has no Values (see GCNNorm)")
	g.blk, g.x, g.xs = b, nil, nil
	g.wt = b.scaledValues(1)
	nd, ns, fin, fout := int64(a.NRows), int64(a.NCols), int64(g.fin), int64(g.fout)
	nnz := a.NNZ()
	g.aggFirst = nnz*fin*spmmCost+nd*fin*fout <= ns*fin*fout+nnz*fout*spmmCost
	out := ownedMatrix(g.own, &g.out, int(nd), g.fout)
	if g.aggFirst {
		g.t = dense.Grow(g.t, int(nd*fin))
		spmm(g.t, a, g.wt.val, nil, x.Data, g.fin)
		dense.Gemm(g.impl, blas.NoTrans, blas.NoTrans, int(nd), g.fout, g.fin, 1, g.t, g.w.W, 0, out.Data)
	} else {
		g.x = x
		g.t = dense.Grow(g.t, int(ns*fout))
		dense.Gemm(g.impl, blas.NoTrans, blas.NoTrans, int(ns), g.fout, g.fin, 1, x.Data, g.w.W, 0, g.t)
		spmm(out.Data, a, g.wt.val, nil, g.t, g.fout)
	}
	addRowVec(out.Data, g.b.W, int(nd), g.fout)
	return out
}

// ForwardSparse computes Â·(X·W) + b on block a and sparse rows x
// (NSrc×fin), projecting first, and returns an NDst×fout matrix, new or
// the layer's own as Forward's. train
// and rng are unused. Backward after it adds the parameter gradients and
// panics if needInput is true. It will panic if a.Values is nil or the
// shapes do not conform.
func (g *GCN) ForwardSparse(a *sparse.CSR, x *sparse.Matrix[float32], train bool, rng *rand.Rand) *dense.Matrix {
	checkSparseBlock(a, x, g.fin)
	if a.Values == nil {
		panic("model: GCN block has no Values (see GCNNorm)")
	}
	b := NewBlock(a)
	g.blk, g.x, g.xs, g.aggFirst = b, nil, x, false
	g.wt = b.scaledValues(1)
	nd, ns := int(a.NRows), int(a.NCols)
	g.t = dense.Grow(g.t, ns*g.fout)
	sparseMulTo(g.t, x, ns, g.w.W, g.fout)
	out := ownedMatrix(g.own, &g.out, nd, g.fout)
	spmm(out.Data, a, g.wt.val, nil, g.t, g.fout)
	addRowVec(out.Data, g.b.W, nd, g.fout)
	return out
}

// Backward adds dL/dW and dL/db into the parameters' G and returns dL/dx
// (NSrc×fin; new, or in a Model the layer's own until its next Backward)
// if needInput, else nil. It will panic if dy is not
// NDst×fout or no Forward preceded it, or if needInput follows a
// ForwardSparse.
func (g *GCN) Backward(dy *dense.Matrix, needInput bool) *dense.Matrix {
	if g.blk == nil {
		panic("model: Backward before Forward")
	}
	a := g.blk.CSR()
	nd, ns, fin, fout := int(a.NRows), int(a.NCols), g.fin, g.fout
	checkGrad(dy, nd, fout)
	if g.xs != nil {
		noInputGrad(needInput)
	}
	colSumAdd(g.b.Grad(), dy.Data, nd, fout)
	if g.xs != nil {
		// out = Â·Z with Z = X·W: dL/dZ = Âᵀ·dy, into Z's storage (the
		// sparse path's Backward does not read Z).
		dz := dense.Grow(g.t, ns*fout)
		g.blk.transpose(g.wt).mulTo(dz, dy.Data, fout)
		sparseTMulAddTerms(g.xs, fout, gradTerm(g.w, dz, ns))
		return nil
	}
	if g.aggFirst {
		// out = T·W with T = Â·X.
		dw, beta := g.w.gemmDst()
		dense.Gemm(g.impl, blas.Trans, blas.NoTrans, fin, fout, nd, 1, g.t, dy.Data, beta, dw)
		if !needInput {
			return nil
		}
		scr := ownedScratch(g.own, &g.scr, nd*fin)
		dense.Gemm(g.impl, blas.NoTrans, blas.Trans, nd, fin, fout, 1, dy.Data, g.w.W, 0, scr)
		dx := ownedMatrix(g.own, &g.dx, ns, fin)
		g.blk.transpose(g.wt).mulTo(dx.Data, scr, fin)
		return dx
	}
	// out = Â·Z with Z = X·W.
	scr := ownedScratch(g.own, &g.scr, ns*fout)
	g.blk.transpose(g.wt).mulTo(scr, dy.Data, fout)
	dw, beta := g.w.gemmDst()
	dense.Gemm(g.impl, blas.Trans, blas.NoTrans, fin, fout, ns, 1, g.x.Data, scr, beta, dw)
	if !needInput {
		return nil
	}
	dx := ownedMatrix(g.own, &g.dx, ns, fin)
	dense.Gemm(g.impl, blas.NoTrans, blas.Trans, ns, fin, fout, 1, scr, g.w.W, 0, dx.Data)
	return dx
}

// GCNNorm returns a new block with GCN's normalised weights for block a
// (NDst×NSrc, destination i being source i). Row i gets a self-loop entry
// (i, i) if it has none, inserted before the first column greater than i so
// that sorted rows stay sorted, and the values
//
//	w_ii = 1/(deg_i+1),  w_ij = (deg_i/k_i) / √((deg_i+1)(deg_j+1))  for j ≠ i,
//
// where deg_i = degDst[i] and deg_j = degSrc[j] are full-graph degrees
// without self-loops and k_i is the number of entries of row i other than
// (i, i). a's Values are ignored. With the full neighbourhood (k_i = deg_i)
// this is the Kipf–Welling D̃^{-1/2}(A+I)D̃^{-1/2}; with k_i sampled
// neighbours it is its unbiased estimate. It will panic if len(degDst) !=
// NDst, len(degSrc) != NSrc or NDst > NSrc.
func GCNNorm(a *sparse.CSR, degDst, degSrc []int64) *sparse.CSR {
	if int64(len(degDst)) != a.NRows || int64(len(degSrc)) != a.NCols {
		panic("model: GCNNorm degree length mismatch")
	}
	if a.NRows > a.NCols {
		panic("model: block NDst > NSrc")
	}
	nd := a.NRows
	missing := int64(0)
	for i := range nd {
		if !rowHas(a, i, i) {
			missing++
		}
	}
	nnz := a.NNZ() + missing
	out := &sparse.CSR{
		NRows:   a.NRows,
		NCols:   a.NCols,
		Indptr:  make([]int64, nd+1),
		Indices: make([]int64, 0, nnz),
		Values:  make([]float64, 0, nnz),
	}
	for i := range nd {
		row := a.Row(i)
		k := int64(0)
		for _, j := range row {
			if j != i {
				k++
			}
		}
		scaleI, self := gcnRowScale(degDst[i], k)
		has := rowHas(a, i, i)
		for _, j := range row {
			if !has && j > i {
				out.Indices = append(out.Indices, i)
				out.Values = append(out.Values, self)
				has = true
			}
			out.Indices = append(out.Indices, j)
			if j == i {
				out.Values = append(out.Values, self)
			} else {
				out.Values = append(out.Values, scaleI/math.Sqrt(float64(degSrc[j])+1))
			}
		}
		if !has {
			out.Indices = append(out.Indices, i)
			out.Values = append(out.Values, self)
		}
		out.Indptr[i+1] = int64(len(out.Indices))
	}
	return out
}

// gcnRowScale returns the factors of GCNNorm's row i: scaleI, which an
// entry (i, j ≠ i) divides by √(deg(j)+1), and the self-loop's entry, for
// degDst the degree of i without self-loops and k its neighbours other
// than i.
func gcnRowScale(degDst, k int64) (scaleI, self float64) {
	di := float64(degDst)
	if k > 0 {
		scaleI = di / float64(k) / math.Sqrt(di+1)
	}
	return scaleI, 1 / (di + 1)
}

// rowHas reports whether row i of a stores column j.
func rowHas(a *sparse.CSR, i, j int64) bool {
	for _, c := range a.Row(i) {
		if c == j {
			return true
		}
	}
	return false
}
