package dense

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// rowAxpyCase returns random rows (nrows×ld), indices into them (repeats
// included) and alphas with zeros of both signs.
func rowAxpyCase(rnd *rand.Rand, nrows, ld, k int) (x []float32, idx []int64, alpha []float32) {
	x = make([]float32, nrows*ld)
	for i := range x {
		x[i] = float32(rnd.NormFloat64())
	}
	idx = make([]int64, k)
	alpha = make([]float32, k)
	for i := range idx {
		idx[i] = int64(rnd.IntN(nrows))
		switch rnd.IntN(8) {
		case 0:
			alpha[i] = 0
		case 1:
			alpha[i] = float32(math.Copysign(0, -1))
		default:
			alpha[i] = float32(rnd.NormFloat64())
		}
	}
	if k > 2 {
		idx[k-1] = idx[0] // a repeated row
	}
	return x, idx, alpha
}

// TestAxpyGatherScatter checks AxpyGather and AxpyScatter, with and
// without the assembly, bit for bit against one Axpy per entry (the
// definition), over widths around the kernels' 8-, 32- and 64-column
// blocks, alphas with ±0 and a nil alpha.
func TestAxpyGatherScatter(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 29))
	const nrows, k = 37, 23
	for _, n := range []int{0, 1, 7, 8, 15, 16, 17, 31, 32, 40, 63, 64, 65, 72, 100, 128, 152, 256, 263} {
		for _, ones := range []bool{false, true} {
			for _, asm := range []bool{false, true} {
				if asm && !hasAVX2Kernel() {
					continue
				}
				t.Run(fmt.Sprintf("n=%d/ones=%t/asm=%t", n, ones, asm), func(t *testing.T) {
					defer setAVX2(asm)()
					ld := n + 3
					x, idx, alpha := rowAxpyCase(rnd, nrows, ld, k)
					if ones {
						alpha = nil
					}
					at := func(i int) float32 {
						if alpha == nil {
							return 1
						}
						return alpha[i]
					}
					// Gather: dst += Σ alpha[k]·x[idx[k]].
					dst := make([]float32, n)
					for i := range dst {
						dst[i] = float32(rnd.NormFloat64())
					}
					want := append(make([]float32, 0, n), dst...)
					for i, c := range idx {
						if a := at(i); a != 0 {
							Axpy(a, x[int(c)*ld:int(c)*ld+n], want)
						}
					}
					AxpyGather(dst, alpha, idx, x, ld)
					assert.Equal(t, want, dst, "gather")
					// GatherTo: the same sums from +0, whatever dst held
					// (bits compared: +0 and −0 differ).
					want0 := make([]float32, n)
					for i, c := range idx {
						if a := at(i); a != 0 {
							Axpy(a, x[int(c)*ld:int(c)*ld+n], want0)
						}
					}
					for _, kk := range []int{len(idx), 0} {
						if kk == 0 {
							clear(want0)
						}
						AxpyGatherTo(dst, sliceOrNil(alpha, kk), idx[:kk], x, ld)
						assert.Equal(t, floatBits(want0), floatBits(dst), "gather to, %d entries", kk)
					}
					// Scatter: row idx[k] of y += alpha[k]·v, in turn.
					v := x[:n]
					y := make([]float32, nrows*ld)
					for i := range y {
						y[i] = float32(rnd.NormFloat64())
					}
					wantY := append([]float32(nil), y...)
					for i, c := range idx {
						if a := at(i); a != 0 {
							Axpy(a, v, wantY[int(c)*ld:int(c)*ld+n])
						}
					}
					AxpyScatter(y, ld, idx, alpha, append([]float32(nil), v...))
					assert.Equal(t, wantY, y, "scatter")
				})
			}
		}
	}
}

// TestAxpyGatherScatterPanics checks the bounds and length checks.
func TestAxpyGatherScatterPanics(t *testing.T) {
	x := make([]float32, 4*10)
	dst := make([]float32, 8)
	for _, tc := range []struct {
		name  string
		idx   []int64
		alpha []float32
		ld    int
	}{
		{"row past the end", []int64{0, 4}, nil, 10},
		{"negative row", []int64{-1}, nil, 10},
		{"alpha length", []int64{0, 1}, []float32{1}, 10},
		{"stride below width", []int64{0}, nil, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Panics(t, func() { AxpyGather(dst, tc.alpha, tc.idx, x, tc.ld) })
			assert.Panics(t, func() { AxpyScatter(x, tc.ld, tc.idx, tc.alpha, dst) })
		})
	}
	// The last row fits exactly when its n elements end the slice.
	assert.NotPanics(t, func() { AxpyGather(dst, nil, []int64{3}, x[:38], 10) })
}

