package dense

import "math"

// ReLU sets dst[i] = x[i] where x[i] > 0 and +0 elsewhere (−0, NaN and
// negatives included), for i < len(x): max(x, 0) with the bits of x
// where it is kept. On amd64 with AVX2, 8 elements at a time; the bits
// are the same as the Go loop's.
// It will panic if dst is shorter than x.
func ReLU(dst, x []float32) {
	n := len(x)
	dst = dst[:n]
	k := 0
	if useAVX2 && n >= 8 {
		k = n &^ 7
		reluAVX2(&dst[0], &x[0], k)
	}
	for i := k; i < n; i++ {
		b := math.Float32bits(x[i])
		dst[i] = math.Float32frombits(b & positiveMask(b))
	}
}

// ReLUGrad sets dst[i] = dy[i] where y[i] > 0 and +0 elsewhere, for
// i < len(y): ReLU's backward pass from its output y (y > 0 exactly where
// the input was), with the bits of dy where it passes. On amd64 with
// AVX2, 8 elements at a time; the bits are the same as the Go loop's.
// It will panic if dst or dy is shorter than y.
func ReLUGrad(dst, dy, y []float32) {
	n := len(y)
	dst, dy = dst[:n], dy[:n]
	k := 0
	if useAVX2 && n >= 8 {
		k = n &^ 7
		reluGradAVX2(&dst[0], &dy[0], &y[0], k)
	}
	for i := k; i < n; i++ {
		dst[i] = math.Float32frombits(math.Float32bits(dy[i]) & positiveMask(math.Float32bits(y[i])))
	}
}

// Mul sets dst[i] = x[i]·y[i] for i < len(x), each product rounded to
// float32 as in a Go loop (the bits are the same; on amd64 with AVX2, 8
// elements at a time).
// It will panic if dst or y is shorter than x.
func Mul(dst, x, y []float32) {
	n := len(x)
	dst, y = dst[:n], y[:n]
	k := 0
	if useAVX2 && n >= 8 {
		k = n &^ 7
		mulAVX2(&dst[0], &x[0], &y[0], k)
	}
	for i := k; i < n; i++ {
		dst[i] = x[i] * y[i]
	}
}

// Add sets dst[i] = x[i] + y[i] for i < len(x), each sum rounded to
// float32 as in a Go loop (the bits are the same; on amd64 with AVX2, 8
// elements at a time). dst may be x or y.
// It will panic if dst or y is shorter than x.
func Add(dst, x, y []float32) {
	n := len(x)
	dst, y = dst[:n], y[:n]
	k := 0
	if useAVX2 && n >= 8 {
		k = n &^ 7
		addAVX2(&dst[0], &x[0], &y[0], k)
	}
	for i := k; i < n; i++ {
		dst[i] = x[i] + y[i]
	}
}

// positiveMask returns all ones when the float32 with bits b is > 0 (in
// (0, +Inf]; not NaN, not −0), else 0, without a branch: ReLU's condition
// is a coin flip the branch predictor misses half the time.
func positiveMask(b uint32) uint32 {
	// b−1 < 0x7f800000 exactly for 0 < b ≤ 0x7f800000; the difference
	// below is negative (top bit set) exactly then.
	return uint32(-((uint64(b-1) - 0x7f800000) >> 63))
}
