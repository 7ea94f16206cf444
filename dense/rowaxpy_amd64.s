#include "textflag.h"

// func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL leaf+0(FP), AX
	MOVL sub+4(FP), CX
	CPUID
	MOVL AX, eax+8(FP)
	MOVL BX, ebx+12(FP)
	MOVL CX, ecx+16(FP)
	MOVL DX, edx+20(FP)
	RET

// func xgetbv() (eax, edx uint32)
TEXT ·xgetbv(SB), NOSPLIT, $0-8
	MOVL $0, CX
	XGETBV
	MOVL AX, eax+0(FP)
	MOVL DX, edx+4(FP)
	RET

// func gatherAVX2(dst *float32, n int, x *float32, ld int, idx *int64, alpha *float32, k int, zero bool)
//
// For each block of 64 (then 8) columns, the block of dst (+0 when zero
// is set: dst is then only written) is held in
// Y0–Y7 while every row idx[k] is added: dst += alpha[k]·x[idx[k]·ld + j],
// VMULPS then VADDPS, so each product is rounded before it is added.
// The block of row idx[k+8] is prefetched while row idx[k] is added.
TEXT ·gatherAVX2(SB), NOSPLIT, $0-57
	MOVQ dst+0(FP), DI
	MOVQ n+8(FP), CX
	MOVQ x+16(FP), SI
	MOVQ ld+24(FP), R8
	SHLQ $2, R8 // row stride in bytes
	MOVQ idx+32(FP), R9
	MOVQ alpha+40(FP), R10
	MOVQ k+48(FP), R11
	MOVQ R11, R13
	SUBQ $8, R13 // the last k whose row idx[k+8] exists, plus one
	MOVBLZX zero+56(FP), R15
g64:
	CMPQ CX, $64
	JLT  g8
	TESTL R15, R15
	JZ   g64load
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	JMP  g64go
g64load:
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7
g64go:
	XORQ BX, BX
g64loop:
	CMPQ BX, R11
	JGE  g64store
	MOVQ (R9)(BX*8), DX
	IMULQ R8, DX
	ADDQ SI, DX // &x[idx[k]·ld] + block offset
	CMPQ BX, R13
	JGE  g64nopf
	MOVQ 64(R9)(BX*8), R14
	IMULQ R8, R14
	ADDQ SI, R14
	PREFETCHT0 0(R14)
	PREFETCHT0 64(R14)
	PREFETCHT0 128(R14)
	PREFETCHT0 192(R14)
g64nopf:
	TESTQ R10, R10
	JZ   g64ones
	MOVL (R10)(BX*4), R12
	TESTL $0x7fffffff, R12
	JZ   g64next // alpha[k] is ±0: skipped
	VBROADCASTSS (R10)(BX*4), Y8
	VMULPS 0(DX), Y8, Y9
	VADDPS Y9, Y0, Y0
	VMULPS 32(DX), Y8, Y10
	VADDPS Y10, Y1, Y1
	VMULPS 64(DX), Y8, Y9
	VADDPS Y9, Y2, Y2
	VMULPS 96(DX), Y8, Y10
	VADDPS Y10, Y3, Y3
	VMULPS 128(DX), Y8, Y9
	VADDPS Y9, Y4, Y4
	VMULPS 160(DX), Y8, Y10
	VADDPS Y10, Y5, Y5
	VMULPS 192(DX), Y8, Y9
	VADDPS Y9, Y6, Y6
	VMULPS 224(DX), Y8, Y10
	VADDPS Y10, Y7, Y7
	JMP  g64next
g64ones:
	VADDPS 0(DX), Y0, Y0
	VADDPS 32(DX), Y1, Y1
	VADDPS 64(DX), Y2, Y2
	VADDPS 96(DX), Y3, Y3
	VADDPS 128(DX), Y4, Y4
	VADDPS 160(DX), Y5, Y5
	VADDPS 192(DX), Y6, Y6
	VADDPS 224(DX), Y7, Y7
g64next:
	INCQ BX
	JMP  g64loop
g64store:
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	ADDQ $256, DI
	ADDQ $256, SI
	SUBQ $64, CX
	JMP  g64
