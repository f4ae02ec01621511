package uringrt

import (
	"net"
	"runtime"
	"sync"
	"testing"
)

// TestConnLoopsDefault: with the loop count left to its default and
// GOMAXPROCS 2, every net.Conn, accepted or dialed, joins loop 0 (one
// loop reports their readiness), while callback connections still spread
// over every loop; a loop count set explicitly spreads net.Conns too.
func TestConnLoopsDefault(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	for _, tc := range []struct {
		loops     int
		wantLoops int // distinct loops the net.Conns should use
	}{{0, 1}, {2, 2}} {
		rt, err := New(Config{Backend: BackendUring, Loops: tc.loops})
		if err != nil {
			t.Fatal(err)
		}
		if len(rt.loops) != 2 {
			t.Fatalf("Loops %d: %d loops, want 2", tc.loops, len(rt.loops))
		}
		ln, err := rt.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		used := map[int]bool{}
		for range 4 {
			c, err := rt.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			s, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			used[c.(*Conn).fd.l.id] = true
			used[s.(*Conn).fd.l.id] = true
			c.Close()
			s.Close()
		}
		if len(used) != tc.wantLoops {
			t.Errorf("Loops %d: net.Conns on loops %v, want %d distinct", tc.loops, used, tc.wantLoops)
		}
		ln.Close()

		var mu sync.Mutex
		cbUsed := map[int]bool{}
		opened := make(chan struct{}, 4)
		cln := serveCB(t, rt, HandlerFuncs{Open: func(c *CallbackConn) {
			mu.Lock()
			cbUsed[c.l.id] = true
			mu.Unlock()
			opened <- struct{}{}
		}})
		for range 4 {
			c, err := net.Dial("tcp", cln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			<-opened
			c.Close()
		}
		mu.Lock()
		if len(cbUsed) != 2 {
			t.Errorf("Loops %d: callback conns on loops %v, want both", tc.loops, cbUsed)
		}
		mu.Unlock()
		cln.Close()
		rt.Close()
	}
}
