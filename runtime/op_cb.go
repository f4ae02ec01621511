package uringrt

import (
	"io"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/uringrt/uringrt/netpoll"
)

// The callback API's recv and send: a multishot recv into the loop's
// provided buffer ring (single-shot into the conn's own buffer without
// one), and one send per connection per loop iteration of its queued
// output.

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

// cbSend is a callback conn's send: its op and, for a sendmsg, the
// iovecs and msghdr the kernel reads until the CQE. A conn takes one from
// its loop when it arms a send and gives it back when the send's CQE
// leaves nothing to resend (or at its close), so an idle connection holds
// none.
type cbSend struct {
	op  op
	iov []unix.Iovec
	msg unix.Msghdr
}

// maxFreeSends bounds the cbSends a loop keeps for reuse.
const maxFreeSends = 256

// sending reports whether c has a send in flight (loop only).
func (c *CallbackConn) sending() bool { return c.snd != nil && c.snd.op.armed }

// takeSend returns c's cbSend, taking one from the loop's free list (or a
// new one) when c has none (loop only).
func (c *CallbackConn) takeSend() *cbSend {
	if s := c.snd; s != nil {
		return s
	}
	l := c.l
	var s *cbSend
	if n := len(l.sends); n > 0 {
		s = l.sends[n-1]
		l.sends[n-1] = nil
		l.sends = l.sends[:n-1]
	} else {
		s = new(cbSend)
	}
	s.op = op{kind: opCBSend, fd: c.fd.fd, cc: c}
	if c.slot >= 0 {
		s.op.fd, s.op.sqeFlags = int(c.slot), netpoll.SQEFixedFile
	}
	c.snd = s
	return s
}

// putSend gives c's cbSend back to the loop unless its send is in flight
// (loop only).
func (c *CallbackConn) putSend() {
	s := c.snd
	if s == nil || s.op.armed {
		return
	}
	c.snd = nil
	s.op = op{}
	if l := c.l; len(l.sends) < maxFreeSends {
		l.sends = append(l.sends, s)
	}
}

// cancelSend cancels c's send in flight, if any (loop only).
func (c *CallbackConn) cancelSend() {
	if c.snd != nil {
		c.l.cancelOp(&c.snd.op)
	}
}

// prepCBSend preps the send of the conn's submitted output: a send of one
// chunk, or a sendmsg of several (prepSend).
func prepCBSend(sqe *netpoll.SQE, o *op) {
	if o.cc != nil && o.cc.sendsMsg() {
		sqe.PrepSendmsg(o.fd, unsafe.Pointer(&o.cc.snd.msg), unix.MSG_NOSIGNAL)
		return
	}
	sqe.PrepSend(o.fd, o.buf, unix.MSG_NOSIGNAL)
}

// prepSend points c's send (takeSend) at the queued output: a send of the
// head chunk when it is all that is queued, else a sendmsg of every queued
// chunk (up to maxSendIov), so a connection's output leaves in one SQE per
// loop iteration however many chunks it fills.
func (c *CallbackConn) prepSend() {
	s := c.takeSend()
	if len(c.outq.chunks) <= 1 {
		s.op.buf = c.outq.next()
		s.msg.Iovlen = 0
		return
	}
	s.iov, _ = c.outq.nextVec(s.iov)
	s.op.buf = nil
	s.msg = unix.Msghdr{Iov: &s.iov[0]}
	s.msg.SetIovlen(len(s.iov))
}

// dropSendVec forgets the iovecs of the sendmsg whose CQE came, so they no
// longer keep its chunks reachable after the pool dropped them.
func (c *CallbackConn) dropSendVec() {
	s := c.snd
	if s == nil || s.msg.Iovlen == 0 {
		return
	}
	clear(s.iov)
	s.iov = s.iov[:0]
	if cap(s.iov) > 8 {
		s.iov = nil // a long queue's array goes too
	}
	s.msg = unix.Msghdr{}
}

// sendsMsg reports whether c's send is a sendmsg of its msghdr (prepSend).
func (c *CallbackConn) sendsMsg() bool { return c.snd != nil && c.snd.msg.Iovlen > 0 }

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

// deliverBundle hands a bundle CQE's n bytes, from the buffers starting at
// id, to the handler: one OnData per run of full buffers adjacent in memory
// (one call for the whole bundle when they were recycled in order), each
// run's buffers recycled after its call.
func (c *CallbackConn) deliverBundle(id uint16, n int) {
	br := c.l.bufRing
	bufs := br.Bundle(id, n, c.l.bundleBufs[:0])
	size := int(br.Size())
	for i := 0; i < len(bufs); {
		j, run := i+1, bufs[i].Len
		for j < len(bufs) && bufs[j-1].Len == size && br.Contiguous(bufs[j-1].ID, bufs[j].ID) {
			run += bufs[j].Len
			j++
		}
		lent := false
		if !c.closing {
			lent = c.deliverOffered(br.Span(bufs[i].ID, run), bufs[i].ID, uint16(j-i))
		}
		if !lent {
			for _, b := range bufs[i:j] {
				br.Recycle(b.ID)
			}
		}
		i = j
	}
	c.l.bundleBufs = bufs[:0]
}

