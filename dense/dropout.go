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
	n := len(x)
	if len(y) < n || (mask != nil && len(mask) < n) || len(words) < (n+3)/4 || t > 1<<16 {
		panic("dense: DropWords: short slice or threshold above 2¹⁶")
	}
	kb := math.Float32bits(keep)
	i := 0
	if useAVX2 && n >= 8 {
		i = n &^ 7
		var mp *float32
		if mask != nil {
			mp = &mask[0]
		}
		dropAVX2(&y[0], mp, &x[0], &words[0], i, uint32(t), kb)
	}
	for ; i < n; i++ {
		b := words[i/4] >> (16 * (i % 4)) & 0xffff
		drop := (b - t) >> 63 // 1 exactly when b < t (both below 2¹⁶ + 1)
		m := math.Float32frombits(kb &^ uint32(-drop))
		if mask != nil {
			mask[i] = m
		}
		y[i] = x[i] * m
	}
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
