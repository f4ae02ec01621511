package uringhttp

import (
	"testing"
	"unsafe"
)

// TestIdleConnFits keeps an idle connection's struct in the 240-byte size
// class its memory was measured at (BENCHMARKS.md, "idle keep-alive
// connections"): one field more moves every connection to the 256-byte
// class. Per-request state belongs in the response or the request's
// context, flags in a word of their own (dl).
func TestIdleConnFits(t *testing.T) {
	if n := unsafe.Sizeof(hconn{}); n > 240 {
		t.Errorf("hconn is %d bytes, over the 240-byte size class an idle connection's memory was measured at", n)
	}
}
