package model

import (
	"math"
	"math/rand/v2"

	"gnnmpi/dense"
	"gnnmpi/sparse"
)

// ReLU is the rectifier y = max(x, 0) with its backward pass.
type ReLU struct {
	y *dense.Matrix
}

// Forward returns max(x, 0) as a new matrix, which Backward reads: do not
// modify it before Backward.
func (r *ReLU) Forward(x *dense.Matrix) *dense.Matrix {
	y := dense.New(x.Rows, x.Cols)
	for i, v := range x.Data {
		if v > 0 {
			y.Data[i] = v
		}
	}
	r.y = y
	return y
}

// Backward returns dL/dx = dy where x > 0 and 0 elsewhere, as a new matrix.
// It will panic if dy does not match the last Forward.
func (r *ReLU) Backward(dy *dense.Matrix) *dense.Matrix {
	checkSame(r.y, dy)
	dx := dense.New(dy.Rows, dy.Cols)
	for i, v := range r.y.Data {
		if v > 0 {
			dx.Data[i] = dy.Data[i]
		}
	}
	return dx
}

// reluMask is a ReLU applied in place that keeps, for Backward, one bit per
// element (x > 0) instead of its output, so that the output can be freed as
// soon as its reader is done with it (a deep stack's next layer).
type reluMask struct {
	rows, cols int
	bits       []uint64
}

// forward sets x = max(x, 0) in place (0 for NaN and −0, as ReLU does),
// records where x > 0 and returns x.
func (r *reluMask) forward(x *dense.Matrix) *dense.Matrix {
	r.rows, r.cols = x.Rows, x.Cols
	words := (len(x.Data) + 63) / 64
	if cap(r.bits) < words {
		r.bits = make([]uint64, words)
	}
	r.bits = r.bits[:words]
	clear(r.bits)
	for i, v := range x.Data {
		if v > 0 {
			r.bits[i>>6] |= 1 << (i & 63)
		} else {
			x.Data[i] = 0
		}
	}
	return x
}

// backward returns dL/dx = dy where x > 0 and 0 elsewhere, as a new matrix.
// It will panic if no forward preceded it or dy does not match it.
func (r *reluMask) backward(dy *dense.Matrix) *dense.Matrix {
	if r.bits == nil {
		panic("model: Backward before Forward")
	}
	checkGrad(dy, r.rows, r.cols)
	dx := dense.New(dy.Rows, dy.Cols)
	for i, v := range dy.Data {
		if r.bits[i>>6]&(1<<(i&63)) != 0 {
			dx.Data[i] = v
		}
	}
	return dx
}

// positive reports whether element i of the last forward's input was > 0.
func (r *reluMask) positive(i int) bool { return r.bits[i>>6]&(1<<(i&63)) != 0 }

// ELU is the exponential linear unit with α = 1: y = x for x > 0 and
// eˣ − 1 otherwise. The GAT paper uses it between layers.
type ELU struct {
	y *dense.Matrix
}

// Forward returns ELU(x) as a new matrix, which Backward reads: do not
// modify it before Backward.
func (u *ELU) Forward(x *dense.Matrix) *dense.Matrix {
	y := dense.New(x.Rows, x.Cols)
	for i, v := range x.Data {
		if v > 0 {
			y.Data[i] = v
		} else {
			y.Data[i] = float32(math.Expm1(float64(v)))
		}
	}
	u.y = y
	return y
}

// Backward returns dL/dx = dy for x > 0 and dy·(y+1) = dy·eˣ otherwise, as a
// new matrix. It will panic if dy does not match the last Forward.
func (u *ELU) Backward(dy *dense.Matrix) *dense.Matrix {
	checkSame(u.y, dy)
	dx := dense.New(dy.Rows, dy.Cols)
	for i, v := range u.y.Data {
		if v > 0 {
			dx.Data[i] = dy.Data[i]
		} else {
			dx.Data[i] = dy.Data[i] * (v + 1)
		}
	}
	return dx
}

// Dropout is inverted dropout: in training each element is zeroed with
// probability Rate and the others are scaled by 1/(1−Rate), so that
// evaluation is the identity.
//
// The mask takes 16 random bits per element from the rng (four elements per
// Uint64), in row-major order, so Rate is rounded to a multiple of 2⁻¹⁶; the
// scale uses the rounded rate, keeping the expectation exact.
//
// With SkipZeros a zero element draws nothing (it is zero whether dropped or
// not; its mask is 0, so it passes no gradient), which makes the draws of a
// matrix those of its nonzeros: ForwardSparse on the same rows as CSR draws
// the same numbers and drops the same entries. A Model sets it on its input
// dropout, whose zeros are the data's. Hidden layers keep drawing for every
// element: there a ReLU output that is 0 on one path and a rounding error
// above 0 on another (dense and sparse input, two BLAS) would otherwise
// shift every later draw, and the two runs would drop different elements.
type Dropout struct {
	Rate float32
	// SkipZeros makes zero elements draw no random number.
	SkipZeros bool

	mask   []float32 // 0 or 1/(1−Rate) per element; nil when the last Forward was the identity
	buf    []float32
	sparse bool // the last forward was ForwardSparse, which has no Backward
}

