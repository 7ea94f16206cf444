package model

import (
	"math"
	"math/rand/v2"

	"gnnmpi/dense"
	"gnnmpi/sparse"
)

// Param is a trainable Rows×Cols tensor stored row-major: W holds the
// weights and Grad the gradient, both of length Rows*Cols. Layers read W on
// every Forward and add into the gradient on every Backward; optimizers
// update W from Grad.
//
// ZeroGrad only marks the gradient zero. The first Backward after it
// overwrites the gradient instead of adding into it, so a step neither
// clears the gradient nor reads the old values back. Grad, the only
// way to the values, clears a gradient still marked zero before it
// returns it, so every reader sees the same values as if ZeroGrad had
// cleared them.
type Param struct {
	Name       string
	Rows, Cols int
	W          []float32
	g          []float32 // the gradient's storage; its values are stale while zero is true
	zero       bool      // the gradient is zero, whatever g holds (ZeroGrad)
}

// NewParam returns a Rows×Cols parameter named name, its weights and
// gradient zero: the way to a Param with gradient storage outside this
// package (a literal has none until BindGrad).
func NewParam(name string, rows, cols int) *Param {
	return &Param{Name: name, Rows: rows, Cols: cols, W: make([]float32, rows*cols), g: make([]float32, rows*cols)}
}

// Grad returns the gradient (Rows*Cols values, laid out as W), the
// Param's own storage, to read or change in place. A gradient that
// ZeroGrad marked zero is cleared first, once. Grad writes nothing
// otherwise, so goroutines may call it at once on a Param that is not
// marked zero.
func (p *Param) Grad() []float32 {
	if p.zero {
		clear(p.g)
		p.zero = false
	}
	return p.g
}

// ZeroGrad marks the gradient zero without writing it: the next Backward
// overwrites it, and Grad clears it if no Backward came first.
func (p *Param) ZeroGrad() { p.zero = true }

// BindGrad makes s, of length Rows*Cols, the gradient's storage and
// copies the gradient into it; a gradient marked zero stays marked, and
// nothing is copied. The Param uses s until the next BindGrad. It will
// panic if len(s) != len(W).
func (p *Param) BindGrad(s []float32) {
	if len(s) != len(p.W) {
		panic("model: BindGrad: len(s) != len(W)")
	}
	if !p.zero {
		copy(s, p.g)
	}
	p.g = s
}

// gradDst returns the gradient for a Backward to accumulate into, and
// takes off the mark of ZeroGrad. When fresh is true the gradient is zero
// and g holds stale values: the caller must write every element of g as
// if it had been cleared first (overwrite where it would add).
func (p *Param) gradDst() (g []float32, fresh bool) {
	fresh = p.zero
	p.zero = false
	return p.g, fresh
}

// overwriteGrad returns the gradient for the caller to overwrite whole
// (Model.SetGrads), taking off the mark of ZeroGrad without clearing.
func (p *Param) overwriteGrad() []float32 {
	g, _ := p.gradDst()
	return g
}

// gemmDst is gradDst for a dense.Gemm that accumulates into the gradient:
// it returns the gradient and the Gemm's beta, 0 when the gradient is
// fresh (overwrite) and 1 otherwise (add). With gonum's Sgemm, which
// clears C for beta 0 and then adds the same products, the bits are those
// of adding into a cleared gradient.
func (p *Param) gemmDst() (g []float32, beta float32) {
	g, fresh := p.gradDst()
	if fresh {
		return g, 0
	}
	return g, 1
}

// gradTerm returns the term of sparseTMulAddTerms that adds X[:n]ᵀ·dy
// into p's gradient (gradDst: overwriting it when fresh).
func gradTerm(p *Param, dy []float32, n int) tmulTerm {
	g, fresh := p.gradDst()
	return tmulTerm{dw: g, dy: dy, n: n, fresh: fresh}
}

// glorot fills p.W with Glorot (Xavier) uniform values in ±√(6/(fanIn+fanOut)),
// drawn in order from rng.
func glorot(p *Param, fanIn, fanOut int, rng *rand.Rand) {
	a := float32(math.Sqrt(6 / float64(fanIn+fanOut)))
	for i := range p.W {
		p.W[i] = (2*rng.Float32() - 1) * a
	}
}

// newAffine returns the parameters of x·W + b from fin to fout features:
// W (fin×fout) with Glorot uniform values drawn from rng, b (1×fout) zero.
// It will panic if fin or fout is not positive.
func newAffine(fin, fout int, rng *rand.Rand) (w, b *Param) {
	if fin <= 0 || fout <= 0 {
		panic("model: non-positive layer width")
	}
	w, b = NewParam("w", fin, fout), NewParam("b", 1, fout)
	glorot(w, fin, fout, rng)
	return w, b
}

// Layer is one message-passing layer on a bipartite block.
//
// A block a is an NDst×NSrc CSR matrix (a.NRows × a.NCols) whose row i lists
// the source vertices that send messages to destination i. The first NDst
// source vertices are the destination vertices themselves (source local id i
// is destination i for i < NDst), so the self features of destination i are
// row i of x. x is NSrc×fin; the output is NDst×OutDim().
//
// Forward caches what Backward needs and keeps a reference to a and x, which
// must not change until Backward returns; a later Forward replaces the
// cache. The returned matrices are new and owned by the caller. Layers are not
// safe for concurrent use.
type Layer interface {
	// Forward computes the layer on block a. train enables dropout inside
	// the layer (GAT attention dropout, if any), drawing masks from rng;
	// rng may be nil when train is false.
	Forward(a *sparse.CSR, x *dense.Matrix, train bool, rng *rand.Rand) *dense.Matrix
	// Backward takes dL/dout (NDst×fout), adds the parameter gradients into
	// Param.Grad and returns dL/dx (NSrc×fin), or nil if needInput is false.
	Backward(dy *dense.Matrix, needInput bool) *dense.Matrix
	// Params returns the layer's parameters; the slice is new, the Params
	// are the layer's own.
	Params() []*Param
	// OutDim returns the number of output features.
	OutDim() int
}

// checkBlock panics unless a and x conform to the block convention.
func checkBlock(a *sparse.CSR, x *dense.Matrix, fin int) {
	switch {
	case a == nil || x == nil:
		panic("model: nil block or input")
	case int64(x.Rows) != a.NCols:
		panic("model: x.Rows != block NSrc")
	case a.NRows > a.NCols:
		panic("model: block NDst > NSrc")
	case x.Cols != fin:
		panic("model: x.Cols != layer input width")
	case int64(len(a.Indptr)) != a.NRows+1:
		panic("model: malformed block Indptr")
	}
}

// checkNormBlock is checkBlock for a layer that propagates with the
// normalised Â: it also panics with noValues when a has no values
// (GCNNorm gives them).
func checkNormBlock(a *sparse.CSR, x *dense.Matrix, fin int, noValues string) {
	checkBlock(a, x, fin)
	if a.Values == nil {
		panic(noValues)
	}
}

// checkGrad panics unless dy is r×c.
func checkGrad(dy *dense.Matrix, r, c int) {
	if dy == nil || dy.Rows != r || dy.Cols != c {
		panic("model: dy shape does not match the layer output")
	}
}
