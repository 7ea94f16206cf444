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
