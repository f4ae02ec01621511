package uringrt

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uringrt/uringrt/netpoll"
)

// CallbackConn is a connection served by the callback API (Runtime.Serve,
// DialCallback). Its callbacks run on its loop (or, for a MayBlocker
// handler, on its fixed worker); the Handler doc tells how to port a gnet
// server to it.
//
// Which method may be called where:
//
//   - Write, WriteNoCopy, AsyncWrite, Close, AsyncClose, OutboundBuffered,
//     SetLowWater, AfterFunc, Every, SetReadTimeout, SetWriteTimeout,
//     PauseRead, ResumeRead, LocalAddr, RemoteAddr: anywhere (any callback of any connection on
//     any loop, any goroutine).
//   - Peek, Next, Discard, InboundBuffered: in this connection's OnData
//     only; elsewhere they return ErrNotInCallback (InboundBuffered 0).
//   - SetValue, Value: in this connection's callbacks, or with the
//     caller's own synchronization.
//   - StartTLS (TLS server, crypto/tls doing the protocol; OnData then
//     gets plaintext and every write is sealed on the loop): in its OnOpen
//     or OnData; TLSConn in a callback after the handshake;
//     TLSConnectionState anywhere. See StartTLS for what TLS costs.
type CallbackConn struct {
	fd *netFD
	h  Handler
	l  *loop

	// loop-owned (small fields last, packed)
	recvOp    op
	snd       *cbSend  // the send in flight, or nil (op_cb_send.go)
	outq      outQueue // queued output, in chunks of the loop's pool (outq.go)
	idleSeen  int64    // unix ns of the idle sweep that last found progress
	closeErr  error
	stream    []byte // stream mode's recv buffer (callback_stream.go), or nil
	armed     int32  // ops of c in flight
	streamRun int32  // big recvs in a row toward stream mode
	slot      int32  // registered file slot, or -1
	sendSince uint32 // the loop's flush count when the send was armed (budget.go)
	dirty     bool
	paused    bool // over the memory budget (budget.go): not reading
	active    bool // read or write progress since the last idle sweep (idle.go)
	closing   bool
	finalized bool
	probing   bool // a new connection's first recvs (callback_stream.go)
	firstRecv bool // its first recv reads into a stream buffer (callback_stream.go)
	blocking  bool
	rdEOF     bool // the peer's FIN came and the handler keeps the write side open
	sendShort bool // the last send CQE took less than was submitted (budget.go)
	drainWant bool // queued bytes passed the low-water mark (callback_drain.go)
	rtWait    bool // among the loop's budget waiters (callback_bounds.go)
	finHeld   bool // the peer's FIN came while the handler paused reading, reported on resume
	lingering bool // the close waits for the peer after its output left (callback_linger.go)
	// hasDrainer: h is a Drainer whose OnDrained is set (callback_drain.go)
	hasDrainer bool
	// rtFull (the holder's, here to pack): a write in the callback was
	// refused for MaxBufferedBytes
	rtFull bool

	// In a callback (callback_write.go): cb is the callback state, and the
	// fields after it are touched only by the caller that holds it.
	cb atomic.Int32
	// dsend (not the holder's, here to pack): who owns the socket's send
	// side, the loop or a writer's direct send (callback_direct.go).
	dsend     atomic.Int32
	closeReq  bool // Close was called in a callback: closed when it returns
	wroteInCB bool // a callback queued output: flush and check the caps after it
	pauseReq  bool // a callback changed rdPaused: act on it after (callback_pause.go)
	batching  bool // this callback's writes go to cbOut (callback_write.go)
	// Not the holder's, here to pack: rdPaused, the handler paused
	// reading (PauseRead; finHeld above).
	rdPaused  atomic.Bool
	drainReq  atomic.Bool    // a write was refused: call OnDrained when drained
	rtRefused atomic.Bool    // a write was refused for MaxBufferedBytes (callback_bounds.go)
	rtAllow   int            // bytes OnData may still write past MaxBufferedBytes (its input's)
	frame     frameState     // framing (callback_frame.go)
	cbG       atomic.Uintptr // the goroutine running a callback of c (curG), or 0
	cbOut     []byte         // the batched writes, posted as one request when the callback returns
	direct    []byte         // loop-owned: the kept input's free space a recv reads into (callback_kept.go)

	lowWater atomic.Int64 // OnDrained's mark (bytes); 0: MaxWriteBuffer/2
	queued   atomic.Int64 // outq.n as of the loop's last flush or send CQE
	posted   atomic.Int64 // bytes of AsyncWrites posted and not yet taken
	inQueued atomic.Int64 // bytes of input handed to a MayBlocker's worker, not yet handled (budget.go)

	tm *connTimers // timers and deadlines (callback_timer_loop.go), nil without

	// wrClosed: no more writes are accepted (a Close began, or AsyncClose
	// was posted). Set and read under the loop's queue lock, so an
	// AsyncWrite either is queued ahead of the close or fails.
	wrClosed atomic.Bool
	// pendingWrites counts AsyncWrites posted and not yet taken by the
	// loop: the fd is not closed while some are on their way.
	pendingWrites atomic.Int32

	tlsp atomic.Pointer[tlsState] // TLS (tls_loop.go), nil without

	// std backend: the net.Conn, and the rest of its state (std.go)
	std net.Conn
	sx  *stdCB

	value any
}

