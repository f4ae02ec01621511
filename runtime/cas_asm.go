//go:build amd64 || arm64

package uringrt

// casNoRace is a sequentially consistent compare-and-swap of *addr from old
// to new, in assembly so that the race detector does not instrument it:
// pdCommit runs it on the scheduler's stack, where an instrumented atomic
// (a call into the race runtime, which needs a goroutine's race context)
// would crash a -race build.
//
//go:noescape
func casNoRace(addr *uintptr, old, new uintptr) bool
