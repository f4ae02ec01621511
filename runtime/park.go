package uringrt

import (
	"unsafe"
)

// Parking a goroutine the way Go's netpoller does, with the scheduler's
// gopark and goready. Both are kept reachable by the Go runtime for
// packages outside it ("//go:linkname gopark" and "goready" in
// runtime/proc.go, kept for gVisor among others), with these signatures;
// a *g is passed as a uintptr. polldesc.go parks with them; pdCommit is
// its commit.

// gopark puts the calling goroutine in a wait state and calls unlockf(gp,
// lock) on the scheduler's stack; if unlockf returns false the goroutine
// resumes at once. unlockf must not split the stack or allocate.
//
//go:linkname gopark runtime.gopark
func gopark(unlockf func(gp uintptr, lock unsafe.Pointer) bool, lock unsafe.Pointer, reason uint8, traceReason uint8, traceskip int)

// goready makes the parked goroutine gp runnable on the caller's P.
//
//go:linkname goready runtime.goready
func goready(gp uintptr, traceskip int)

// The wait reasons Go's netpoller uses (runtime/runtime2.go
// waitReasonIOWait, runtime/traceruntime.go traceBlockNet): a goroutine
// parked on a pollDesc shows as "IO wait" in a goroutine dump, as a Go net
// reader does. TestParkReasons checks them against the running runtime.
const (
	waitReasonIOWait = 2
	traceBlockNet    = 2
)
