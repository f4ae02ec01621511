//go:build !amd64 && !arm64 && !race

package uringrt

import "sync/atomic"

// casNoRace is atomic.CompareAndSwapUintptr; a build without the race
// detector does not instrument it (cas_asm.go has the race-safe version).
//
//go:nosplit
func casNoRace(addr *uintptr, old, new uintptr) bool {
	return atomic.CompareAndSwapUintptr(addr, old, new)
}
