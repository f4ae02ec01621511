//go:build amd64 || arm64

package uringrt

import "unsafe"

// pdCommit is wait's gopark commit, run on the scheduler's stack once the
// goroutine is off its thread: it CASes (*pollDesc)(pd).state from pdWait
// to gp, publishing the goroutine, and fails (the goroutine is then not
// parked) if notify or interrupt changed pdWait since. It is in assembly
// (pdcommit_amd64.s, pdcommit_arm64.s) because no instrumentation may run
// there: a Go body gets -cover's counters, atomic ones under -race, which
// call into the race runtime and crash without a goroutine's race context.
// The race detector sees the hand-over through notify's and wait's own
// atomics.
//
//go:noescape
func pdCommit(gp uintptr, pd unsafe.Pointer) bool

// The assembly addresses state at offset 0 (a compile error otherwise).
const _ uintptr = -unsafe.Offsetof(pollDesc{}.state)
