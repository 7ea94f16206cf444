package dense

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dropRef is DropWords one element at a time with an explicit comparison.
func dropRef(x []float32, words []uint64, t uint64, keep float32) (y, mask []float32) {
	y, mask = make([]float32, len(x)), make([]float32, len(x))
	for i, v := range x {
		b := (words[i/4] >> (16 * uint(i%4))) & 0xffff
		m := float32(0)
		if b >= t {
			m = keep
		}
		y[i], mask[i] = v*m, m
	}
	return y, mask
}

// TestDropWords checks DropWords, with and without the AVX2 kernel and
// with and without a mask, against dropRef bit for bit, on lengths around
// the kernel's 8-element blocks, thresholds at both ends of their range
// and inputs with ±0, infinities and NaN.
func TestDropWords(t *testing.T) {
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.SmallestNonzeroFloat32, -math.MaxFloat32}
	for _, n := range []int{0, 1, 7, 8, 9, 16, 37, 128} {
		for _, th := range []uint64{0, 1, 32768, 65535, 65536} {
			for _, avx := range []bool{false, true} {
				if avx && !hasAVX2Kernel() {
					continue
				}
				for _, withMask := range []bool{false, true} {
					rnd := rand.New(rand.NewPCG(uint64(n), th))
					x := make([]float32, n)
					for i := range x {
						x[i] = float32(rnd.NormFloat64())
						if i%5 == 3 {
							x[i] = special[i%len(special)]
						}
					}
					words := make([]uint64, (n+3)/4)
					for i := range words {
						words[i] = rnd.Uint64()
					}
					// Decisions exactly at the threshold and one below.
					if n > 9 {
						words[0] = th&0xffff | (th-1)&0xffff<<16
					}
					keep := float32(1 / (1 - float64(th)/65536))
					wantY, wantM := dropRef(x, words, th, keep)
					restore := setAVX2(avx)
					y := make([]float32, n)
					var mask []float32
					if withMask {
						mask = make([]float32, n)
					}
					DropWords(y, mask, x, words, th, keep)
					restore()
					for i := range x {
						require.Equal(t, math.Float32bits(wantY[i]), math.Float32bits(y[i]), "n %d t %d avx %v element %d", n, th, avx, i)
						if withMask {
							require.Equal(t, math.Float32bits(wantM[i]), math.Float32bits(mask[i]), "n %d t %d avx %v mask %d", n, th, avx, i)
						}
					}
				}
			}
		}
	}
	assert.Panics(t, func() { DropWords(make([]float32, 1), nil, make([]float32, 2), make([]uint64, 1), 0, 1) })
	assert.Panics(t, func() { DropWords(make([]float32, 5), nil, make([]float32, 5), make([]uint64, 1), 0, 1) })
	assert.Panics(t, func() { DropWords(make([]float32, 1), nil, make([]float32, 1), make([]uint64, 1), 1<<16+1, 1) })
}

// TestHasZero checks HasZero, with and without the AVX2 kernel, against
// the comparison x[i] == 0, with one zero (+0 or −0) at every position of
// lengths around the kernel's 8-element blocks and with NaN, infinities
// and the smallest subnormals, which are not zero.
func TestHasZero(t *testing.T) {
	nonzero := []float32{1, -2.5, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
		math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32}
	for _, n := range []int{0, 1, 7, 8, 9, 16, 17, 128} {
		for _, avx := range []bool{false, true} {
			if avx && !hasAVX2Kernel() {
				continue
			}
			x := make([]float32, n)
			for i := range x {
				x[i] = nonzero[i%len(nonzero)]
			}
			restore := setAVX2(avx)
			assert.False(t, HasZero(x), "n %d avx %v: no zero", n, avx)
			for pos := range n {
				for _, z := range []float32{0, float32(math.Copysign(0, -1))} {
					old := x[pos]
					x[pos] = z
					assert.True(t, HasZero(x), "n %d avx %v: zero %v at %d", n, avx, z, pos)
					x[pos] = old
				}
			}
			restore()
		}
	}
}
