package uringrt

import (
	"io"
	"sync/atomic"
	"testing"
	"time"
)

// The callback timeouts judge a peer by what it did, not by how late the
// loop looked: a loop held up past a timeout (a long callback here; a
// descheduled process under load does the same) closes no connection that
// made progress meanwhile.

// TestCallbackWriteTimeoutAfterLongCallback: a callback that runs longer
// than its connection's write timeout and then writes its reply: the reply
// is sent. The wait for the peer starts when a send does; the timeout's
// last check ran before the callback, with nothing queued, and used to
// count from there, cutting the connection off before the reply left.
func TestCallbackWriteTimeoutAfterLongCallback(t *testing.T) {
	const wto = 50 * time.Millisecond
	rt := newRT(t, Config{Loops: 1})
	closed := make(chan error, 1)
	ln := serveCB(t, rt, HandlerFuncs{
		Open: func(c *CallbackConn) { c.SetWriteTimeout(wto) },
		Data: func(c *CallbackConn, d []byte) {
			time.Sleep(6 * wto) // the loop is held: no check runs
			c.Write(d)
		},
		Close: func(c *CallbackConn, err error) { closed <- err },
	})
	c := dialStd(t, ln.Addr().String(), 1)[0]
	time.Sleep(2 * wto) // the timeout's checks run, finding nothing queued
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	got := make([]byte, 4)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "ping" {
		select {
		case cerr := <-closed:
			t.Fatalf("reply after a callback longer than the write timeout: %q, %v; OnClose: %v", got, err, cerr)
		default:
			t.Fatalf("reply after a callback longer than the write timeout: %q, %v", got, err)
		}
	}
}

// TestIdleTimeoutLoopHeld: a callback of one connection holds the loop
// past IdleTimeout while another connection's peer sends: that connection
// gets its data, not ErrIdleTimeout. The sweep looks after reaping what
// came; it used to run first, as a queued request, and close connections
// whose data waited in the ring.
func TestIdleTimeoutLoopHeld(t *testing.T) {
	const idle = 100 * time.Millisecond
	rt := newRT(t, Config{Loops: 1, IdleTimeout: idle})
	opened := make(chan *CallbackConn, 2)
	var quietP atomic.Pointer[CallbackConn] // set before its peer sends
	holding := make(chan struct{}, 1)
	got := make(chan string, 1)
	closed := make(chan error, 2)
	ln := serveCB(t, rt, HandlerFuncs{
		Open: func(c *CallbackConn) { opened <- c },
		Data: func(c *CallbackConn, d []byte) {
			quiet := quietP.Load()
			if c != quiet {
				// As if a sweep had just found quiet without
				// progress; then the loop is held past IdleTimeout.
				quiet.active, quiet.idleSeen = false, time.Now().UnixNano()
				holding <- struct{}{}
				time.Sleep(4 * idle)
				return
			}
			got <- string(d)
		},
		Close: func(c *CallbackConn, err error) {
			if c == quietP.Load() {
				closed <- err
			}
		},
	})
	addr := ln.Addr().String()
	holder := dialStd(t, addr, 1)[0]
	<-opened
	peer := dialStd(t, addr, 1)[0]
	quietP.Store(<-opened)
	if _, err := holder.Write([]byte("hold")); err != nil {
		t.Fatal(err)
	}
	<-holding
	if _, err := peer.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-got:
		if d != "ping" {
			t.Fatalf("got %q", d)
		}
	case err := <-closed:
		t.Fatalf("a connection whose peer sent while the loop was held was closed: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("no data, no close")
	}
}