g8:
	CMPQ CX, $8
	JLT  gdone
	VXORPS Y0, Y0, Y0
	TESTL R15, R15
	JNZ  g8go
	VMOVUPS 0(DI), Y0
g8go:
	XORQ BX, BX
g8loop:
	CMPQ BX, R11
	JGE  g8store
	MOVQ (R9)(BX*8), DX
	IMULQ R8, DX
	ADDQ SI, DX // &x[idx[k]·ld] + block offset
	CMPQ BX, R13
	JGE  g8nopf
	MOVQ 64(R9)(BX*8), R14
	IMULQ R8, R14
	ADDQ SI, R14
	PREFETCHT0 0(R14)
g8nopf:
	TESTQ R10, R10
	JZ   g8ones
	MOVL (R10)(BX*4), R12
	TESTL $0x7fffffff, R12
	JZ   g8next // alpha[k] is ±0: skipped
	VBROADCASTSS (R10)(BX*4), Y8
	VMULPS 0(DX), Y8, Y9
	VADDPS Y9, Y0, Y0
	JMP  g8next
g8ones:
	VADDPS 0(DX), Y0, Y0
g8next:
	INCQ BX
	JMP  g8loop
g8store:
	VMOVUPS Y0, 0(DI)
	ADDQ $32, DI
	ADDQ $32, SI
	SUBQ $8, CX
	JMP  g8
gdone:
	VZEROUPPER
	RET

// func scatterAVX2(dst *float32, ld int, x *float32, n int, idx *int64, alpha *float32, k int)
//
// For k = 0, 1, … in turn, row idx[k] of dst gets alpha[k]·x over n
// columns, 32 (then 8) at a time: VMULPS then VADDPS, as in Axpy.
// Row idx[k+2] is prefetched while row idx[k] is updated. When n is 32
// (sparseTMulAddTerms' tiles) x is loaded once and kept in Y4–Y7.
TEXT ·scatterAVX2(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ ld+8(FP), R8
	SHLQ $2, R8 // row stride in bytes
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), R13
	MOVQ idx+32(FP), R9
	MOVQ alpha+40(FP), R10
	MOVQ k+48(FP), R11
	MOVQ R11, R15
	SUBQ $2, R15 // the last k whose row idx[k+2] exists, plus one
	XORQ BX, BX
	CMPQ R13, $32
	JEQ  f32 // one 32-column tile: x stays in Y4–Y7
sloop:
	CMPQ BX, R11
	JGE  sdone
	MOVQ (R9)(BX*8), DX
	IMULQ R8, DX
	ADDQ DI, DX // &dst[idx[k]·ld]
	MOVQ SI, AX
	MOVQ R13, CX
	MOVQ DX, R14 // the row to prefetch: idx[k+D], else idx[k] again
	CMPQ BX, R15
	JGE  spf
	MOVQ 16(R9)(BX*8), R14
	IMULQ R8, R14
	ADDQ DI, R14
spf:
	TESTQ R10, R10
	JZ   s32ones
	MOVL (R10)(BX*4), R12
	TESTL $0x7fffffff, R12
	JZ   snext // alpha[k] is ±0: skipped
	VBROADCASTSS (R10)(BX*4), Y8
