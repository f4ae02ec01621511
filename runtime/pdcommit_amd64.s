#include "textflag.h"

// func pdCommit(gp uintptr, pd unsafe.Pointer) bool
TEXT ·pdCommit(SB), NOSPLIT, $0-17
	MOVQ	gp+0(FP), CX
	MOVQ	pd+8(FP), BX
	MOVQ	$2, AX // pdWait
	LOCK
	CMPXCHGQ	CX, 0(BX)
	SETEQ	ret+16(FP)
	RET
