#include "textflag.h"

// func prefetchRow(p *int64, n int)
//
// PREFETCHT0 of the cache lines of the n int64 from p, at most 8 lines
// (512 bytes): a hint, which reads nothing into a register and never
// faults.
TEXT ·prefetchRow(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ n+8(FP), CX
	CMPQ CX, $64
	JLE  clamped
	MOVQ $64, CX
clamped:
	LEAQ (AX)(CX*8), CX
loop:
	CMPQ AX, CX
	JGE  done
	PREFETCHT0 (AX)
	ADDQ $64, AX
	JMP  loop
done:
	RET