// stdCB is what a BackendStd callback conn needs beside its net.Conn, so
// that a conn on a loop does not carry it (stdInit makes it).
type stdCB struct {
	// closed is closed by Close so that a half-open connection's reader
	// can call OnClose.
	closed   chan struct{}
	closeOne sync.Once
	resume   chan struct{} // ResumeRead wakes the reader
	maxIn    int           // Config.MaxWriteBuffer: the cap on kept input (framing)
	err      error         // OnClose's error when the runtime closed it (ErrInboundFull)
	mu       sync.Mutex
	tm       stdTimers  // its timers (callback_timer_std.go)
	wmu      sync.Mutex // Write: one writer at a time (OnData holds it)

	closing atomic.Bool   // Close began (std_close.go): writes return net.ErrClosed
	closeTO time.Duration // Config.CloseTimeout
	eofOnce sync.Once
	cl      stdClose
}

func newCallbackConn(fd *netFD, h Handler) *CallbackConn {
	cc := &CallbackConn{fd: fd, h: h, l: fd.l, slot: -1, active: true}
	if mb, ok := h.(MayBlocker); ok && mb.MayBlock() {
		cc.blocking = true
	}
	_, cc.hasDrainer = h.(Drainer)
	if hf, ok := h.(HandlerFuncs); ok && hf.Drained == nil {
		cc.hasDrainer = false
	}
	cc.frame.pool = &fd.l.rt.kept
	cc.recvOp = op{kind: opCBRecv, fd: fd.fd, cc: cc}
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

// closeStdRaw closes a BackendStd connection and lets its reader call
// OnClose.
func (c *CallbackConn) closeStdRaw() error {
	c.stdEndTimers()
	err := c.std.Close()
	if c.sx != nil {
		c.sx.closeOne.Do(func() { close(c.sx.closed) })
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
	}
	if l.bufRing == nil {
		c.recvOp.buf = make([]byte, l.rt.cfg.BufferSize) // its own buffer, for life
	} else {
		c.startRecv() // callback_stream.go
	}
	c.callOpen()
	if !c.closing && !c.rdPaused.Load() {
		l.arm(&c.recvOp)
	}
}

func (c *CallbackConn) callOpen() { c.callback(c.h.OnOpen) }

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
	if t := c.tlsSt(); t != nil && c.tlsClose(t, err) {
		return // tls_loop.go: a close that waits for the handshake
	}
	c.closing = true
	c.closeErr = err
	c.shutWrites()
	c.endTimers()
	if err != nil && err != io.EOF {
		c.outq.discard(c.l, c.sending()) // an error: nothing more can be sent
		c.cancelSend()
	}
	c.l.cancelOp(&c.recvOp)
	c.maybeFinalize()
	if gracefulErr(err) {
		c.armCloseTimer() // callback_bounds.go: Config.CloseTimeout
	}
}

func (c *CallbackConn) fail(err error) {
	if t := c.tlsSt(); t != nil {
		t.rc.end(true) // a handshake goroutine ends
	}
	c.outq.discard(c.l, c.sending())
	if !c.closing {
		c.closing = true
		c.closeErr = err
		c.shutWrites()
		c.endTimers()
		c.l.cancelOp(&c.recvOp)
	}
}

// maybeFinalize closes the fd once closing, output drained and no op armed.
func (c *CallbackConn) maybeFinalize() {
	if c.finalized {
		return
	}
	if !c.closing || c.armed > 0 || (c.outq.n > 0 || c.pendingWrites.Load() > 0) && !c.l.stopping {
		if c.closing && c.outq.n > 0 && !c.sending() && !c.dirty {
			c.dirty = true
			c.l.dirty = append(c.l.dirty, c)
		}
		return
	}
	l := c.l
	if c.directWait() == dsRest && !l.stopping {
		// A writer's direct send(2) left a rest, on its way to the loop
		// (pendingWrites counted it after the check above): it is sent
		// first, and its arrival (queueFront) comes back here. Closing
		// now dropped bytes whose AsyncWrite had succeeded.
		return
	}
	if c.lingers() {
		return // callback_linger.go: the peer may still send; wait for its FIN first
	}
	c.finalized = true
	c.outq.release(l) // no send in flight: every chunk goes back
	c.putSend()
	c.dropCloseTimer() // callback_bounds.go
	c.endTimers()      // the write timeout's check too: nothing of c stays in the heap
	l.unwaitBudget(c)
	c.leaveStream()
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
	if t := c.tlsSt(); t != nil {
		c.tlsClosed(t)
		if err == nil {
			err = t.err // a failed handshake's
		}
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
