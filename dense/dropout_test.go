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

// setAVX512 sets useAVX512 to on and returns the function restoring it.
func setAVX512(on bool) func() {
	old := useAVX512
	useAVX512 = on
	return func() { useAVX512 = old }
}

// PCGFill8 draws math/rand/v2's PCG numbers, lane by lane, and leaves the
// states after them, for states with the carry of the LCG's low half and
// high bits set, over 0, 1 and many steps; without AVX-512 it reports
// false and changes nothing.
func TestPCGFill8(t *testing.T) {
	var hi, lo [8]uint64
	seeds := [8][2]uint64{{0, 0}, {1, 2}, {^uint64(0), ^uint64(0)}, {0x9e3779b97f4a7c15, 7},
		{1 << 63, ^uint64(0) - 5}, {12345, 1 << 40}, {^uint64(0), 0}, {0, ^uint64(0)}}
	for r, s := range seeds {
		hi[r], lo[r] = s[0], s[1]
	}
	for _, steps := range []int{0, 1, 33} {
		h, l := hi, lo
		words := make([]uint64, 8*steps)
		if !PCGFill8(&h, &l, words) {
			restore := setAVX512(false)
			assert.False(t, PCGFill8(&h, &l, words))
			restore()
			assert.Equal(t, hi, h, "no AVX-512: states unchanged")
			t.Skip("no AVX-512 here")
		}
		for r, s := range seeds {
			ref := rand.NewPCG(s[0], s[1])
			for j := range steps {
				require.Equal(t, ref.Uint64(), words[8*j+r], "steps %d lane %d draw %d", steps, r, j)
			}
			// The state left is the reference's: the next numbers agree.
			next := make([]uint64, 8)
			h2, l2 := h, l
			require.True(t, PCGFill8(&h2, &l2, next))
			require.Equal(t, ref.Uint64(), next[r], "steps %d lane %d: state after", steps, r)
		}
	}
	assert.Panics(t, func() { PCGFill8(&hi, &lo, make([]uint64, 7)) })
}

// DropWordsStride reads element i's bits from words[(i/4)·stride]: it
// equals DropWords on the row's words gathered, bit for bit, with and
// without the AVX2 kernel and a mask.
func TestDropWordsStride(t *testing.T) {
	for _, n := range []int{1, 8, 13, 128} {
		for _, stride := range []int{1, 3, 8} {
			for _, avx := range []bool{false, true} {
				if avx && !hasAVX2Kernel() {
					continue
				}
				rnd := rand.New(rand.NewPCG(uint64(n), uint64(stride)))
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(rnd.NormFloat64())
				}
				nw := (n + 3) / 4
				words := make([]uint64, (nw-1)*stride+1)
				row := make([]uint64, nw)
				for i := range words {
					words[i] = rnd.Uint64()
				}
				for j := range row {
					row[j] = words[j*stride]
				}
				wantY, wantM := dropRef(x, row, 20000, 1.5)
				restore := setAVX2(avx)
				y, mask := make([]float32, n), make([]float32, n)
				DropWordsStride(y, mask, x, words, stride, 20000, 1.5)
				y2 := make([]float32, n)
				DropWordsStride(y2, nil, x, words, stride, 20000, 1.5)
				restore()
				assert.Equal(t, wantY, y, "n %d stride %d avx %v", n, stride, avx)
				assert.Equal(t, wantM, mask, "n %d stride %d avx %v: mask", n, stride, avx)
				assert.Equal(t, wantY, y2, "n %d stride %d avx %v: no mask", n, stride, avx)
			}
		}
	}
	assert.Panics(t, func() { DropWordsStride(make([]float32, 8), nil, make([]float32, 8), make([]uint64, 2), 0, 0, 1) })
	assert.Panics(t, func() { DropWordsStride(make([]float32, 8), nil, make([]float32, 8), make([]uint64, 4), 8, 0, 1) })
}
