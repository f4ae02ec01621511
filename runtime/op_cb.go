package uringrt

import (
	"io"
	"syscall"

	"github.com/uringrt/uringrt/netpoll"
)

// The callback API's recv: a multishot recv into the loop's provided
// buffer ring (single-shot into the conn's own buffer without one), what
// its CQE means, and the peer's orderly close. Its send, one per
// connection per loop iteration of its queued output, is op_cb_send.go's.

// prepCBRecv preps the conn's recv: multishot with buffer selection
// (6.0+), single-shot with buffer selection (Config.DisableMultishot), or
// into the conn's own buffer (no buffer ring).
func (l *loop) prepCBRecv(sqe *netpoll.SQE, o *op) {
	o.tid = 0 // a single-shot recv is armed again from the loop's thread each time
	if room := o.cc.directRoom(); room != nil {
		// callback_kept.go: a large frame's bytes, straight into the
		// kept input.
		o.cc.direct = room
		sqe.PrepRecv(o.fd, room, 0)
		return
	}
	if l.bufRing == nil {
		sqe.PrepRecv(o.fd, o.buf, 0)
		return
	}
	if c := o.cc; c.stream != nil { // callback_stream.go
		sqe.PrepRecv(o.fd, c.stream[:c.streamRoom()], 0)
		return
	} else if c.probing {
		l.prepProbe(sqe, o)
		return
	}
	if l.rt.cfg.DisableMultishot {
		sqe.PrepRecvSelect(o.fd, l.bufRing.Group(), 0)
	} else {
		sqe.PrepRecvMultishot(o.fd, l.bufRing.Group(), 0)
		o.tid = l.curTid() // op_poll.go: re-homed if the loop moves
		if l.rt.recvLimitOn() {
			sqe.SetRecvLimit(o.cc.recvRoom()) // budget.go: bounds a pause's overshoot
		}
	}
	if l.bundles {
		sqe.SetBundle()
	}
}

// onRecv handles a recv CQE.
func (c *CallbackConn) onRecv(o *op) {
	l := c.l
	res := o.res
	direct := c.direct // the recv read into the kept input (callback_kept.go)
	c.direct = nil
	switch {
	case res > 0 && l.bundles && o.flags&netpoll.CQEFBuffer != 0:
		// Every CQE of a bundle recv, however small: its buffer may
		// hold less than res (netpoll.BufRing.Bundle).
		l.stats.readBytes.Add(uint64(res))
		c.active = true
		if c.tm != nil {
			c.tm.lastRead = monoNow() // callback_deadline.go
		}
		id, _ := o.bufferID()
		c.deliverBundle(id, int(res))
		c.noteRecv(int(res)) // callback_stream.go
	case res > 0:
		var data []byte
		id, hasBuf := o.bufferID()
		recycle := hasBuf
		switch {
		case hasBuf:
			data, recycle = l.bufRing.Take(id, int(res), o.flags)
		case direct != nil:
			data = direct[:res]
		case c.stream != nil:
			data = c.stream[:res]
		default:
			data = o.buf[:res] // c's own buffer (no buffer ring)
		}
		l.stats.readBytes.Add(uint64(res))
		c.active = true
		if c.tm != nil {
			c.tm.lastRead = monoNow() // callback_deadline.go
		}
		if !c.closing {
			switch {
			case recycle:
				recycle = !c.deliverOffered(data, id, 1)
			case hasBuf, direct != nil:
				// An incremental buffer the kernel still fills
				// (a multishot recv whose cancel for stream mode
				// has not landed yet): neither it nor c's stream
				// buffer, which data is not in, may be lent. Nor
				// the kept input.
				c.deliver(data)
			case c.stream != nil:
				c.deliverStream(data) // callback_stream.go
			default:
				c.deliver(data)
			}
		}
		if recycle {
			l.bufRing.Recycle(id)
		}
		c.noteRecv(int(res)) // callback_stream.go
	case res == 0:
		if !c.closing && !c.blocking && c.rdPaused.Load() {
			c.rdEOF, c.finHeld = true, true // reported on resume (callback_pause.go)
			break
		}
		c.readEOF()
	case res == -int32(syscall.ENOBUFS):
		l.stats.enobufs.Add(1)
		// Buffers come back when this batch's recycles are committed;
		// re-arm below (after the commit at the end of reap).
	case res == -int32(syscall.ECANCELED):
		// paused, or closing
	case res == -int32(syscall.EAGAIN):
		// The socket is nonblocking, and a recv the kernel retried
		// from an io-wq worker finds it empty: nothing was lost and the
		// connection is fine, so the recv is re-armed below.
		l.stats.retriedEAGAIN.Add(1)
	case res == -int32(syscall.EINVAL) && l.rt.recvLimitFailed():
		// A kernel before 6.17 refused the multishot byte limit:
		// re-armed below without it.
	default:
		c.closeOnLoop(c.fd.opError("read", sysError("read", ioErrno(res))))
	}
	if c.closing {
		c.maybeFinalize()
		return
	}
	if o.armed && o.tid != 0 && o.tid != l.curTid() {
		// A multishot recv submitted while the loop ran on another
		// thread: its completions would wake that thread for every
		// message. Its last CQE (ECANCELED) arms it again below, from
		// here.
		l.rehome(o)
	}
	userPaused := c.rdPaused.Load() // callback_pause.go
	if o.armed && !c.paused && !userPaused && c.directRoom() != nil {
		// A multishot recv while the handler waits for a large frame:
		// its last completion re-arms the recv into the kept input.
		l.cancelOp(o)
	}
	if c.stream != nil && (c.paused || userPaused || c.stalled() || c.rdEOF) {
		c.leaveStream() // callback_stream.go: a slow or finished peer gets no stream buffer
		c.probing = c.paused || userPaused
	}
	if !o.armed && !c.paused && !userPaused && !c.rdEOF {
		if res == -int32(syscall.ENOBUFS) {
			l.bufRing.Commit()
		}
		l.arm(o)
	}
}

// readEOF handles the peer's orderly close (recv returned 0): a
// HalfCloser handler that asks for it keeps the write side open until it
// closes the connection; otherwise the connection closes once its queued
// output is sent, with OnClose(c, io.EOF). For a MayBlocker handler both
// come after the OnData calls still queued on c's worker, so the replies
// they write to the bytes before the FIN are sent, not refused.
func (c *CallbackConn) readEOFPlain() {
	hc, ok := c.h.(HalfCloser)
	if c.closing || !ok && !c.blocking {
		c.closeOnLoop(io.EOF)
		return
	}
	c.rdEOF = true // reads no more (readDone)
	if c.blocking {
		eof := func() {
			keep := false
			if ok {
				c.runCB(func(c *CallbackConn) { keep = hc.OnReadEOF(c) })
			}
			if !keep {
				c.l.post(request{kind: reqFunc, fn: func() { c.closeOnLoop(io.EOF) }})
			}
		}
		c.l.rt.pool.GoKey(uint64(c.fd.fd), func() {
			if c.rdPaused.Load() {
				c.frame.eofHeld = eof // after the stash, on resume (callback_pause.go)
				return
			}
			eof()
		})
		return
	}
	keep := true
	c.runCB(func(c *CallbackConn) { keep = hc.OnReadEOF(c) })
	if !keep {
		c.closeOnLoop(io.EOF)
	}
}
