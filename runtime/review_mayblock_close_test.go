package uringrt

import (
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// TestReviewMayBlockRuntimeClose: every connection of a MayBlocker
// handler that Runtime.Close closes gets its OnClose before Close returns
// (one sometimes got none).
func TestReviewMayBlockRuntimeClose(t *testing.T) {
	for round := 0; round < 20; round++ {
		rt, err := New(Config{Loops: 2, Backend: BackendUring})
		if err != nil {
			t.Fatal(err)
		}
		var opened, closed atomic.Int64
		h := &mayBlockCounter{opened: &opened, closed: &closed}
		ln, err := rt.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go rt.Serve(ln, h)
		const n = 16
		peers := make([]net.Conn, 0, n)
		for i := 0; i < n; i++ {
			p, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			p.Write([]byte("x"))
			peers = append(peers, p)
		}
		if !relWaitFor(10*time.Second, func() bool { return opened.Load() == n }) {
			t.Fatalf("round %d: %d of %d opened", round, opened.Load(), n)
		}
		rt.Close()
		ok := relWaitFor(10*time.Second, func() bool { return closed.Load() == n })
		for _, p := range peers {
			p.Close()
		}
		if !ok {
			t.Fatalf("round %d: %d of %d connections got OnClose after Runtime.Close", round, closed.Load(), n)
		}
	}
}

type mayBlockCounter struct{ opened, closed *atomic.Int64 }

func (h *mayBlockCounter) MayBlock() bool         { return true }
func (h *mayBlockCounter) OnOpen(c *CallbackConn) { h.opened.Add(1) }
func (h *mayBlockCounter) OnData(c *CallbackConn, d []byte) {
	c.Write(d)
}
func (h *mayBlockCounter) OnClose(c *CallbackConn, err error) { h.closed.Add(1) }
