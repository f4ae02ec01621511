package runtime

import (
	"io"
	"net"
	"sync"
	"syscall"

	"github.com/uringrt/uringrt/netpoll"
)

// CallbackConn is a connection served by the callback API (Runtime.Serve).
// Its callbacks run on its loop (or, for a MayBlocker handler, on its fixed
// worker). Write queues bytes that the loop sends in one SQE per connection
// per loop iteration.
type CallbackConn struct {
	fd *netFD
	h  Handler
	ln *listener
	l  *loop

	// loop-owned
	recvOp    op
	sendOp    op
	out       []byte // queued, not yet submitted
	sending   []byte // submitted (the kernel's until its CQE)
	sent      int
	dirty     bool
	paused    bool // output over MaxWriteBuffer: not reading
	closing   bool
	finalized bool
	closeErr  error
	armed     int
	ownBuf    []byte // single-shot recv buffer when there is no buffer ring
	blocking  bool
	slot      int32 // registered file slot, or -1

	// std backend
	std   net.Conn
	stdMu sync.Mutex

	value any
}

func newCallbackConn(fd *netFD, h Handler, ln *listener) *CallbackConn {
	cc := &CallbackConn{fd: fd, h: h, ln: ln, l: fd.l, slot: -1}
	if mb, ok := h.(MayBlocker); ok && mb.MayBlock() {
		cc.blocking = true
	}
	cc.recvOp = op{kind: opCBRecv, fd: fd.fd, cc: cc}
	cc.sendOp = op{kind: opCBSend, fd: fd.fd, cc: cc}
	return cc
}

// SetValue attaches a user value to the connection (per-connection state).
func (c *CallbackConn) SetValue(v any) { c.value = v }

// Value returns the value set with SetValue.
func (c *CallbackConn) Value() any { return c.value }

// LocalAddr returns the local address.
func (c *CallbackConn) LocalAddr() net.Addr {
	if c.std != nil {
		return c.std.LocalAddr()
	}
	return c.fd.laddr()
}

// RemoteAddr returns the peer's address.
func (c *CallbackConn) RemoteAddr() net.Addr {
	if c.std != nil {
		return c.std.RemoteAddr()
	}
	return c.fd.raddr()
}

// Write queues a copy of p for sending and returns len(p), nil; the loop
// sends queued bytes in one send per connection per iteration. After the
// connection closed it returns net.ErrClosed. Call it from the handler's
// callbacks only (on the loop, or on the worker of a MayBlocker handler);
// from any other goroutine use AsyncWrite.
func (c *CallbackConn) Write(p []byte) (int, error) {
	if c.std != nil {
		c.stdMu.Lock()
		defer c.stdMu.Unlock()
		return c.std.Write(p)
	}
	if c.blocking {
		return c.AsyncWrite(p)
	}
	if c.closing {
		return 0, net.ErrClosed
	}
	c.queue(p)
	return len(p), nil
}

// AsyncWrite queues a copy of p from any goroutine: the bytes are posted to
// the connection's loop and sent after what was queued before. It returns
// len(p), nil, or net.ErrClosed once the connection is closing.
func (c *CallbackConn) AsyncWrite(p []byte) (int, error) {
	if c.std != nil {
		return c.Write(p)
	}
	if c.fd.closing.Load() {
		return 0, net.ErrClosed
	}
	c.l.post(request{kind: reqCBWrite, cc: c, data: append([]byte(nil), p...)})
	return len(p), nil
}

// Close closes the connection after the queued output is sent; OnClose
// follows with a nil error. Like Write, call it from the handler's
// callbacks; AsyncClose works from any goroutine.
func (c *CallbackConn) Close() error {
	if c.std != nil {
		return c.std.Close()
	}
	if c.blocking {
		return c.AsyncClose()
	}
	c.closeOnLoop(nil)
	return nil
}

// AsyncClose is Close from any goroutine.
func (c *CallbackConn) AsyncClose() error {
	if c.std != nil {
		return c.std.Close()
	}
	c.l.post(request{kind: reqCBClose, cc: c})
	return nil
}

// queue appends p to the output (loop only).
func (c *CallbackConn) queue(p []byte) {
	if c.closing {
		return
	}
	c.out = append(c.out, p...)
	if !c.dirty {
		c.dirty = true
		c.l.dirty = append(c.l.dirty, c)
	}
	if max := c.l.rt.cfg.MaxWriteBuffer; len(c.out)+len(c.sending)-c.sent > max && !c.paused {
		// Over the cap: stop reading until the output drains.
		c.paused = true
		c.l.cancelOp(&c.recvOp)
	}
}

// registerCB takes a new callback conn into the loop and starts reading.
func (l *loop) registerCB(c *CallbackConn) {
	if l.stopping {
		c.fd.closing.Store(true)
		l.closeFD(c.fd)
		return
	}
	l.cbConns[c] = struct{}{}
	if slot, ok := l.fixedFile(c.fd.fd); ok {
		// The ring addresses the socket by its registered slot: no fd
		// table look-up (fget/fput) per recv and send.
		c.slot = slot
		c.recvOp.fd, c.recvOp.sqeFlags = int(slot), netpoll.SQEFixedFile
		c.sendOp.fd, c.sendOp.sqeFlags = int(slot), netpoll.SQEFixedFile
	}
	if l.bufRing == nil {
		c.ownBuf = make([]byte, l.rt.cfg.BufferSize)
		c.recvOp.buf = c.ownBuf
	}
	c.callOpen()
	if !c.closing {
		l.arm(&c.recvOp)
	}
}

func (c *CallbackConn) callOpen() {
	if c.blocking {
		c.l.rt.pool.GoKey(uint64(c.fd.fd), func() { defer c.recoverHandler(); c.h.OnOpen(c) })
		return
	}
	defer c.recoverHandler()
	c.h.OnOpen(c)
}

