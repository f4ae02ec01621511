#include "textflag.h"

// func casNoRace(addr *uintptr, old, new uintptr) bool
TEXT ·casNoRace(SB), NOSPLIT, $0-25
	MOVD	addr+0(FP), R0
	MOVD	old+8(FP), R1
	MOVD	new+16(FP), R2
again:
	LDAXR	(R0), R3
	CMP	R1, R3
	BNE	fail
	STLXR	R2, (R0), R4
	CBNZ	R4, again
	MOVD	$1, R5
	MOVB	R5, ret+24(FP)
	RET
fail:
	CLREX
	MOVB	ZR, ret+24(FP)
	RET
