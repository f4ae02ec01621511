package uringrt

import (
	"runtime"
)

// The callback state: telling, cheaply and without a race, whether a call
// on a CallbackConn comes from inside one of that connection's callbacks.
//
// A write from the connection's own callback (an echo or a request-reply
// server writing in OnData) is the hot path and goes straight into the
// loop-owned output queue. Every other write (another connection's
// callback, on this loop or another, or any goroutine) goes through the
// owning loop's request queue, as AsyncWrite does; the framing methods
// answer only the connection's own OnData. Telling the two apart needs to
// know who calls.
//
// On amd64 and arm64 the runtime knows: curG (curg_asm.go) is the calling
// goroutine's identity, a load of its g pointer. Before a callback of c
// runs, its runner stores its own g in c.cbG, and clears it after; a
// method holds c's loop-owned state (the output queue, the framing state)
// when c.cbG is the caller's g, so only the goroutine running the callback
// ever touches that state, and a call from any other goroutine, even one
// made while the callback runs, takes the request queue (writes) or fails
// with ErrNotInCallback (framing). gettid(2) would be a system call (80-330
// ns measured on the 2-core test machine) and names a thread, not a
// goroutine.
//
// Elsewhere (no curG) the runtime does not ask who calls; it makes the
// answer matter less, with a compare-and-swap:
//
//   - Before a callback of c runs, its runner stores cbIn in c.cb; after,
//     it swaps cbIn back to cbIdle (waiting, should some other goroutine
//     hold it, until it is given back).
//   - A method that wants c's loop-owned state tries to move c.cb from
//     cbIn to cbHeld, and stores cbIn when done. It succeeds only while a
//     callback of c is running. The caller is then almost always that
//     callback; if it is another goroutine that happens to call while c's
//     callback runs, the CAS still makes it the only one touching that
//     state, but its bytes may then fall between the callback's, and its
//     framing calls succeed.
//
// Either way, nothing that a holder does touches the ring or other
// connections: what must happen on the loop (arming the send, pausing the
// recv, closing) is left in flags that the callback's runner acts on once
// the callback returns (afterCB).
//
// The hot path thus costs one curG call and one load (or a CAS and a
// store) per write, plus, to keep the byte caps exact against AsyncWrites,
// one more load and store, and two atomic stores per callback: no system
// call and no allocation.

// callback states (CallbackConn.cb)
const (
	cbIdle = iota // no callback of the connection is running
	cbIn          // a callback is running; nobody holds the state
	cbHeld        // a caller holds the connection's loop-owned state
)

// hold takes the connection's loop-owned state; it succeeds only while one
// of c's callbacks runs. Give it back with unhold.
func (c *CallbackConn) hold() bool {
	if haveCurG {
		return c.cbG.Load() == curG()
	}
	return c.cb.CompareAndSwap(cbIn, cbHeld)
}

func (c *CallbackConn) unhold() {
	if !haveCurG {
		c.cb.Store(cbIn)
	}
}

// holdWait is hold that, when another caller holds the state, waits for
// it to be given back rather than fail: for the framing methods, which
// have no other way to reach the state than to hold it (a write can take
// the request queue instead).
func (c *CallbackConn) holdWait() bool {
	if haveCurG {
		return c.hold() // nobody else ever holds it
	}
	for {
		if c.cb.CompareAndSwap(cbIn, cbHeld) {
			return true
		}
		if c.cb.Load() == cbIdle {
			return false
		}
		runtime.Gosched()
	}
}

// enterCB marks the start of a callback of c (on its loop or worker).
func (c *CallbackConn) enterCB() {
	if haveCurG {
		c.cbG.Store(curG())
		return
	}
	c.cb.Store(cbIn)
}

// leaveCB marks its end, once no other goroutine holds the state.
func (c *CallbackConn) leaveCB() {
	if haveCurG {
		c.cbG.Store(0)
		return
	}
	for !c.cb.CompareAndSwap(cbIn, cbIdle) {
		runtime.Gosched() // another goroutine holds it for a write: brief
	}
}

// runCB runs fn as a callback of c on the calling goroutine (the loop, or
// c's worker): a panic closes c alone.
func (c *CallbackConn) runCB(fn func(*CallbackConn)) {
	c.enterCB()
	defer c.exitCB()
	fn(c)
}

// callback runs fn as a callback of c: on the loop, or on c's fixed worker
// for a MayBlocker handler.
func (c *CallbackConn) callback(fn func(*CallbackConn)) {
	if c.blocking {
		c.l.rt.pool.GoKey(uint64(c.fd.fd), func() { c.runCB(fn) })
		return
	}
	c.runCB(fn)
}

// exitCB ends a callback (deferred by its runner): the state is given back,
// unconsumed input kept (callback_frame.go), a panic turned into the close
// of c alone, and what the callback asked of the loop done.
func (c *CallbackConn) exitCB() {
	v := recover()
	c.leaveCB()
	c.frame.settle()
	if c.batching {
		c.postBatch() // callback_write.go: this callback's writes, together
	}
	if v != nil {
		c.l.rt.handlerPanic(v)
		if c.blocking {
			c.l.post(request{kind: reqFunc, fn: func() { c.closeOnLoop(errHandlerPanic) }})
			return
		}
		c.closeOnLoop(errHandlerPanic)
		return
	}
	if c.blocking {
		if c.closeReq {
			c.closeReq = false
			c.AsyncClose()
		}
		return
	}
	c.afterCB()
}

// afterCB does on the loop what a callback of c asked while it held the
// state: flush and cap the output it queued, close.
func (c *CallbackConn) afterCB() {
	if c.rtFull {
		c.rtFull = false
		c.budgetRefused() // callback_bounds.go
	}
	if c.wroteInCB {
		c.wroteInCB = false // (c.queued follows at the flush)
		c.markDirty()
		c.afterQueue()
		c.noteDrainMark()
	}
	if c.pauseReq {
		c.afterPauseCB() // callback_pause.go
	}
	if t := c.tlsSt(); t != nil && t.kept {
		c.tlsTakeKept() // tls_loop.go: StartTLS in OnData
	}
	if c.closeReq {
		c.closeReq = false
		c.closeOnLoop(nil)
	}
}

// markDirty puts c on the loop's list of connections to flush (loop only).
func (c *CallbackConn) markDirty() {
	if !c.dirty && c.outq.n > 0 {
		c.dirty = true
		c.l.dirty = append(c.l.dirty, c)
	}
}