// Forward returns x with dropout applied, as a new matrix, when train is true
// and Rate > 0, drawing the mask from rng. Otherwise it returns x itself.
// It will panic if Rate is outside [0, 1), or if rng is nil when needed.
func (d *Dropout) Forward(x *dense.Matrix, train bool, rng *rand.Rand) *dense.Matrix {
	if !d.active(train, rng) {
		return x
	}
	d.buf = dense.Grow(d.buf, len(x.Data))
	d.mask = d.buf
	dr := newDropper(d.Rate, rng)
	y := dense.New(x.Rows, x.Cols)
	for i, v := range x.Data {
		if v == 0 && d.SkipZeros {
			d.mask[i] = 0
			continue
		}
		m := dr.next()
		d.mask[i] = m
		y.Data[i] = v * m
	}
	return y
}

// ForwardSparse is Forward on sparse rows: it returns x with dropout
// applied, as a new matrix with values holding only the kept entries (in
// x's order, scaled by 1/(1−Rate)), when train is true and Rate > 0, and x
// itself otherwise. Every stored entry with a nonzero value (every entry of
// a pattern, whose values are 1) draws one decision, in row-major stored
// order, whatever SkipZeros is; with each row's columns sorted and
// distinct, those are the draws Forward with SkipZeros makes on x's dense
// form, so both keep the same entries. Inputs get
// no gradient: Backward panics after a ForwardSparse that dropped.
// It will panic if Rate is outside [0, 1), or if rng is nil when needed.
func (d *Dropout) ForwardSparse(x *sparse.Matrix[float32], train bool, rng *rand.Rand) *sparse.Matrix[float32] {
	if !d.active(train, rng) {
		return x
	}
	d.sparse = true
	dr := newDropper(d.Rate, rng)
	nnz := x.NNZ()
	y := &sparse.Matrix[float32]{
		NRows:   x.NRows,
		NCols:   x.NCols,
		Indptr:  make([]int64, x.NRows+1),
		Indices: make([]int64, 0, nnz),
		Values:  make([]float32, 0, nnz),
	}
	for i := range x.NRows {
		for e := x.Indptr[i]; e < x.Indptr[i+1]; e++ {
			v := float32(1)
			if x.Values != nil {
				if v = x.Values[e]; v == 0 {
					continue
				}
			}
			if m := dr.next(); m != 0 {
				y.Indices = append(y.Indices, x.Indices[e])
				y.Values = append(y.Values, v*m)
			}
		}
		y.Indptr[i+1] = int64(len(y.Indices))
	}
	return y
}

// active checks Rate and reports whether a forward in this mode drops,
// resetting the state of the last forward.
func (d *Dropout) active(train bool, rng *rand.Rand) bool {
	if !(d.Rate >= 0 && d.Rate < 1) {
		panic("model: dropout rate outside [0, 1)")
	}
	d.mask, d.sparse = nil, false
	if !train || d.Rate == 0 {
		return false
	}
	if rng == nil {
		panic("model: dropout needs an rng")
	}
	return true
}

// Backward returns dL/dx: dy times the last mask as a new matrix, or dy
// itself when the last Forward was the identity. It will panic if dy does not
// match the mask, or if the last forward was a ForwardSparse that dropped.
func (d *Dropout) Backward(dy *dense.Matrix) *dense.Matrix {
	if d.sparse {
		panic("model: no dropout Backward after ForwardSparse")
	}
	if d.mask == nil {
		return dy
	}
	if len(dy.Data) != len(d.mask) {
		panic("model: dy shape does not match the dropout mask")
	}
	dx := dense.New(dy.Rows, dy.Cols)
	for i, v := range dy.Data {
		dx.Data[i] = v * d.mask[i]
	}
	return dx
}

// dropper draws dropout decisions: 16 bits of rng per decision, four per
// Uint64, a decision keeping its element when the bits are at least
// round(rate·2¹⁶).
type dropper struct {
	rng  *rand.Rand
	t    uint64  // drop threshold
	keep float32 // 1/(1 − t/2¹⁶)
	r    uint64  // undrawn bits
	k    int     // decisions drawn
}

func newDropper(rate float32, rng *rand.Rand) dropper {
	t := uint64(math.Round(float64(rate) * 65536))
	return dropper{rng: rng, t: t, keep: float32(1 / (1 - float64(t)/65536))}
}

// next draws a decision and returns its mask value, 0 or the keep scale.
func (d *dropper) next() float32 {
	if d.k%4 == 0 {
		d.r = d.rng.Uint64()
	}
	d.k++
	b := d.r & 0xffff
	d.r >>= 16
	if b >= d.t {
		return d.keep
	}
	return 0
}

// dropMask fills dst with 0 (probability ≈ rate) or the matching inverse
// keep probability, drawing 16 bits per element from rng.
func dropMask(dst []float32, rate float32, rng *rand.Rand) {
	d := newDropper(rate, rng)
	for i := range dst {
		dst[i] = d.next()
	}
}

// checkSame panics unless y and dy have the same shape.
func checkSame(y, dy *dense.Matrix) {
	if y == nil {
		panic("model: Backward before Forward")
	}
	if dy == nil || dy.Rows != y.Rows || dy.Cols != y.Cols {
		panic("model: dy shape does not match the last Forward")
	}
}
