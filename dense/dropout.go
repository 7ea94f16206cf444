package dense

import "math"

// DropWords applies inverted-dropout decisions drawn in advance to x:
//
//	y[i] = x[i]·m[i],  m[i] = keep if bᵢ ≥ t, else +0,
//
// where bᵢ, element i's 16 random bits, are bits 16·(i mod 4) to
// 16·(i mod 4)+15 of words[i/4] (four decisions per 64-bit word, the low
// bits first). Unless mask is nil it also stores m[i] in mask[i]. Each
// product is one float32 multiplication, so the result is that of the
// scalar loop element by element, whichever kernel runs (AVX2 on amd64).
// It will panic if y, or mask when not nil, is shorter than x, if words
// has fewer than ⌈len(x)/4⌉ words, or if t > 2¹⁶.
func DropWords(y, mask, x []float32, words []uint64, t uint64, keep float32) {
	DropWordsStride(y, mask, x, words, 1, t, keep)
}

// DropWordsStride is DropWords with element i's word at words[(i/4)·stride]
// instead of words[i/4]: the words of one row among several interleaved,
// as PCGFill8 leaves eight streams' numbers (stride 8).
// It will panic if y, or mask when not nil, is shorter than x, if stride
// is not positive, if words is too short for ⌈len(x)/4⌉ words stride
// apart, or if t > 2¹⁶.
func DropWordsStride(y, mask, x []float32, words []uint64, stride int, t uint64, keep float32) {
	n := len(x)
	nw := (n + 3) / 4
	if len(y) < n || (mask != nil && len(mask) < n) || stride < 1 || (nw > 0 && len(words) < (nw-1)*stride+1) || t > 1<<16 {
		panic("dense: DropWords: short slice, stride below 1 or threshold above 2¹⁶")
	}
	kb := math.Float32bits(keep)
	i := 0
	if useAVX2 && n >= 8 {
		i = n &^ 7
		var mp *float32
		if mask != nil {
			mp = &mask[0]
		}
		if stride == 1 {
			dropAVX2(&y[0], mp, &x[0], &words[0], i, uint32(t), kb)
		} else {
			dropStrideAVX2(&y[0], mp, &x[0], &words[0], stride, i, uint32(t), kb)
		}
	}
	for ; i < n; i++ {
		b := words[(i/4)*stride] >> (16 * (i % 4)) & 0xffff
		drop := (b - t) >> 63 // 1 exactly when b < t (both below 2¹⁶ + 1)
		m := math.Float32frombits(kb &^ uint32(-drop))
		if mask != nil {
			mask[i] = m
		}
		y[i] = x[i] * m
	}
}

// PCGFill8 sets words[8j+r], for j < len(words)/8 and r < 8, to the j-th
// next number of math/rand/v2's PCG in state (hi[r], lo[r]) (the state
// after Seed(hi[r], lo[r]), or after draws from it), and leaves each
// state after its draws in hi[r] and lo[r]: eight streams side by side in
// the lanes of AVX-512 registers, the same numbers as PCG.Uint64 draws
// one at a time. It reports false, doing nothing, where AVX-512 (F and
// DQ) is missing; the caller then draws the numbers itself.
// It will panic if len(words) is not a multiple of 8.
func PCGFill8(hi, lo *[8]uint64, words []uint64) bool {
	if len(words)%8 != 0 {
		panic("dense: PCGFill8: words not a multiple of 8")
	}
	if !useAVX512 {
		return false
	}
	if len(words) > 0 {
		pcgFill8AVX512(hi, lo, &words[0], len(words)/8)
	}
	return true
}

// HasZero reports whether an element of x equals 0 (+0 or −0; NaN does
// not), as the comparison x[i] == 0 in Go.
func HasZero(x []float32) bool {
	i := 0
	if useAVX2 && len(x) >= 8 {
		i = len(x) &^ 7
		if hasZeroAVX2(&x[0], i) {
			return true
		}
	}
	for _, v := range x[i:] {
		if v == 0 {
			return true
		}
	}
	return false
}
