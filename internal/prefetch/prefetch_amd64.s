#include "textflag.h"

// func Lines(p unsafe.Pointer, n int)
//
// PREFETCHT0 on every 64-byte line of [p, p+n): from p in steps of 64
// bytes, then the line of the last byte.
TEXT ·Lines(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	LEAQ -1(SI)(CX*1), DX

prefetchloop:
	PREFETCHT0 (SI)
	ADDQ       $64, SI
	CMPQ       SI, DX
	JLT        prefetchloop
	PREFETCHT0 (DX)
	RET
