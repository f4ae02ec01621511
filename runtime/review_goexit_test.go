package uringrt

import (
	"io"
	"net"
	"runtime"
	"testing"
	"time"
)

// TestReviewGoexitInOnCloseUnderHold: a RunOnLoop function's Close runs
// OnClose on its own goroutine while it holds the loop (word inlBusy).
// An OnClose that ends its goroutine (runtime.Goexit, e.g. t.FailNow)
// leaves the word at inlBusy: runOne's deferred CAS wants inlRun, and the
// monitor never takes inlBusy, so nobody runs the loop again.
func TestReviewGoexitInOnCloseUnderHold(t *testing.T) {
	rt, err := New(Config{Loops: 1, Backend: BackendUring})
	if err != nil {
		t.Fatal(err)
	}
	// no rt.Close: it would wait forever for the dead loop
	ln, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	onClose := make(chan struct{}, 1)
	go rt.Serve(ln, HandlerFuncs{
		Data: func(c *CallbackConn, d []byte) {
			if string(d) == "bye" {
				return
			}
			c.RunOnLoop(func() { c.Write(d) })
		},
		ReadEOF: func(c *CallbackConn) {
			if !c.RunOnLoop(func() { c.Close() }) {
				t.Error("RunOnLoop refused")
			}
		},
		Close: func(c *CallbackConn, err error) {
			select {
			case onClose <- struct{}{}:
				runtime.Goexit()
			default:
			}
		},
	})
	addr := ln.Addr().String()
	echo, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	echo.SetDeadline(time.Now().Add(3 * time.Second))
	b := make([]byte, 4)
	echo.Write([]byte("ping"))
	if _, err := io.ReadFull(echo, b); err != nil {
		t.Fatalf("echo before: %v", err)
	}
	victim, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	victim.Write([]byte("bye"))
	time.Sleep(20 * time.Millisecond)
	victim.(*net.TCPConn).CloseWrite()
	select {
	case <-onClose:
	case <-time.After(3 * time.Second):
		t.Skip("OnClose did not run")
	}
	time.Sleep(20 * time.Millisecond)
	echo.SetDeadline(time.Now().Add(3 * time.Second))
	echo.Write([]byte("pong"))
	if _, err := io.ReadFull(echo, b); err != nil {
		w := rt.loops[0].inl.word.Load()
		t.Fatalf("loop dead after a Goexit in OnClose under a RunOnLoop Close: echo %v; word state %d (2 = inlBusy), takeovers %d", err, w&3, rt.loops[0].inl.takeovers.Load())
	}
}
