package proto

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestPartialArrayHoldsNoState: resuming a partial array of many small
// elements keeps no per-element state, so the bytes a connection holds
// for it are its own bytes (which the server bounds) and not a multiple
// of them; the arguments are built once, when the request is complete.
func TestPartialArrayHoldsNoState(t *testing.T) {
	const n = 1 << 20
	b := []byte("*" + strconv.Itoa(n) + "\r\n" + strings.Repeat("$0\r\n\r\n", n-1))
	var p Parser
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for cut := len(b) / 4; ; cut += len(b) / 4 {
		cut = min(cut, len(b))
		if _, k, err := p.Next(b[:cut]); k != 0 || err != nil {
			t.Fatalf("partial: n %d, err %v", k, err)
		}
		if cut == len(b) {
			break
		}
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > uint64(len(b)/8) {
		t.Fatalf("a partial request of %d bytes made the parser allocate %d bytes", len(b), got)
	}
	args, k, err := p.Next(append(b, "$1\r\nx\r\n"...))
	if err != nil || k != len(b)+7 || len(args) != n || string(args[n-1]) != "x" || len(args[0]) != 0 {
		t.Fatalf("complete: %d args, n %d, err %v", len(args), k, err)
	}
}
