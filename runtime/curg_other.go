//go:build !amd64 && !arm64

package uringrt

// haveCurG: no goroutine identity on this architecture; the callback
// state falls back to compare-and-swap holding (callback_state.go).
const haveCurG = false

func curG() uintptr { return 0 }