// recoverHandler turns a panic in a callback into the close of that
// connection alone, logged once.
func (c *CallbackConn) recoverHandler() {
	if v := recover(); v != nil {
		c.l.rt.handlerPanic(v)
		if c.blocking {
			c.l.post(request{kind: reqFunc, fn: func() { c.closeOnLoop(errHandlerPanic) }})
			return
		}
		c.closeOnLoop(errHandlerPanic)
	}
}

// onRecv handles a recv CQE.
func (c *CallbackConn) onRecv(o *op) {
	l := c.l
	res := o.res
	switch {
	case res > 0:
		var data []byte
		id, hasBuf := o.bufferID()
		recycle := hasBuf
		if hasBuf {
			data, recycle = l.bufRing.Take(id, int(res), o.flags)
		} else {
			data = c.ownBuf[:res]
		}
		l.stats.readBytes.Add(uint64(res))
		if !c.closing {
			c.deliver(data)
		}
		if recycle {
			l.bufRing.Recycle(id)
		}
	case res == 0:
		c.closeOnLoop(io.EOF)
	case res == -int32(syscall.ENOBUFS):
		l.stats.enobufs.Add(1)
		// Buffers come back when this batch's recycles are committed;
		// re-arm below (after the commit at the end of reap).
	case res == -int32(syscall.ECANCELED):
		// paused, or closing
	default:
		c.closeOnLoop(c.fd.opError("read", sysError("read", ioErrno(res))))
	}
	if c.closing {
		c.maybeFinalize()
		return
	}
	if !o.armed && !c.paused {
		if res == -int32(syscall.ENOBUFS) {
			l.bufRing.Commit()
		}
		l.arm(o)
	}
}

func (o *op) bufferID() (uint16, bool) {
	return uint16(o.flags >> 16), o.flags&1 != 0
}

func (c *CallbackConn) deliver(data []byte) {
	if c.blocking {
		cp := append([]byte(nil), data...)
		c.l.rt.pool.GoKey(uint64(c.fd.fd), func() { defer c.recoverHandler(); c.h.OnData(c, cp) })
		return
	}
	defer c.recoverHandler()
	c.h.OnData(c, data)
}

// flushCB submits one send per dirty connection (loop only).
func (l *loop) flushCB() {
	for i, c := range l.dirty {
		l.dirty[i] = nil
		c.dirty = false
		if c.sendOp.armed || len(c.out) == 0 {
			continue
		}
		c.out, c.sending = c.sending[:0], c.out
		c.sent = 0
		c.sendOp.buf = c.sending
		l.arm(&c.sendOp)
	}
	l.dirty = l.dirty[:0]
}

// onSend handles a send CQE: resubmit the rest of a short send, then the
// next queued output.
func (c *CallbackConn) onSend(o *op) {
	l := c.l
	if o.res < 0 {
		if o.res != -int32(syscall.ECANCELED) {
			c.fail(c.fd.opError("write", sysError("write", ioErrno(o.res))))
		}
		c.maybeFinalize()
		return
	}
	l.stats.writtenBytes.Add(uint64(o.res))
	c.sent += int(o.res)
	if c.sent < len(c.sending) {
		o.buf = c.sending[c.sent:]
		l.arm(o)
		return
	}
	c.sending = c.sending[:0]
	o.buf = nil
	if len(c.out) > 0 && !c.dirty {
		c.dirty = true
		l.dirty = append(l.dirty, c)
	}
	if c.paused && len(c.out) < l.rt.cfg.MaxWriteBuffer/2 && !c.closing {
		c.paused = false
		if !c.recvOp.armed {
			l.arm(&c.recvOp)
		}
	}
	c.maybeFinalize()
}

// closeOnLoop starts closing: stop reading, send what is queued, then close
// the fd and call OnClose with err (nil for a local Close).
func (c *CallbackConn) closeOnLoop(err error) {
	if c.closing {
		return
	}
	c.closing = true
	c.closeErr = err
	if err != nil && err != io.EOF {
		c.out = c.out[:0] // an error: nothing more can be sent
		c.l.cancelOp(&c.sendOp)
	}
	c.l.cancelOp(&c.recvOp)
	c.maybeFinalize()
}

func (c *CallbackConn) fail(err error) {
	c.out = c.out[:0]
	if !c.closing {
		c.closing = true
		c.closeErr = err
		c.l.cancelOp(&c.recvOp)
	}
}

// maybeFinalize closes the fd once closing, output drained and no op armed.
func (c *CallbackConn) maybeFinalize() {
	if c.finalized {
		return
	}
	if !c.closing || c.armed > 0 || len(c.out) > 0 && !c.l.stopping {
		if c.closing && len(c.out) > 0 && !c.sendOp.armed && !c.dirty {
			c.dirty = true
			c.l.dirty = append(c.l.dirty, c)
		}
		return
	}
	l := c.l
	c.finalized = true
	delete(l.cbConns, c)
	if c.slot >= 0 {
		l.releaseFixedFile(c.slot)
		c.slot = -1
	}
	c.fd.closing.Store(true)
	l.closeFD(c.fd)
	err := c.closeErr
	if err == errRuntimeClosed {
		err = nil
	}
	if c.blocking {
		l.rt.pool.GoKey(uint64(c.fd.fd), func() { c.h.OnClose(c, err) })
		return
	}
	defer func() {
		if v := recover(); v != nil {
			l.rt.handlerPanic(v)
		}
	}()
	c.h.OnClose(c, err)
}

// shutdownCB stops reading every callback conn of the loop and closes each
// once its queued output is sent.
func (l *loop) shutdownCB() {
	for c := range l.cbConns {
		c.closeOnLoop(nil)
	}
}
