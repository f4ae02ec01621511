//go:build !amd64 && !arm64 && !race

package uringrt

import (
	"sync/atomic"
	"unsafe"
)

// pdCommit is wait's gopark commit (pdcommit_asm.go has the assembly
// version): without -race, -cover's counters here are plain stores and
// the CAS is not instrumented, so a Go body may run on the scheduler's
// stack. -race builds on these ports use polldesc_chan.go instead.
//
//go:nosplit
//go:norace
func pdCommit(gp uintptr, pd unsafe.Pointer) bool {
	return atomic.CompareAndSwapUintptr((*uintptr)(unsafe.Pointer(&(*pollDesc)(pd).state)), pdWait, gp)
}
