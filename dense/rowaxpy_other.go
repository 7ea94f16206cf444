//go:build !amd64

package dense

// useAVX2 is false off amd64: the row axpys run in Go.
var useAVX2 = false

func gatherAVX2(dst *float32, n int, x *float32, ld int, idx *int64, alpha *float32, k int, zero bool) {
	panic("dense: no AVX2 kernel")
}

func scatterAVX2(dst *float32, ld int, x *float32, n int, idx *int64, alpha *float32, k int) {
	panic("dense: no AVX2 kernel")
}

func adamAVX2(w, grad, m, v *float32, n int, coef *[8]float32) {
	panic("dense: no AVX2 kernel")
}

func reluAVX2(dst, x *float32, n int) {
	panic("dense: no AVX2 kernel")
}

func reluGradAVX2(dst, dy, y *float32, n int) {
	panic("dense: no AVX2 kernel")
}

func addAVX2(dst, x, y *float32, n int) {
	panic("dense: no AVX2 kernel")
}

func mulAVX2(dst, x, y *float32, n int) {
	panic("dense: no AVX2 kernel")
}

func dropAVX2(y, mask, x *float32, w *uint64, n int, t, keep uint32) {
	panic("dense: no AVX2 kernel")
}

func hasZeroAVX2(x *float32, n int) bool {
	panic("dense: no AVX2 kernel")
}

// useAVX512 is false off amd64.
var useAVX512 = false

func pcgFill8AVX512(hi, lo *[8]uint64, words *uint64, n int) {
	panic("dense: no AVX-512 kernel")
}

func dropStrideAVX2(y, mask, x *float32, w *uint64, stride, n int, t, keep uint32) {
	panic("dense: no AVX2 kernel")
}
