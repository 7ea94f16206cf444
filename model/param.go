package model

import (
	"math"
	"math/rand/v2"

	"gnnmpi/dense"
	"gnnmpi/sparse"
)

// Param is a trainable Rows×Cols tensor stored row-major: W holds the
// weights and G the gradient, both of length Rows*Cols. Layers read W on
// every Forward and add into G on every Backward; optimizers update W from G.
type Param struct {
	Name       string
	Rows, Cols int
	W, G       []float32
}

// newParam returns a zero Rows×Cols parameter.
func newParam(name string, rows, cols int) *Param {
	return &Param{Name: name, Rows: rows, Cols: cols, W: make([]float32, rows*cols), G: make([]float32, rows*cols)}
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
	w, b = newParam("w", fin, fout), newParam("b", 1, fout)
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
	// Param.G and returns dL/dx (NSrc×fin), or nil if needInput is false.
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
