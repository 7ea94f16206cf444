package dense

// useAVX2 selects the assembly row axpys; tests turn it off to compare
// them with the Go ones.
var useAVX2 = hasAVX2()

// hasAVX2 reports whether the CPU has AVX2 and the OS saves the YMM
// registers (CPUID leaf 1 OSXSAVE and AVX, XCR0 bits 1 and 2, leaf 7 AVX2).
func hasAVX2() bool {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const osxsave, avx = 1 << 27, 1 << 28
	if ecx1&osxsave == 0 || ecx1&avx == 0 {
		return false
	}
	if xcr0, _ := xgetbv(); xcr0&6 != 6 {
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	return ebx7&(1<<5) != 0
}

// cpuid executes CPUID with EAX = leaf and ECX = sub.
//
//go:noescape
func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

// xgetbv returns XCR0.
//
//go:noescape
func xgetbv() (eax, edx uint32)

// gatherAVX2 is AxpyGather's kernel over n columns, n a positive multiple
// of 8; alpha nil means ones. With zero set it starts from +0 instead of
// dst's elements (AxpyGatherTo).
//
//go:noescape
func gatherAVX2(dst *float32, n int, x *float32, ld int, idx *int64, alpha *float32, k int, zero bool)

// scatterAVX2 is AxpyScatter's kernel over n columns, n a positive
// multiple of 8; alpha nil means ones.
//
//go:noescape
func scatterAVX2(dst *float32, ld int, x *float32, n int, idx *int64, alpha *float32, k int)

// adamAVX2 is AdamUpdate's kernel over n elements, n a positive multiple
// of 8; coef holds wd, b1, 1−b1, b2, 1−b2, bc2s, eps and step.
//
//go:noescape
func adamAVX2(w, grad, m, v *float32, n int, coef *[8]float32)

// reluAVX2 is ReLU's kernel over n elements, n a positive multiple of 8.
//
//go:noescape
func reluAVX2(dst, x *float32, n int)

// reluGradAVX2 is ReLUGrad's kernel over n elements, n a positive
// multiple of 8.
//
//go:noescape
func reluGradAVX2(dst, dy, y *float32, n int)

// addAVX2 is Add's kernel over n elements, n a positive multiple of 8.
//
//go:noescape
func addAVX2(dst, x, y *float32, n int)

// mulAVX2 is Mul's kernel over n elements, n a positive multiple of 8.
//
//go:noescape
func mulAVX2(dst, x, y *float32, n int)

// dropAVX2 is DropWords' kernel over n elements, n a positive multiple of
// 8, the 16-bit decisions read from w in memory order (amd64 is little
// endian: word j's low bits first); mask nil writes no mask.
//
//go:noescape
func dropAVX2(y, mask, x *float32, w *uint64, n int, t, keep uint32)

// hasZeroAVX2 is HasZero's kernel over n elements, n a positive multiple
// of 8.
//
//go:noescape
func hasZeroAVX2(x *float32, n int) bool

// useAVX512 selects PCGFill8's kernel; tests turn it off.
var useAVX512 = hasAVX512()

// hasAVX512 reports whether the CPU has AVX-512 F and DQ and the OS saves
// the opmask and ZMM registers (XCR0 bits 1, 2, 5, 6 and 7).
func hasAVX512() bool {
	if !hasAVX2() {
		return false
	}
	if xcr0, _ := xgetbv(); xcr0&0xe6 != 0xe6 {
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	const f, dq = 1 << 16, 1 << 17
	return ebx7&f != 0 && ebx7&dq != 0
}

// pcgFill8AVX512 is PCGFill8's kernel over n > 0 steps.
//
//go:noescape
func pcgFill8AVX512(hi, lo *[8]uint64, words *uint64, n int)

// dropStrideAVX2 is DropWords' kernel over n elements, n a positive
// multiple of 8, with the words of the row stride words apart; mask nil
// writes no mask.
//
//go:noescape
func dropStrideAVX2(y, mask, x *float32, w *uint64, stride, n int, t, keep uint32)
