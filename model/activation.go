package model

import (
	"math"
	"math/rand/v2"

	"gnnmpi/dense"
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
// Uint64), so Rate is rounded to a multiple of 2⁻¹⁶; the scale uses the
// rounded rate, keeping the expectation exact.
type Dropout struct {
	Rate float32

	mask []float32 // 0 or 1/(1−Rate) per element; nil when the last Forward was the identity
	buf  []float32
}

// Forward returns x with dropout applied, as a new matrix, when train is true
// and Rate > 0, drawing the mask from rng. Otherwise it returns x itself.
// It will panic if Rate is outside [0, 1), or if rng is nil when needed.
func (d *Dropout) Forward(x *dense.Matrix, train bool, rng *rand.Rand) *dense.Matrix {
	if !(d.Rate >= 0 && d.Rate < 1) {
		panic("model: dropout rate outside [0, 1)")
	}
	d.mask = nil
	if !train || d.Rate == 0 {
		return x
	}
	if rng == nil {
		panic("model: dropout needs an rng")
	}
	d.buf = dense.Grow(d.buf, len(x.Data))
	d.mask = d.buf
	dropMask(d.mask, d.Rate, rng)
	y := dense.New(x.Rows, x.Cols)
	for i, v := range x.Data {
		y.Data[i] = v * d.mask[i]
	}
	return y
}

// Backward returns dL/dx: dy times the last mask as a new matrix, or dy
// itself when the last Forward was the identity. It will panic if dy does not
// match the mask.
func (d *Dropout) Backward(dy *dense.Matrix) *dense.Matrix {
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

// dropMask fills dst with 0 (probability ≈ rate) or the matching inverse
// keep probability, drawing 16 bits per element from rng.
func dropMask(dst []float32, rate float32, rng *rand.Rand) {
	t := uint64(math.Round(float64(rate) * 65536))
	keep := float32(1 / (1 - float64(t)/65536))
	var r uint64
	for i := range dst {
		if i%4 == 0 {
			r = rng.Uint64()
		}
		if r&0xffff >= t {
			dst[i] = keep
		} else {
			dst[i] = 0
		}
		r >>= 16
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
