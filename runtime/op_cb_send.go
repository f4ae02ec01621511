package uringrt

import (
	"syscall"
	"unsafe"

	"github.com/uringrt/uringrt/netpoll"
	"golang.org/x/sys/unix"
)

// The callback API's send: a connection's cbSend (taken from the loop
// while a send is in flight), its SQE (a send or a sendmsg of every queued
// chunk), the loop's flush of dirty connections and the send's CQE.

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
