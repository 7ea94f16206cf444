package model

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/dense"
	"gnnmpi/internal/testutil"
)

// awayFromZero returns an r×c matrix with entries in ±[0.1, 1), so that
// finite differences with eps ≤ 1e-2 never cross the ReLU kink.
func awayFromZero(seed uint64, r, c int) *dense.Matrix {
	m := randMatrix(testRNG(seed), r, c)
	for i, v := range m.Data {
		m.Data[i] = float32(math.Copysign(0.1+0.9*math.Abs(float64(v)), float64(v)))
	}
	return m
}

// elementwise is a layer-free op with a backward pass.
type elementwise struct {
	fwd func(x *dense.Matrix) *dense.Matrix
	bwd func(dy *dense.Matrix) *dense.Matrix
}

func TestActivationGradients(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   func() elementwise
	}{
		{"relu", func() elementwise { r := &ReLU{}; return elementwise{r.Forward, r.Backward} }},
		{"elu", func() elementwise { u := &ELU{}; return elementwise{u.Forward, u.Backward} }},
		{"dropout", func() elementwise {
			d := &Dropout{Rate: 0.4}
			// The same seed on every call fixes the mask.
			return elementwise{func(x *dense.Matrix) *dense.Matrix { return d.Forward(x, true, testRNG(5)) }, d.Backward}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := tc.op()
			x := awayFromZero(1, 6, 5)
			r := randMatrix(testRNG(2), 6, 5)
			f := func() float64 { return weightedSum(op.fwd(x), r) }
			op.fwd(x)
			dx := op.bwd(r)
			testutil.GradCheck(t, "x", f, x.Data, dx.Data, fdEps, fdTol)
		})
	}
}

func TestActivationValues(t *testing.T) {
	x := &dense.Matrix{Rows: 1, Cols: 3, Data: []float32{-1, 0, 2}}
	assert.Equal(t, []float32{0, 0, 2}, (&ReLU{}).Forward(x).Data)
	assert.InDeltaSlice(t, []float32{float32(math.Exp(-1) - 1), 0, 2}, (&ELU{}).Forward(x).Data, 1e-7)
	assert.Equal(t, []float32{-1, 0, 2}, x.Data, "input unchanged")
}

func TestDropout(t *testing.T) {
	x := dense.New(100, 100)
	for i := range x.Data {
		x.Data[i] = 1
	}
	for _, tc := range []struct {
		name  string
		rate  float32
		train bool
	}{
		{"eval", 0.5, false},
		{"rate0", 0, true},
		{"rate0.5", 0.5, true},
		{"rate0.1", 0.1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &Dropout{Rate: tc.rate}
			y := d.Forward(x, tc.train, testRNG(3))
			if !tc.train || tc.rate == 0 {
				assert.Same(t, x, y, "identity returns x itself")
				assert.Same(t, x, d.Backward(x))
				return
			}
			kept, sum := 0, 0.0
			for _, v := range y.Data {
				if v != 0 {
					kept++
					assert.InDelta(t, 1/(1-tc.rate), v, 1e-4)
				}
				sum += float64(v)
			}
			// 10⁴ Bernoulli draws: the kept fraction is within 4σ ≤ 0.02 of 1−rate.
			assert.InDelta(t, 1-tc.rate, float64(kept)/1e4, 0.02)
			assert.InDelta(t, 1, sum/1e4, 0.03, "inverted scaling keeps the mean")
			// Same seed, same mask.
			require.Equal(t, y.Data, (&Dropout{Rate: tc.rate}).Forward(x, true, testRNG(3)).Data)
		})
	}
	assert.Panics(t, func() { (&Dropout{Rate: 1}).Forward(x, true, testRNG(0)) })
}

// Mask draws what Forward draws: the same mask, the same rng stream after,
// with and without SkipZeros.
func TestDropoutMask(t *testing.T) {
	x := randMatrix(testRNG(5), 17, 9)
	for i := 0; i < len(x.Data); i += 3 {
		x.Data[i] = 0
	}
	for _, skip := range []bool{false, true} {
		d := &Dropout{Rate: 0.3, SkipZeros: skip}
		r1, r2 := testRNG(8), testRNG(8)
		y := d.Forward(x, true, r1)
		in := x.Data
		if !skip {
			in = nil // not read
		}
		m := (&Dropout{Rate: 0.3, SkipZeros: skip}).Mask(nil, x.Rows, x.Cols, in, nil, true, r2)
		require.Len(t, m, len(x.Data))
		for i, v := range x.Data {
			require.Equal(t, y.Data[i], v*m[i], "skip %v element %d", skip, i)
		}
		require.Equal(t, r1.Uint64(), r2.Uint64(), "the rng streams stay in step")
	}
	assert.Nil(t, (&Dropout{Rate: 0.3}).Mask(nil, 2, 2, nil, nil, false, nil))
	assert.Nil(t, (&Dropout{}).Mask(nil, 2, 2, nil, nil, true, nil))
}

// Forward's row loops (eight rows' draws side by side, a row's draws
// ahead, four decisions per draw) draw what Mask's one-decision-at-a-time
// loop draws, for row lengths around multiples of four and past a chunk
// of draws, 19 rows (two blocks of eight and three more), and zeros that
// shift the draws off the fours or keep a block of eight off the side-by-
// side path, with and without a kept mask; without one, Backward panics.
func TestDropoutRowDraws(t *testing.T) {
	for _, cols := range []int{1, 3, 4, 5, 8, 13, 128, 300} {
		for _, zeros := range []string{"none", "every3", "random", "leading", "row3"} {
			x := randMatrix(testRNG(uint64(cols)), 19, cols)
			zr := testRNG(11)
			for i := range x.Data {
				c := i % cols
				switch {
				case zeros == "every3" && i%3 == 1,
					zeros == "random" && zr.Float64() < 0.3,
					zeros == "leading" && c < 2,
					zeros == "row3" && i/cols == 3 && c == cols-1:
					x.Data[i] = 0
				}
			}
			for _, skip := range []bool{false, true} {
				for _, noMask := range []bool{false, true} {
					d := &Dropout{Rate: 0.3, SkipZeros: skip, noMask: noMask}
					y := d.Forward(x, true, testRNG(8))
					in := x.Data
					m := (&Dropout{Rate: 0.3, SkipZeros: skip}).Mask(nil, x.Rows, x.Cols, in, nil, true, testRNG(8))
					for i, v := range x.Data {
						require.Equal(t, v*m[i], y.Data[i], "cols %d zeros %s skip %v noMask %v element %d", cols, zeros, skip, noMask, i)
					}
					ones := dense.New(x.Rows, x.Cols)
					for i := range ones.Data {
						ones.Data[i] = 1
					}
					if noMask {
						assert.Panics(t, func() { d.Backward(ones) })
					} else {
						require.Equal(t, m, d.Backward(ones).Data, "cols %d zeros %s skip %v", cols, zeros, skip)
					}
				}
			}
		}
	}
}
