#include "textflag.h"

// func casNoRace(addr *uintptr, old, new uintptr) bool
TEXT ·casNoRace(SB), NOSPLIT, $0-25
	MOVQ	addr+0(FP), BX
	MOVQ	old+8(FP), AX
	MOVQ	new+16(FP), CX
	LOCK
	CMPXCHGQ	CX, 0(BX)
	SETEQ	ret+24(FP)
	RET
