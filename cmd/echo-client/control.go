package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/uringrt/uringrt/runtime"
)

// control is how other goroutines run code on the uring engine's loop: a
// unix socket pair whose loop end is a CallbackConn on that loop. A byte
// written to the other end (peer) makes the loop call OnData, which starts
// the traffic (the first byte) and, in open loop, releases the messages
// that fell due (each later byte, written by the pacer). The callback API
// has no timer, and its callbacks are the only code that may touch the
// connections' state without locks.
type control struct {
	e       *uringEngine
	peer    net.Conn
	pending atomic.Bool // a poke is written and its OnData has not run yet
}

// openControl connects the control socket pair through an abstract unix
// socket (no file to clean up) named after the process.
func openControl(ctx context.Context, rt *uringrt.Runtime, cfg config, e *uringEngine) (*control, error) {
	name := fmt.Sprintf("@echo-client-%d-%d", os.Getpid(), time.Now().UnixNano())
	ln, err := net.Listen("unix", name)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	defer ln.Close()
	type accepted struct {
		c   net.Conn
		err error
	}
	ch := make(chan accepted, 1)
	go func() {
		c, err := ln.Accept()
		ch <- accepted{c, err}
	}()
	c := &control{e: e}
	dctx, cancel := context.WithTimeout(ctx, cfg.dialTimeout)
	defer cancel()
	if _, err := rt.DialCallback(dctx, "unix", name, c); err != nil {
		ln.Close()
		if a := <-ch; a.c != nil {
			a.c.Close()
		}
		return nil, fmt.Errorf("control socket: %w", err)
	}
	a := <-ch
	if a.err != nil {
		return nil, fmt.Errorf("control socket: %w", a.err)
	}
	c.peer = a.c
	return c, nil
}

// kick starts the traffic: the loop begins once it reads this byte.
func (c *control) kick() error {
	_, err := c.peer.Write([]byte{0})
	return err
}

// poke wakes the loop to release the messages due, unless a poke is still
// unread (that one will do).
func (c *control) poke() {
	if !c.pending.Swap(true) {
		c.peer.Write([]byte{1}) // fails only once the run is over
	}
}

// close closes the peer end; the loop end closes with the runtime.
func (c *control) close() {
	if c.peer != nil {
		c.peer.Close()
	}
}

func (c *control) OnOpen(*uringrt.CallbackConn) {}

func (c *control) OnData(_ *uringrt.CallbackConn, _ []byte) {
	c.pending.Store(false)
	e := c.e
	if !e.started {
		e.begin()
	}
	if e.open != nil {
		e.pump(e.s.now())
	}
}

func (c *control) OnClose(_ *uringrt.CallbackConn, err error) {
	if s := c.e.s; s.phase.Load() != phaseStop {
		s.errors.Add(1)
		s.errOut(fmt.Sprintf("the loop's control socket closed: %v", err))
	}
}
