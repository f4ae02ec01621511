package uringrt

import "net"

// The handler's read pause (PauseRead, ResumeRead).
//
// The pause is one atomic flag, rdPaused, that every delivery checks
// before it calls OnData: while it is set, received bytes are appended to
// the connection's kept input (frameState.stash) instead of being
// delivered, and the peer's FIN is held. The loop, besides, cancels the
// connection's recv and does not re-arm it, so the kernel's receive
// buffer fills and TCP's window stops the peer. The flag is set or
// cleared at once by a call from one of the connection's own callbacks;
// a call from anywhere else is posted to the loop, which sets or clears
// it there. After a change the loop reconciles (syncPause): it cancels
// the recv for a pause; for a resume it delivers the stashed bytes (with
// the kept framing input they follow), then a held FIN, then re-arms the
// recv unless the runtime's own backpressure pause (paused) holds it.

// PauseRead stops delivering c's input: no OnData for c starts until
// ResumeRead, and c's recv is stopped, so the kernel's socket receive
// buffer fills and TCP flow control slows the peer down (a proxy pauses
// its fast side while the slow side's output drains, OnDrained telling
// when).
//
// Called from one of c's own callbacks (OnOpen, OnData, OnDrained, a timer
// of c) it takes effect at once. Called from anywhere else (another
// connection's callback, any goroutine) it is posted to c's loop and takes
// effect there within a loop iteration: an OnData already running or
// about to start when it is called may still run, and a MayBlocker
// handler's OnData calls may still come for input handed to its worker
// before that.
//
// Nothing is lost: bytes the recv had received when it was stopped (at
// most one multishot recv's in-flight buffers, or one stream read) are
// kept with the connection, not delivered, and come in the first OnData
// after ResumeRead, after any input the handler kept (Peek, Next,
// Discard). So the memory a paused connection holds is bounded by that
// overshoot. A peer's FIN (or the end of a half-open peer's writes) seen
// while paused is reported after ResumeRead, after the kept bytes. A read
// or write error (a reset) still closes the connection while paused. The
// read timeout (SetReadTimeout) does not fire while paused; the write
// timeout and Config.IdleTimeout still apply.
//
// The runtime pauses reading on its own when c's queued output passes its
// mark (see Handler's Backpressure); that pause is separate: reading
// resumes only when neither holds it. PauseRead on a paused connection
// does nothing. It returns net.ErrClosed once c is closing or closed, else
// nil. With BackendStd, c's reader goroutine stops reading.
func (c *CallbackConn) PauseRead() error { return c.setReadPause(true) }

// ResumeRead ends a PauseRead: the bytes kept while paused are delivered
// in an OnData (joined after any framing input the handler kept), then a
// FIN that came while paused, and reading starts again unless the
// runtime's own backpressure pause still holds it. Called from one of c's
// own callbacks, the flag clears at once and the kept bytes come in an
// OnData after that callback returns (in the next OnData if input
// arrives first); from anywhere else it is posted to c's loop. ResumeRead
// on a connection that is not paused does nothing. It returns
// net.ErrClosed once c is closing or closed, else nil.
func (c *CallbackConn) ResumeRead() error { return c.setReadPause(false) }

func (c *CallbackConn) setReadPause(pause bool) error {
	if c.std != nil {
		return c.stdSetReadPause(pause)
	}
	if c.hold() {
		// In one of c's callbacks (on its loop or its worker).
		if c.closing || c.closeReq {
			c.unhold()
			return net.ErrClosed
		}
		changed := c.rdPaused.Swap(pause) != pause
		if changed && !c.blocking {
			c.pauseReq = true // afterCB
		}
		c.unhold()
		if changed && c.blocking {
			c.l.post(request{kind: reqFunc, fn: c.syncPause})
		}
		return nil
	}
	if c.wrClosed.Load() {
		return net.ErrClosed
	}
	c.l.post(request{kind: reqFunc, fn: func() {
		if c.closing || c.rdPaused.Load() == pause {
			return
		}
		c.rdPaused.Store(pause)
		c.syncPause()
	}})
	return nil
}

// afterPauseCB acts on a pause change made in one of c's callbacks (loop
// only, from afterCB): a pause cancels the recv now; a resume is posted,
// so that the kept bytes are not delivered from inside the code that
// delivered the last ones.
func (c *CallbackConn) afterPauseCB() {
	c.pauseReq = false
	if c.closing {
		return
	}
	if c.rdPaused.Load() {
		c.stopRecv()
		return
	}
	c.l.post(request{kind: reqFunc, fn: c.syncPause})
}

// stopRecv cancels c's recv for a pause (loop only). Completions the
// kernel already posted are still handled: their bytes are stashed.
func (c *CallbackConn) stopRecv() {
	if !c.recvOp.armed {
		return
	}
	c.l.cancelOp(&c.recvOp)
	if _, err := c.l.ring.Submit(); err != nil {
		c.l.enterError(err)
	}
}

// syncPause makes c's recv follow rdPaused (loop only): cancelled while
// paused; once resumed, the stashed bytes and a held FIN delivered and
// the recv re-armed (unless the runtime's pause holds it).
func (c *CallbackConn) syncPause() {
	if c.closing || c.finalized {
		return
	}
	if c.rdPaused.Load() {
		c.stopRecv()
		return
	}
	if c.blocking {
		// The stash and a held FIN are the worker's: deliver them there,
		// in order with the OnData calls queued on it.
		c.l.rt.pool.GoKey(uint64(c.fd.fd), c.workerResume)
	} else {
		if c.frame.fresh > 0 {
			c.onData(nil) // the kept bytes (callback_frame.go)
			if c.closing || c.rdPaused.Load() {
				return
			}
		}
		if c.finHeld {
			c.finHeld = false
			c.readEOF()
			return
		}
	}
	if !c.paused && !c.rdEOF && !c.recvOp.armed {
		c.l.arm(&c.recvOp)
	}
}

// workerResume delivers on a MayBlocker connection's worker what was kept
// while paused: the stashed bytes, then a held FIN.
func (c *CallbackConn) workerResume() {
	if c.rdPaused.Load() {
		return
	}
	if c.frame.fresh > 0 {
		c.onData(nil)
		if c.rdPaused.Load() {
			return
		}
	}
	if eof := c.frame.eofHeld; eof != nil {
		c.frame.eofHeld = nil
		eof()
	}
}

// stash keeps data received while the handler paused reading, to be
// delivered after the input already kept when it resumes.
func (f *frameState) stash(data []byte) {
	f.kept = append(f.kept, data...)
	f.fresh += len(data)
}

// stdSetReadPause is PauseRead and ResumeRead with BackendStd: the reader
// goroutine checks the flag before each read and waits while it is set.
func (c *CallbackConn) stdSetReadPause(pause bool) error {
	select {
	case <-c.sx.closed:
		return net.ErrClosed
	default:
	}
	if c.rdPaused.Swap(pause) != pause && !pause {
		select {
		case c.sx.resume <- struct{}{}:
		default:
		}
	}
	return nil
}

// stdWaitRead waits, on a BackendStd connection's reader goroutine, while
// the handler paused reading, then delivers what was stashed. It reports
// false once the connection closed.
func (c *CallbackConn) stdWaitRead() bool {
	for {
		for c.rdPaused.Load() {
			select {
			case <-c.sx.resume:
			case <-c.sx.closed:
				return false
			}
		}
		if c.frame.fresh == 0 {
			return true
		}
		c.stdOnData(nil)
		select {
		case <-c.sx.closed:
			return false
		default:
		}
	}
}
