package dense

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// reluSpecials are the inputs where a rectifier can go wrong: both zeros,
// NaNs of either sign, infinities, subnormals and the extremes.
var reluSpecials = []float32{
	0, float32(math.Copysign(0, -1)), float32(math.NaN()), math.Float32frombits(0xffc00001),
	float32(math.Inf(1)), float32(math.Inf(-1)), math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
	math.MaxFloat32, -math.MaxFloat32, 1, -1,
}

// randReLUInput returns n values, a third of them from reluSpecials and
// the rest normal draws of either sign.
func randReLUInput(rnd *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		if rnd.IntN(3) == 0 {
			x[i] = reluSpecials[rnd.IntN(len(reluSpecials))]
		} else {
			x[i] = float32(rnd.NormFloat64())
		}
	}
	return x
}

// bitsOf returns the bits of x, so that NaNs and signed zeros compare
// exactly.
func bitsOf(x []float32) []uint32 {
	b := make([]uint32, len(x))
	for i, v := range x {
		b[i] = math.Float32bits(v)
	}
	return b
}

// TestReLU checks ReLU and ReLUGrad, with and without the AVX2 kernels,
// bit for bit against the branchy definition (+0 unless the input is > 0)
// on lengths around the kernels' 8-element blocks, special values
// included, and that they write nothing past len(x).
func TestReLU(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, 16, 31, 1000} {
		for _, avx := range []bool{false, true} {
			if avx && !hasAVX2Kernel() {
				continue
			}
			rnd := rand.New(rand.NewPCG(uint64(n), 30))
			x, dy := randReLUInput(rnd, n), randReLUInput(rnd, n)
			want, wantGrad := make([]float32, n+1), make([]float32, n+1)
			for i, v := range x {
				if v > 0 {
					want[i] = v
					wantGrad[i] = dy[i]
				}
			}
			want[n], wantGrad[n] = 7, 7 // past the end: untouched
			restore := setAVX2(avx)
			got := make([]float32, n+1)
			got[n] = 7
			ReLU(got, x)
			gotGrad := make([]float32, n+1)
			gotGrad[n] = 7
			ReLUGrad(gotGrad, append(dy, 7), got[:n])
			restore()
			assert.Equal(t, bitsOf(want), bitsOf(got), "ReLU n=%d avx=%t", n, avx)
			assert.Equal(t, bitsOf(wantGrad), bitsOf(gotGrad), "ReLUGrad n=%d avx=%t", n, avx)
		}
	}
	assert.Panics(t, func() { ReLU(make([]float32, 3), make([]float32, 4)) })
	assert.Panics(t, func() { ReLUGrad(make([]float32, 4), make([]float32, 3), make([]float32, 4)) })
}

// positiveMask is v > 0 without a branch, special values included.
func TestPositiveMask(t *testing.T) {
	vals := []float32{0, float32(math.Copysign(0, -1)), 1, -1, math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
		math.MaxFloat32, -math.MaxFloat32, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		math.Float32frombits(0xffc00000), math.Float32frombits(0x7f800001)}
	for _, v := range vals {
		want := uint32(0)
		if v > 0 {
			want = ^uint32(0)
		}
		if got := positiveMask(math.Float32bits(v)); got != want {
			t.Errorf("positiveMask(%v, bits %#x) = %#x, want %#x", v, math.Float32bits(v), got, want)
		}
	}
}

// TestMul checks Mul, with and without the AVX2 kernel, bit for bit
// against the Go product on lengths around the kernel's 8-element blocks,
// special values included (NaN, infinities, signed zeros, subnormals, and
// products that overflow or underflow), and that it writes nothing past
// len(x).
func TestMul(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, 16, 31, 1000} {
		for _, avx := range []bool{false, true} {
			if avx && !hasAVX2Kernel() {
				continue
			}
			rnd := rand.New(rand.NewPCG(uint64(n), 31))
			x, y := randReLUInput(rnd, n), randReLUInput(rnd, n)
			want := make([]float32, n+1)
			for i := range x {
				want[i] = x[i] * y[i]
			}
			want[n] = 7
			restore := setAVX2(avx)
			got := make([]float32, n+1)
			got[n] = 7
			Mul(got, x, y)
			restore()
			assert.Equal(t, bitsOf(want), bitsOf(got), "n=%d avx=%t", n, avx)
		}
	}
	assert.Panics(t, func() { Mul(make([]float32, 4), make([]float32, 4), make([]float32, 3)) })
}

// TestAdd checks Add, with and without the AVX2 kernel, bit for bit
// against the Go sum on lengths around the kernel's 8- and 32-element
// blocks, special values included, in place (dst = x) too, and that it
// writes nothing past len(x).
func TestAdd(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, 31, 32, 33, 40, 1000} {
		for _, avx := range []bool{false, true} {
			if avx && !hasAVX2Kernel() {
				continue
			}
			rnd := rand.New(rand.NewPCG(uint64(n), 37))
			x, y := randReLUInput(rnd, n), randReLUInput(rnd, n)
			want := make([]float32, n+1)
			for i := range x {
				want[i] = x[i] + y[i]
			}
			want[n] = 7
			restore := setAVX2(avx)
			got := make([]float32, n+1)
			got[n] = 7
			Add(got, x, y)
			inPlace := append([]float32(nil), x...)
			Add(inPlace, inPlace, y)
			restore()
			assert.Equal(t, bitsOf(want), bitsOf(got), "n=%d avx=%t", n, avx)
			assert.Equal(t, bitsOf(want[:n]), bitsOf(inPlace), "in place: n=%d avx=%t", n, avx)
		}
	}
	assert.Panics(t, func() { Add(make([]float32, 4), make([]float32, 4), make([]float32, 3)) })
}