s32:
	CMPQ CX, $32
	JLT  s8
	PREFETCHT0 0(R14)
	PREFETCHT0 64(R14)
	VMULPS 0(AX), Y8, Y0
	VMULPS 32(AX), Y8, Y1
	VMULPS 64(AX), Y8, Y2
	VMULPS 96(AX), Y8, Y3
	VADDPS 0(DX), Y0, Y0
	VADDPS 32(DX), Y1, Y1
	VADDPS 64(DX), Y2, Y2
	VADDPS 96(DX), Y3, Y3
	VMOVUPS Y0, 0(DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, 96(DX)
	ADDQ $128, AX
	ADDQ $128, DX
	ADDQ $128, R14
	SUBQ $32, CX
	JMP  s32
s8:
	CMPQ CX, $8
	JLT  snext
	PREFETCHT0 0(R14)
	VMULPS 0(AX), Y8, Y0
	VADDPS 0(DX), Y0, Y0
	VMOVUPS Y0, 0(DX)
	ADDQ $32, AX
	ADDQ $32, DX
	ADDQ $32, R14
	SUBQ $8, CX
	JMP  s8
s32ones:
	CMPQ CX, $32
	JLT  s8ones
	PREFETCHT0 0(R14)
	PREFETCHT0 64(R14)
	VMOVUPS 0(AX), Y0
	VMOVUPS 32(AX), Y1
	VMOVUPS 64(AX), Y2
	VMOVUPS 96(AX), Y3
	VADDPS 0(DX), Y0, Y0
	VADDPS 32(DX), Y1, Y1
	VADDPS 64(DX), Y2, Y2
	VADDPS 96(DX), Y3, Y3
	VMOVUPS Y0, 0(DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, 96(DX)
	ADDQ $128, AX
	ADDQ $128, DX
	ADDQ $128, R14
	SUBQ $32, CX
	JMP  s32ones
s8ones:
	CMPQ CX, $8
	JLT  snext
	PREFETCHT0 0(R14)
	VMOVUPS 0(AX), Y0
	VADDPS 0(DX), Y0, Y0
	VMOVUPS Y0, 0(DX)
	ADDQ $32, AX
	ADDQ $32, DX
	ADDQ $32, R14
	SUBQ $8, CX
	JMP  s8ones
snext:
	INCQ BX
	JMP  sloop
f32:
	VMOVUPS 0(SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
floop:
	CMPQ BX, R11
	JGE  sdone
	MOVQ (R9)(BX*8), DX
	IMULQ R8, DX
	ADDQ DI, DX // &dst[idx[k]·ld]
	MOVQ DX, R14
	CMPQ BX, R15
	JGE  fpf
	MOVQ 16(R9)(BX*8), R14
	IMULQ R8, R14
	ADDQ DI, R14
fpf:
	PREFETCHT0 0(R14)
	PREFETCHT0 64(R14)
	TESTQ R10, R10
	JZ   fones
	MOVL (R10)(BX*4), R12
	TESTL $0x7fffffff, R12
	JZ   fnext // alpha[k] is ±0: skipped
	VBROADCASTSS (R10)(BX*4), Y8
	VMULPS Y4, Y8, Y0
	VMULPS Y5, Y8, Y1
	VMULPS Y6, Y8, Y2
	VMULPS Y7, Y8, Y3
	VADDPS 0(DX), Y0, Y0
	VADDPS 32(DX), Y1, Y1
	VADDPS 64(DX), Y2, Y2
	VADDPS 96(DX), Y3, Y3
	VMOVUPS Y0, 0(DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, 96(DX)
	JMP  fnext
fones:
	VADDPS 0(DX), Y4, Y0
	VADDPS 32(DX), Y5, Y1
	VADDPS 64(DX), Y6, Y2
	VADDPS 96(DX), Y7, Y3
	VMOVUPS Y0, 0(DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, 96(DX)
fnext:
	INCQ BX
	JMP  floop
sdone:
	VZEROUPPER
	RET

// func adamAVX2(w, grad, m, v *float32, n int, coef *[8]float32)
//
// AdamUpdate over n elements, 8 at a time, each operation rounded as in
// the Go loop: VMULPS then VADDPS (no FMA), VSQRTPS, VDIVPS.
TEXT ·adamAVX2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), DI
	MOVQ grad+8(FP), SI
	MOVQ m+16(FP), R8
	MOVQ v+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ coef+40(FP), R10
	VBROADCASTSS 0(R10), Y8  // wd
	VBROADCASTSS 4(R10), Y9  // b1
	VBROADCASTSS 8(R10), Y10 // 1−b1
	VBROADCASTSS 12(R10), Y11 // b2
	VBROADCASTSS 16(R10), Y12 // 1−b2
	VBROADCASTSS 20(R10), Y13 // bc2s
	VBROADCASTSS 24(R10), Y14 // eps
	VBROADCASTSS 28(R10), Y15 // step
	XORQ AX, AX
aloop:
	CMPQ AX, CX
	JGE  adone
	VMOVUPS (DI)(AX*4), Y0     // w
	VMULPS  Y0, Y8, Y1         // wd·w
	VADDPS  (SI)(AX*4), Y1, Y1 // g′ = g + wd·w
	VMULPS  (R8)(AX*4), Y9, Y2 // b1·m
	VMULPS  Y1, Y10, Y3        // (1−b1)·g′
	VADDPS  Y3, Y2, Y2         // m
	VMOVUPS Y2, (R8)(AX*4)
	VMULPS  (R9)(AX*4), Y11, Y3 // b2·v
	VMULPS  Y1, Y12, Y4         // (1−b2)·g′
	VMULPS  Y1, Y4, Y4          // ((1−b2)·g′)·g′
	VADDPS  Y4, Y3, Y3          // v
	VMOVUPS Y3, (R9)(AX*4)
	VSQRTPS Y3, Y4
	VDIVPS  Y13, Y4, Y4 // √v / bc2s
	VADDPS  Y14, Y4, Y4 // + eps
	VMULPS  Y2, Y15, Y5 // step·m
	VDIVPS  Y4, Y5, Y5  // / den
	VSUBPS  Y5, Y0, Y0  // w − …
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ $8, AX
	JMP  aloop
adone:
	VZEROUPPER
	RET

// func reluAVX2(dst, x *float32, n int)
//
// ReLU over n elements, 8 at a time: VMAXPS returns its second source
// (here +0) when either source is NaN or both are zeros, so NaN and −0
// give +0 as the Go loop does.
TEXT ·reluAVX2(SB), NOSPLIT, $0-24
	MOVQ   dst+0(FP), DI
	MOVQ   x+8(FP), SI
	MOVQ   n+16(FP), CX
	VXORPS Y15, Y15, Y15
	XORQ   AX, AX
rloop:
	CMPQ    AX, CX
	JGE     rdone
	VMOVUPS (SI)(AX*4), Y0
	VMAXPS  Y15, Y0, Y0 // max(x, +0), +0 for NaN and −0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	JMP     rloop
rdone:
	VZEROUPPER
	RET

// func reluGradAVX2(dst, dy, y *float32, n int)
//
// ReLUGrad over n elements, 8 at a time: the mask of y > 0 (ordered, so
// false for NaN; false for −0) ANDed with dy.
TEXT ·reluGradAVX2(SB), NOSPLIT, $0-32
	MOVQ   dst+0(FP), DI
	MOVQ   dy+8(FP), SI
	MOVQ   y+16(FP), DX
	MOVQ   n+24(FP), CX
	VXORPS Y15, Y15, Y15
	XORQ   AX, AX
gloop:
	CMPQ    AX, CX
	JGE     gdone
	VMOVUPS (DX)(AX*4), Y0
	VCMPPS  $0x1e, Y15, Y0, Y0 // y > +0: GT_OQ
	VANDPS  (SI)(AX*4), Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	JMP     gloop
gdone:
	VZEROUPPER
	RET

// func addAVX2(dst, x, y *float32, n int)
//
// Add over n elements, 32 then 8 at a time: VADDPS, rounded as the Go
// sum.
TEXT ·addAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DX
	MOVQ n+24(FP), CX
	XORQ AX, AX
	MOVQ CX, BX
	ANDQ $-32, BX
addloop32:
	CMPQ    AX, BX
	JGE     addloop8
	VMOVUPS (SI)(AX*4), Y0
	VMOVUPS 32(SI)(AX*4), Y1
	VMOVUPS 64(SI)(AX*4), Y2
	VMOVUPS 96(SI)(AX*4), Y3
	VADDPS  (DX)(AX*4), Y0, Y0
	VADDPS  32(DX)(AX*4), Y1, Y1
	VADDPS  64(DX)(AX*4), Y2, Y2
	VADDPS  96(DX)(AX*4), Y3, Y3
	VMOVUPS Y0, (DI)(AX*4)
	VMOVUPS Y1, 32(DI)(AX*4)
	VMOVUPS Y2, 64(DI)(AX*4)
	VMOVUPS Y3, 96(DI)(AX*4)
	ADDQ    $32, AX
	JMP     addloop32
addloop8:
	CMPQ    AX, CX
	JGE     adddone
	VMOVUPS (SI)(AX*4), Y0
	VADDPS  (DX)(AX*4), Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	JMP     addloop8
adddone:
	VZEROUPPER
	RET

// func mulAVX2(dst, x, y *float32, n int)
//
// Mul over n elements, 8 at a time: one VMULPS, rounded as the Go
// product.
TEXT ·mulAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DX
	MOVQ n+24(FP), CX
	XORQ AX, AX
mloop:
	CMPQ    AX, CX
	JGE     mdone
	VMOVUPS (SI)(AX*4), Y0
	VMULPS  (DX)(AX*4), Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	JMP     mloop
mdone:
	VZEROUPPER
	RET

// func dropAVX2(y, mask, x *float32, w *uint64, n int, t, keep uint32)
//
// Eight elements a step: their eight 16-bit decisions zero-extended to
// 32 bits (VPMOVZXWD) and compared with t−1 as signed 32-bit integers
// (b > t−1 is b ≥ t, t ≤ 2¹⁶; t = 0 gives −1, below every b), the
// comparison's all-ones lanes anded with keep's bits give the mask, and
// VMULPS the products x·m.
TEXT ·dropAVX2(SB), NOSPLIT, $0-48
	MOVQ y+0(FP), DI
	MOVQ mask+8(FP), R8
	MOVQ x+16(FP), SI
	MOVQ w+24(FP), DX
	MOVQ n+32(FP), CX
	MOVL t+40(FP), AX
	MOVL keep+44(FP), BX
	DECL AX
	MOVL AX, X0
	VPBROADCASTD X0, Y0
	MOVL BX, X1
	VPBROADCASTD X1, Y1
	TESTQ R8, R8
	JEQ   dropnomask

dropmask:
	VPMOVZXWD (DX), Y2
	VPCMPGTD  Y0, Y2, Y2
	VPAND     Y1, Y2, Y2
	VMULPS    (SI), Y2, Y3
	VMOVUPS   Y3, (DI)
	VMOVUPS   Y2, (R8)
	ADDQ      $32, SI
	ADDQ      $32, DI
	ADDQ      $32, R8
	ADDQ      $16, DX
	SUBQ      $8, CX
	JNZ       dropmask
	VZEROUPPER
	RET

dropnomask:
	VPMOVZXWD (DX), Y2
	VPCMPGTD  Y0, Y2, Y2
	VPAND     Y1, Y2, Y2
	VMULPS    (SI), Y2, Y3
	VMOVUPS   Y3, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DI
	ADDQ      $16, DX
	SUBQ      $8, CX
	JNZ       dropnomask
	VZEROUPPER
	RET

// func hasZeroAVX2(x *float32, n int) bool
//
// Eight elements a step compared equal (ordered, so NaN is not) with +0
// by VCMPPS, the results or-ed together; the answer is whether any lane
// of the or is set.
TEXT ·hasZeroAVX2(SB), NOSPLIT, $0-17
	MOVQ   x+0(FP), SI
	MOVQ   n+8(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1

zeroloop:
	VCMPPS $0, (SI), Y0, Y2
	VORPS  Y2, Y1, Y1
	ADDQ   $32, SI
	SUBQ   $8, CX
	JNZ    zeroloop
	VMOVMSKPS Y1, AX
	TESTL  AX, AX
	SETNE  ret+16(FP)
	VZEROUPPER
	RET

// func pcgFill8AVX512(hi, lo *[8]uint64, words *uint64, n int)
//
// Eight PCG states (hi, lo) in Z0 and Z1, one per lane. A step is the LCG
// s ↦ m·s + c mod 2¹²⁸: the high half of lo·mLo from four 32×32-bit
// products (VPMULUDQ), the low halves of lo·mLo, hi·mLo and lo·mHi by
// VPMULLQ, the carry of lo + cLo by an unsigned compare into K1; then
// the DXSM output of the new state, stored as words[8j .. 8j+7].
TEXT ·pcgFill8AVX512(SB), NOSPLIT, $0-32
	MOVQ hi+0(FP), SI
	MOVQ lo+8(FP), R8
	MOVQ words+16(FP), DI
	MOVQ n+24(FP), CX
	VMOVDQU64 (SI), Z0
	VMOVDQU64 (R8), Z1
	MOVQ $4865540595714422341, AX
	VPBROADCASTQ AX, Z20
	SHRQ $32, AX
	VPBROADCASTQ AX, Z21
	MOVQ $2549297995355413924, AX
	VPBROADCASTQ AX, Z22
	MOVQ $1442695040888963407, AX
	VPBROADCASTQ AX, Z23
	MOVQ $6364136223846793005, AX
	VPBROADCASTQ AX, Z24
	MOVQ $0xda942042e4dd58b5, AX
	VPBROADCASTQ AX, Z25
	MOVQ $0xffffffff, AX
	VPBROADCASTQ AX, Z26
	MOVQ $1, AX
	VPBROADCASTQ AX, Z27

pcgloop:
	VPSRLQ   $32, Z1, Z2
	VPMULUDQ Z20, Z1, Z3
	VPMULUDQ Z21, Z1, Z4
	VPMULUDQ Z20, Z2, Z5
	VPMULUDQ Z21, Z2, Z6
	VPSRLQ   $32, Z3, Z7
	VPANDQ   Z26, Z4, Z8
	VPADDQ   Z8, Z7, Z7
	VPANDQ   Z26, Z5, Z8
	VPADDQ   Z8, Z7, Z7
	VPSRLQ   $32, Z7, Z7
	VPSRLQ   $32, Z4, Z4
	VPSRLQ   $32, Z5, Z5
	VPADDQ   Z4, Z6, Z6
	VPADDQ   Z5, Z6, Z6
	VPADDQ   Z7, Z6, Z6
	VPMULLQ  Z20, Z1, Z9
	VPMULLQ  Z20, Z0, Z10
	VPMULLQ  Z22, Z1, Z11
	VPADDQ   Z10, Z6, Z6
	VPADDQ   Z11, Z6, Z6
	VPADDQ   Z23, Z9, Z1
	VPCMPUQ  $1, Z9, Z1, K1
	VPADDQ   Z24, Z6, Z0
	VPADDQ   Z27, Z0, K1, Z0
	VPSRLQ   $32, Z0, Z12
	VPXORQ   Z0, Z12, Z12
	VPMULLQ  Z25, Z12, Z12
	VPSRLQ   $48, Z12, Z13
	VPXORQ   Z13, Z12, Z12
	VPORQ    Z27, Z1, Z13
	VPMULLQ  Z13, Z12, Z12
	VMOVDQU64 Z12, (DI)
	ADDQ     $64, DI
	DECQ     CX
	JNZ      pcgloop
	VMOVDQU64 Z0, (SI)
	VMOVDQU64 Z1, (R8)
	VZEROUPPER
	RET

// func dropStrideAVX2(y, mask, x *float32, w *uint64, stride, n int, t, keep uint32)
//
// dropAVX2 with the row's words stride words apart: a step's two words
// are gathered into X2 (VMOVQ, VPINSRQ) before the same compare, and and
// multiply.
TEXT ·dropStrideAVX2(SB), NOSPLIT, $0-56
	MOVQ y+0(FP), DI
	MOVQ mask+8(FP), R8
	MOVQ x+16(FP), SI
	MOVQ w+24(FP), DX
	MOVQ stride+32(FP), R9
	SHLQ $3, R9
	MOVQ n+40(FP), CX
	MOVL t+48(FP), AX
	MOVL keep+52(FP), BX
	DECL AX
	MOVL AX, X0
	VPBROADCASTD X0, Y0
	MOVL BX, X1
	VPBROADCASTD X1, Y1
	LEAQ (R9)(R9*1), R10

dropsloop:
	VMOVQ     (DX), X2
	VPINSRQ   $1, (DX)(R9*1), X2, X2
	VPMOVZXWD X2, Y2
	VPCMPGTD  Y0, Y2, Y2
	VPAND     Y1, Y2, Y2
	VMULPS    (SI), Y2, Y3
	VMOVUPS   Y3, (DI)
	TESTQ     R8, R8
	JEQ       dropsnomask
	VMOVUPS   Y2, (R8)
	ADDQ      $32, R8

dropsnomask:
	ADDQ      $32, SI
	ADDQ      $32, DI
	ADDQ      R10, DX
	SUBQ      $8, CX
	JNZ       dropsloop
	VZEROUPPER
	RET
