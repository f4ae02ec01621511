package uringrt

import (
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// TestCallbackRecvRehomed: a callback connection's multishot recv that was
// submitted while the loop ran on another thread (a loop parked in Go's
// netpoller moves between threads when Go's scheduler hands its P on) is
// ended at its next completion and armed again from the loop's thread, as
// a net.Conn's POLLIN is, without losing or reordering a byte. Before, it
// stayed where it was armed, and its completions (COOP_TASKRUN task_work
// runs on the submitting thread) woke that idle thread for every message:
// pinned at 10,000 msgs/s over 1000 connections, a second thread took 28 %
// of the server's CPU.
func TestCallbackRecvRehomed(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	l := rt.loops[0]
	if l.gw == nil {
		t.Skip("locked loop: it never moves between threads")
	}
	var conn atomic.Pointer[CallbackConn]
	h := HandlerFuncs{
		Open: func(c *CallbackConn) { conn.Store(c) },
		Data: func(c *CallbackConn, data []byte) { c.Write(data) },
	}
	addr := serveCB(t, rt, h).Addr().String()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	echo := func(msg string) {
		t.Helper()
		if _, err := c.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(c, got); err != nil || string(got) != msg {
			t.Fatalf("echo of %q: got %q, %v", msg, got, err)
		}
	}
	echo("first")
	cc := conn.Load()
	var multishot bool
	var rehomes int
	onLoop(l, func() {
		// A thread id no loop runs on: as if the recv had been armed
		// on a thread the loop has left.
		multishot = cc.recvOp.armed && cc.recvOp.tid != 0
		cc.recvOp.tid = -1
		rehomes = l.rehomes
	})
	if !multishot {
		t.Fatalf("the callback recv is not a multishot recv that records its thread")
	}
	for _, m := range []string{"second", "third", "fourth"} {
		echo(m)
	}
	var tid int32
	var armed bool
	var after int
	onLoop(l, func() { tid, armed, after = cc.recvOp.tid, cc.recvOp.armed, l.rehomes })
	if after <= rehomes || !armed || tid <= 0 {
		t.Fatalf("after a completion on another thread: rehomes %d -> %d, recv armed %v on thread %d; want a re-home and the recv armed again from the loop's thread", rehomes, after, armed, tid)
	}
}

// TestServeAcceptRehomed: Serve's multishot accept, submitted while the
// loop ran on another thread, is ended at its next completion and armed
// again from the loop's thread, as the callback recv is
// (TestCallbackRecvRehomed), and no connection is lost on the way. Before,
// it stayed armed where Serve started: its COOP_TASKRUN completions woke
// that thread for every connection, and that thread then woke the loop's
// (under wrk's `Connection: close`, 0.17 more wake-ups a request).
func TestServeAcceptRehomed(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	l := rt.loops[0]
	if l.gw == nil {
		t.Skip("locked loop: it never moves between threads")
	}
	h := HandlerFuncs{Data: func(c *CallbackConn, data []byte) { c.Write(data) }}
	nl := serveCB(t, rt, h)
	ln, ok := nl.(*listener)
	if !ok {
		t.Fatalf("listener is %T", nl)
	}
	addr := nl.Addr().String()
	echo := func(msg string) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(c, got); err != nil || string(got) != msg {
			t.Fatalf("echo of %q: got %q, %v", msg, got, err)
		}
	}
	echo("first")
	var multishot bool
	var rehomes int
	onLoop(l, func() {
		// A thread id no loop runs on: as if the accept had been armed
		// on a thread the loop has left.
		multishot = ln.acceptOp.armed && ln.acceptOp.tid != 0
		ln.acceptOp.tid = -1
		rehomes = l.rehomes
	})
	if !multishot {
		t.Fatalf("Serve's accept is not a multishot accept that records its thread")
	}
	for _, m := range []string{"second", "third", "fourth"} {
		echo(m)
	}
	var tid int32
	var armed bool
	var after int
	onLoop(l, func() { tid, armed, after = ln.acceptOp.tid, ln.acceptOp.armed, l.rehomes })
	if after <= rehomes || !armed || tid <= 0 {
		t.Fatalf("after an accept completed on another thread: rehomes %d -> %d, accept armed %v on thread %d; want a re-home and the accept armed again from the loop's thread", rehomes, after, armed, tid)
	}
}