// TestAxpyScatterRows checks AxpyScatterRows, with and without the
// assembly, bit for bit against AxpyScatter row by row, on CSR rows with
// an empty row, over widths around the kernels' blocks, and its checks.
func TestAxpyScatterRows(t *testing.T) {
	rnd := rand.New(rand.NewPCG(2, 29))
	const nrows, rows = 19, 9
	for _, n := range []int{1, 8, 13, 32, 45} {
		for _, ones := range []bool{false, true} {
			for _, asm := range []bool{false, true} {
				if asm && !hasAVX2Kernel() {
					continue
				}
				t.Run(fmt.Sprintf("n=%d/ones=%t/asm=%t", n, ones, asm), func(t *testing.T) {
					defer setAVX2(asm)()
					ld, ldy := n+5, n+2
					_, idx, alpha := rowAxpyCase(rnd, nrows, ld, 40)
					if ones {
						alpha = nil
					}
					indptr := []int64{2, 5, 9, 9, 16, 20, 27, 31, 35, 38} // row 2 empty; entries 0, 1, 38, 39 unused
					y := make([]float32, (rows-1)*ldy+n)
					dst := make([]float32, nrows*ld)
					for i := range y {
						y[i] = float32(rnd.NormFloat64())
					}
					for i := range dst {
						dst[i] = float32(rnd.NormFloat64())
					}
					want := append(make([]float32, 0, len(dst)), dst...)
					for i := range rows {
						var a []float32
						if alpha != nil {
							a = alpha[indptr[i]:indptr[i+1]]
						}
						AxpyScatter(want, ld, idx[indptr[i]:indptr[i+1]], a, y[i*ldy:i*ldy+n])
					}
					tiled := append([]float32(nil), dst...)
					AxpyScatterRows(dst, ld, y, ldy, n, indptr, idx, alpha)
					assert.Equal(t, want, dst)
					// The same rows checked once and added in tiles of
					// columns: the same sums, bit for bit.
					r := NewScatterRows(indptr, idx, alpha)
					for lo := 0; lo < n; lo += 16 {
						w := min(16, n-lo)
						r.AddTo(tiled[lo:], ld, y[lo:], ldy, w)
					}
					assert.Equal(t, want, tiled, "ScatterRows in tiles")
				})
			}
		}
	}
	dst, y := make([]float32, 4*8), make([]float32, 2*8)
	idx := []int64{0, 1, 2}
	for _, tc := range []struct {
		name   string
		indptr []int64
		idx    []int64
		ldy, n int
	}{
		{"indptr decreases", []int64{0, 2, 1}, idx, 8, 8},
		{"indptr past idx", []int64{0, 2, 4}, idx, 8, 8},
		{"row of y past the end", []int64{0, 1, 2}, idx, 9, 8},
		{"n above ldy", []int64{0, 1, 2}, idx, 4, 8},
		{"row of dst past the end", []int64{0, 1, 2}, []int64{0, 4, 1}, 8, 8},
		{"negative row of dst", []int64{0, 1, 2}, []int64{0, -1, 1}, 8, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Panics(t, func() { AxpyScatterRows(dst, 8, y, tc.ldy, tc.n, tc.indptr, tc.idx, nil) })
			assert.Panics(t, func() { NewScatterRows(tc.indptr, tc.idx, nil).AddTo(dst, 8, y, tc.ldy, tc.n) })
		})
	}
	assert.Panics(t, func() { NewScatterRows([]int64{0, 1, 2}, idx, []float32{1}) }, "len(alpha) != len(idx)")
	// AddTo checks its own dst: row 2 fits in dst[8:] (24 elements), not
	// in dst[9:].
	r := NewScatterRows([]int64{0, 1}, []int64{2}, nil)
	assert.NotPanics(t, func() { r.AddTo(dst[8:], 8, y, 8, 8) })
	assert.Panics(t, func() { r.AddTo(dst[9:], 8, y, 8, 8) })
}

// sliceOrNil returns a[:k], or nil for a nil a.
func sliceOrNil(a []float32, k int) []float32 {
	if a == nil {
		return nil
	}
	return a[:k]
}

// floatBits returns the bit patterns of x.
func floatBits(x []float32) []uint32 {
	b := make([]uint32, len(x))
	for i, f := range x {
		b[i] = math.Float32bits(f)
	}
	return b
}
