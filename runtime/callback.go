package uringrt

import (
	"io"
	"net"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

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
	sendIov   []unix.Iovec // the iovecs of a sendmsg in flight (sendOp)
	sendMsg   unix.Msghdr  // its msghdr, read by the kernel until the CQE
	outq      outQueue     // queued output, in chunks of the loop's pool (outq.go)
	dirty     bool
	paused    bool  // over the memory budget (budget.go): not reading
	active    bool  // read or write progress since the last idle sweep (idle.go)
	idleSeen  int64 // unix ns of the idle sweep that last found progress
	closing   bool
	finalized bool
	closeErr  error
	armed     int
	ownBuf    []byte // single-shot recv buffer when there is no buffer ring
	blocking  bool
	rdEOF     bool  // the peer's FIN came and the handler keeps the write side open
	slot      int32 // registered file slot, or -1

	// wrClosed: no more writes are accepted (a Close began, or AsyncClose
	// was posted). Set and read under the loop's queue lock, so an
	// AsyncWrite either is queued ahead of the close or fails.
	wrClosed atomic.Bool
	// pendingWrites counts AsyncWrites posted and not yet taken by the
	// loop: the fd is not closed while some are on their way.
	pendingWrites atomic.Int32

	// std backend: stdClosed is closed by Close so that a half-open
	// connection's reader can call OnClose.
	stdClosed   chan struct{}
	stdCloseOne sync.Once

	// std backend
	std   net.Conn
	stdMu sync.Mutex

	value any
}

func newCallbackConn(fd *netFD, h Handler, ln *listener) *CallbackConn {
	cc := &CallbackConn{fd: fd, h: h, ln: ln, l: fd.l, slot: -1, active: true}
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
	c.queue(p, false)
	return len(p), nil
}

// WriteNoCopy is Write for (part of) the data OnData is being called with,
// as an echo or a proxy sends it on: when p is at least 2 KiB and lies in
// that data, and c is on the same loop, the provided buffers holding it are
// queued instead of a copy, sent from the buffer ring and recycled once
// sent (buffer lending, lend.go). The caller must not modify p's bytes
// after the call, even before OnData returns. Otherwise (other memory, a
// short p, a quarter of the loop's buffers already lent,
// Config.DisableBufferLending, a MayBlocker handler) it copies, as Write.
// It returns len(p), nil, or net.ErrClosed after the connection closed.
// Call it from OnData only.
func (c *CallbackConn) WriteNoCopy(p []byte) (int, error) {
	if c.std != nil || c.blocking {
		return c.Write(p)
	}
	if c.closing {
		return 0, net.ErrClosed
	}
	c.queue(p, true)
	return len(p), nil
}

// AsyncWrite queues a copy of p from any goroutine: the bytes are posted to
// the connection's loop and sent after what was queued before. It returns
// len(p), nil, or 0, net.ErrClosed once a Close or AsyncClose began (or
// the connection ended): bytes it accepts are sent before the connection
// closes, unless the connection fails first (a reset, a write error).
func (c *CallbackConn) AsyncWrite(p []byte) (int, error) {
	if c.std != nil {
		return c.Write(p)
	}
	data := append([]byte(nil), p...)
	l := c.l
	l.mu.Lock()
	if c.wrClosed.Load() || l.exited {
		l.mu.Unlock()
		return 0, net.ErrClosed
	}
	c.pendingWrites.Add(1)
	l.queue = append(l.queue, request{kind: reqCBWrite, cc: c, data: data})
	l.mu.Unlock()
	l.wake()
	return len(p), nil
}

// Close closes the connection after the queued output is sent; OnClose
// follows with a nil error. Like Write, call it from the handler's
// callbacks; AsyncClose works from any goroutine. Writes after it return
// net.ErrClosed.
func (c *CallbackConn) Close() error {
	if c.std != nil {
		return c.closeStd()
	}
	if c.blocking {
		return c.AsyncClose()
	}
	c.closeOnLoop(nil)
	return nil
}

// AsyncClose is Close from any goroutine: AsyncWrites that returned before
// it are sent first; AsyncWrites after it return net.ErrClosed.
func (c *CallbackConn) AsyncClose() error {
	if c.std != nil {
		return c.closeStd()
	}
	l := c.l
	l.mu.Lock()
	if l.exited {
		l.mu.Unlock()
		return nil
	}
	c.wrClosed.Store(true)
	l.queue = append(l.queue, request{kind: reqCBClose, cc: c})
	l.mu.Unlock()
	l.wake()
	return nil
}

// closeStd closes a BackendStd connection and lets its reader call OnClose.
func (c *CallbackConn) closeStd() error {
	err := c.std.Close()
	if c.stdClosed != nil {
		c.stdCloseOne.Do(func() { close(c.stdClosed) })
	}
	return err
}

// shutWrites refuses further AsyncWrites (loop only; see wrClosed).
func (c *CallbackConn) shutWrites() {
	if c.wrClosed.Load() {
		return
	}
	c.l.mu.Lock()
	c.wrClosed.Store(true)
	c.l.mu.Unlock()
}

// queueAsync takes the bytes of an AsyncWrite (loop only).
func (c *CallbackConn) queueAsync(p []byte) {
	c.pendingWrites.Add(-1)
	c.queue(p, false)
	if c.closing {
		c.maybeFinalize()
	}
}

// queue appends p to the output (loop only). While a Close is under way
// the bytes still go out before the fd closes; after a failure (reset,
// write error, the runtime closing) there is nowhere to send them.
func (c *CallbackConn) queue(p []byte, noCopy bool) {
	if c.finalized || c.closing && c.closeErr != nil && c.closeErr != io.EOF {
		return
	}
	if !noCopy || !c.tryLend(p) { // lend.go: the buffers OnData got, without a copy
		c.outq.write(c.l, p)
	}
	if !c.dirty {
		c.dirty = true
		c.l.dirty = append(c.l.dirty, c)
	}
	c.afterQueue()
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

// closeOnLoop starts closing: stop reading, send what is queued, then close
// the fd and call OnClose with err (nil for a local Close).
func (c *CallbackConn) closeOnLoop(err error) {
	if c.closing {
		return
	}
	c.closing = true
	c.closeErr = err
	c.shutWrites()
	if err != nil && err != io.EOF {
		c.outq.discard(c.l, c.sendOp.armed) // an error: nothing more can be sent
		c.l.cancelOp(&c.sendOp)
	}
	c.l.cancelOp(&c.recvOp)
	c.maybeFinalize()
}

func (c *CallbackConn) fail(err error) {
	c.outq.discard(c.l, c.sendOp.armed)
	if !c.closing {
		c.closing = true
		c.closeErr = err
		c.shutWrites()
		c.l.cancelOp(&c.recvOp)
	}
}

// maybeFinalize closes the fd once closing, output drained and no op armed.
func (c *CallbackConn) maybeFinalize() {
	if c.finalized {
		return
	}
	if !c.closing || c.armed > 0 || (c.outq.n > 0 || c.pendingWrites.Load() > 0) && !c.l.stopping {
		if c.closing && c.outq.n > 0 && !c.sendOp.armed && !c.dirty {
			c.dirty = true
			c.l.dirty = append(c.l.dirty, c)
		}
		return
	}
	l := c.l
	c.finalized = true
	c.outq.release(l) // no send in flight: every chunk goes back
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
