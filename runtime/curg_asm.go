//go:build amd64 || arm64

package uringrt

// haveCurG: curG tells goroutines apart on this architecture.
const haveCurG = true

// curG returns the address of the calling goroutine's g, the Go
// runtime's descriptor of it: distinct for every live goroutine and
// stable while it lives (a g is reused only after its goroutine exited).
// It is the goroutine's identity for "is the caller the goroutine running
// this connection's callback" (callback_state.go): one load of the g
// register (arm64) or of its thread-local slot (amd64), a few ns with the
// call, where gettid(2) is a system call and names a thread. It is in
// assembly because Go exposes no goroutine identity (curg_amd64.s,
// curg_arm64.s).
func curG() uintptr