func (o *op) bufferID() (uint16, bool) {
	return uint16(o.flags >> 16), o.flags&1 != 0
}

// deliverOffered is deliver of data held in provided buffers first..
// first+n-1, which OnData's Writes may lend (lend.go); it reports whether
// one did, so that the buffers are recycled when sent, not now.
func (c *CallbackConn) deliverOffered(data []byte, first, n uint16) bool {
	if c.blocking || c.l.lendCap == 0 {
		c.deliver(data)
		return false
	}
	c.l.offer(data, first, n)
	c.deliver(data)
	return c.l.endOffer()
}

func (c *CallbackConn) deliverPlain(data []byte) {
	if c.blocking {
		cp := append([]byte(nil), data...)
		c.noteBlockedInput(len(cp)) // budget.go
		c.l.rt.pool.GoKey(uint64(c.fd.fd), func() {
			c.onData(cp)
			c.blockedInputDone(len(cp))
		})
		return
	}
	c.rtAllow = len(data) // callback_bounds.go: what OnData may echo past MaxBufferedBytes
	c.onData(data)        // callback_frame.go
	c.rtAllow = 0
}

// flushCB sends each dirty connection's output: a send(2) from the loop
// for a flush of few connections (callback_loopsend.go), else (and for
// what that send left) one send SQE per connection (loop only).
func (l *loop) flushCB() {
	l.budget.flushes++
	l.chunks.adapt(int(l.budget.held.Load())) // outq.go
	l.budgetCheck()
	fromLoop := l.loopSendOK(len(l.dirty)) // callback_loopsend.go
	// By index: a loop send's completion can run callbacks (OnDrained,
	// OnClose) whose writes mark more connections dirty.
	for i := 0; i < len(l.dirty); i++ {
		c := l.dirty[i]
		l.dirty[i] = nil
		c.dirty = false
		c.queued.Store(int64(c.outq.n)) // OutboundBuffered, writes' caps off the loop
		if c.sending() || c.outq.n == 0 || c.directWait() == dsRest {
			// (callback_direct.go: a writer's rest comes first)
			continue
		}
		if fromLoop && c.sendFromLoop() {
			continue
		}
		c.prepSend()
		l.arm(&c.snd.op)
		c.sendSince = l.budget.flushes // budget.go: stalled
		if c.tm != nil {
			c.tm.lastWrite = monoNow() // callback_deadline.go
		}
	}
	l.dirty = l.dirty[:0]
}

// onSend handles a send CQE: resubmit the rest of a short send, then the
// next queued output.
func (c *CallbackConn) onSend(o *op) {
	l := c.l
	o.buf = nil
	c.dropSendVec()
	if o.res == -int32(syscall.EAGAIN) && !c.failed() {
		// A send the kernel retried from an io-wq worker after a partial
		// send (the socket is nonblocking, and its buffer was still
		// full) ends with EAGAIN: nothing of it was sent. It is a short
		// send of 0 bytes, sent again below (a socket still full makes
		// the kernel arm POLLOUT for it), not a failed connection.
		l.stats.retriedEAGAIN.Add(1)
		o.res = 0
	}
	if res := o.res; res < 0 {
		c.outq.sent(l, 0)
		c.putSend() // (o is free now)
		if res != -int32(syscall.ECANCELED) {
			c.fail(c.fd.opError("write", sysError("write", ioErrno(res))))
		}
		if c.failed() {
			c.outq.release(l) // nothing more will be sent
		}
		c.maybeFinalize()
		return
	}
	l.stats.writtenBytes.Add(uint64(o.res))
	if o.res > 0 {
		c.active = true
		if c.tm != nil {
			c.tm.lastWrite = monoNow() // callback_deadline.go
		}
	}
	short := c.outq.sent(l, int(o.res))
	c.sendShort = short // budget.go: stalled
	if short && !c.paused && !c.closing && c.outq.n > c.pauseMark() {
		c.pauseRead(pauseConn) // the socket is full: stop reading now
	}
	if short && !c.failed() {
		c.queued.Store(int64(c.outq.n)) // OutboundBuffered: what the short send left
		c.prepSend()                    // a short send: the rest now
		l.arm(o)
		return
	}
	c.putSend()
	if c.failed() {
		c.outq.release(l)
	} else if c.outq.n > 0 && !c.dirty {
		c.dirty = true
		l.dirty = append(l.dirty, c)
	}
	c.queued.Store(int64(c.outq.n))
	c.maybeResume()
	if c.hasDrainer {
		c.checkDrain() // callback_drain.go
	}
	c.maybeFinalize()
}
