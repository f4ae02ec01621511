#include "textflag.h"

// func pdCommit(gp uintptr, pd unsafe.Pointer) bool
TEXT ·pdCommit(SB), NOSPLIT, $0-17
	MOVD	gp+0(FP), R2
	MOVD	pd+8(FP), R0
	MOVD	$2, R1 // pdWait
again:
	LDAXR	(R0), R3
	CMP	R1, R3
	BNE	fail
	STLXR	R2, (R0), R4
	CBNZ	R4, again
	MOVD	$1, R5
	MOVB	R5, ret+16(FP)
	RET
fail:
	CLREX
	MOVB	ZR, ret+16(FP)
	RET
