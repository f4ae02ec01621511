package uringrt

import (
	"errors"
	"io"
	"net"
)

// ErrWriteBufferFull is returned by a CallbackConn's Write, WriteNoCopy and
// AsyncWrite when accepting p would take the bytes queued for the
// connection past Config.MaxWriteBuffer (unless nothing is queued: one
// write of any size is accepted into an empty queue), or the output queued
// by all connections of the runtime past Config.MaxBufferedBytes, from any
// caller (a write in OnData that sends back no more than that OnData
// received, as an echo or a proxy of its own input does, is let past the
// runtime cap: the read pause bounds it). Nothing of p was queued. The
// connection stays open; a Drainer handler's OnDrained tells when it has
// drained below its low-water mark (SetLowWater) and, after a refusal for
// MaxBufferedBytes, the runtime's queues are under half of it; a
// connection refused for MaxBufferedBytes in its own callback stops
// reading until then. Refusals are counted in
// uringrt_write_refusals_total{kind="conn"|"runtime"}.
var ErrWriteBufferFull = errors.New("uringrt: write buffer full")

// Write queues a copy of p for sending and returns len(p), nil; the loop
// sends queued bytes in one send per connection per iteration. It may be
// called anywhere: from this connection's callbacks it queues at once (the
// hot path: no lock, no allocation); from anywhere else (another
// connection's callback on any loop, any goroutine) it is AsyncWrite: the
// bytes are copied and posted to the connection's loop (a proxy writing
// what one connection's OnData received to another connection thus pays
// one allocation and copy for the post and one copy into the output
// queue; only a write to the connection's own output from its OnData, by
// WriteNoCopy, can skip the copy). Either way the
// bytes of one writer leave in the order it wrote them, and what one
// callback of the connection writes leaves contiguous: no other writer's
// bytes come between them (a MayBlocker handler's callback has its writes
// posted together when it returns; a callback's writes that follow
// AsyncWrites not yet queued likewise go together after those). Errors: 0,
// net.ErrClosed once the connection is closing or closed (after Close,
// AsyncClose, or the end of the connection); 0, ErrWriteBufferFull past
// the caps (see ErrWriteBufferFull). With BackendStd it writes to the
// net.Conn (blocking until written).
func (c *CallbackConn) Write(p []byte) (int, error) {
	if c.std != nil {
		if c.sx.closing.Load() {
			return 0, net.ErrClosed
		}
		if haveCurG && c.cbG.Load() == curG() {
			return c.stdWrite(p) // OnData holds sx.wmu (stdOnData)
		}
		c.sx.wmu.Lock()
		defer c.sx.wmu.Unlock()
		if c.sx.closing.Load() {
			return 0, net.ErrClosed // the Close came first (std_close.go)
		}
		return c.stdWrite(p)
	}
	if c.hold() {
		var n int
		var err error
		if c.blocking {
			n, err = c.writeHeldBlocking(p)
		} else {
			n, err = c.writeHeld(p, false)
		}
		c.unhold()
		return n, err
	}
	return c.post(p)
}

// writeHeldBlocking is writeHeld on a MayBlocker connection's worker: the
// output queue is the loop's, so the callback's writes are collected and
// posted together when it returns (batch), which keeps them contiguous.
func (c *CallbackConn) writeHeldBlocking(p []byte) (int, error) {
	if c.closeReq {
		return 0, net.ErrClosed
	}
	if len(p) == 0 {
		return 0, nil
	}
	return c.batch(p)
}

// WriteNoCopy is Write for (part of) the data OnData is being called with,
// as an echo or a proxy sends it on: when p is at least 2 KiB and lies in
// that data, and c is the connection OnData runs for, the provided buffers
// holding it are queued instead of a copy, sent from the buffer ring and
// recycled once sent (buffer lending). The caller must not modify
// p's bytes after the call, even before OnData returns. Otherwise (other
// memory, a short p, bytes joined with kept input by framing, a quarter of
// the loop's buffers already lent, Config.DisableBufferLending, a
// MayBlocker handler, a call from elsewhere) it copies, as Write. Results
// and errors are Write's.
func (c *CallbackConn) WriteNoCopy(p []byte) (int, error) {
	if c.std != nil || c.blocking {
		return c.Write(p)
	}
	if c.hold() {
		n, err := c.writeHeld(p, true)
		c.unhold()
		return n, err
	}
	return c.post(p)
}

// AsyncWrite queues a copy of p from anywhere through the connection's
// loop's request queue: the bytes are posted to the loop and sent after
// what was queued before. When nothing of the connection is queued, posted
// or being sent and its loop is parked (waiting for completions), with
// GOMAXPROCS > 1, p is first tried with one nonblocking send(2) from the
// caller's goroutine, and only what the socket did not take is copied and
// posted, ahead of anything queued meanwhile: no wake-up of the loop, the
// same order and caps. It returns len(p), nil; 0, net.ErrClosed once a
// Close or AsyncClose began (or the connection ended); 0,
// ErrWriteBufferFull past the caps. Bytes it accepts are sent before the
// connection closes, unless the connection fails first (a reset, a write
// error, a timeout).
func (c *CallbackConn) AsyncWrite(p []byte) (int, error) {
	if c.std != nil {
		return c.Write(p)
	}
	return c.post(p)
}

// OutboundBuffered returns the bytes accepted by the write methods and not
// yet sent (taken by the kernel). From this connection's callbacks it is
// exact; from elsewhere it may lag behind the loop by one iteration. 0
// with BackendStd, whose writes block.
func (c *CallbackConn) OutboundBuffered() int {
	if c.std != nil {
		return 0
	}
	if !c.blocking && c.hold() {
		n := c.outq.n + int(c.posted.Load())
		c.unhold()
		return n
	}
	return int(c.queued.Load() + c.posted.Load())
}

// writeHeld queues p for a caller that holds c's state.
func (c *CallbackConn) writeHeld(p []byte, noCopy bool) (int, error) {
	if c.closing || c.closeReq {
		return 0, net.ErrClosed
	}
	if len(p) == 0 {
		return 0, nil
	}
	if c.batching || !c.wroteInCB && c.pendingWrites.Load() > 0 {
		// AsyncWrites posted before this callback's first write are on
		// their way: its writes go after them, together (batch). Once
		// its first write is queued, the rest follow it.
		return c.batch(p)
	}
	// AsyncWrites of other goroutines add to posted and then read queued:
	// this write claims its bytes in queued first and then reads posted
	// (and gives the claim back if refused), so of two writes racing for
	// the last room at least one sees the other (both order a store
	// before a load; Go's atomics are sequentially consistent). Reading
	// posted before publishing queued let both pass the cap.
	c.queued.Store(int64(c.outq.n + len(p))) // (queue takes all of p: c is not closing)
	if q := c.outq.n + int(c.posted.Load()); q > 0 && q+len(p) > c.l.rt.cfg.MaxWriteBuffer {
		c.queued.Store(int64(c.outq.n))
		c.drainReq.Store(true)
		c.l.budget.refused[capConn].Add(1)
		return 0, ErrWriteBufferFull
	}
	ok, reserved := c.l.rt.budgetWrite(int64(len(p))) // callback_bounds.go
	if !ok && len(p) <= c.rtAllow {
		ok = true // OnData writes back no more than it received (an echo): the read pause bounds that
	}
	c.rtAllow = max(c.rtAllow-len(p), 0)
	if !ok {
		c.queued.Store(int64(c.outq.n))
		c.refusedByRuntime()
		c.drainReq.Store(true)
		c.rtFull = true // afterCB stops reading c until the runtime drains
		return 0, ErrWriteBufferFull
	}
	c.queue(p, noCopy)
	if reserved {
		c.l.rt.budgetWriteDone(int64(len(p)))
	}
	c.wroteInCB = true
	return len(p), nil
}

// post copies p onto the loop's request queue (any goroutine).
func (c *CallbackConn) post(p []byte) (int, error) {
	if c.wrClosed.Load() {
		return 0, net.ErrClosed
	}
	if len(p) == 0 {
		return 0, nil
	}
	l := c.l
	n := int64(len(p))
	if !c.reserve(n, false) {
		return 0, ErrWriteBufferFull
	}
	if c.postOnLoop(p) { // callback_inline_hold.go: a function of RunOnLoop
		return len(p), nil
	}
	if c.sendDirect(p) { // callback_direct.go
		return len(p), nil
	}
	data := append([]byte(nil), p...)
	l.mu.Lock()
	if c.wrClosed.Load() || l.exited {
		l.mu.Unlock()
		c.unpost(n)
		return 0, net.ErrClosed
	}
	c.pendingWrites.Add(1)
	l.queue = append(l.queue, request{kind: reqCBWrite, cc: c, data: data})
	l.mu.Unlock()
	l.wake()
	return len(p), nil
}

// reserve counts n bytes about to be posted against the caps; past one it
// counts nothing, records the refusal and reports false. The bytes already
// queued are c.outq.n on the loop (onLoop), else c.queued, read after the
// bytes are counted as posted: the loop counts bytes as queued before it
// stops counting them as posted (queueAsync), so no moment has them in
// neither.
func (c *CallbackConn) reserve(n int64, onLoop bool) bool {
	rt := c.l.rt
	q := c.posted.Add(n) - n
	if onLoop {
		q += int64(c.outq.n)
	} else {
		q += c.queued.Load()
	}
	if q > 0 && q+n > int64(rt.cfg.MaxWriteBuffer) {
		c.posted.Add(-n)
		c.l.budget.refused[capConn].Add(1)
		c.refused()
		return false
	}
	max := rt.cfg.MaxBufferedBytes
	if max > 0 && rt.budget.posted.Add(n)+rt.budget.held.Load() > max {
		rt.budget.posted.Add(-n)
		c.posted.Add(-n)
		c.refusedByRuntime() // callback_bounds.go
		c.refused()
		return false
	}
	return true
}

// batch takes a write of c's own callback (loop, holding the state) while
// AsyncWrites posted before it have not reached the queue: the callback's
// bytes must leave after those, and together, so they are collected in
// cbOut and posted as one request when the callback returns (postBatch).
// Another writer's bytes can then come before or after them, never
// between.
func (c *CallbackConn) batch(p []byte) (int, error) {
	if c.wrClosed.Load() {
		return 0, net.ErrClosed
	}
	if !c.reserve(int64(len(p)), !c.blocking) { // a worker: outq is the loop's
		return 0, ErrWriteBufferFull
	}
	if !c.batching {
		c.batching = true
		c.pendingWrites.Add(1) // the fd stays open until the batch is queued
	}
	c.cbOut = append(c.cbOut, p...)
	return len(p), nil
}

// postBatch posts what the callback that just returned collected in cbOut
// (its runner: the loop, or the worker).
func (c *CallbackConn) postBatch() {
	data := c.cbOut
	c.batching, c.cbOut = false, nil
	l := c.l
	l.mu.Lock()
	if l.exited {
		l.mu.Unlock()
		c.unpost(int64(len(data)))
		c.pendingWrites.Add(-1)
		return
	}
	l.queue = append(l.queue, request{kind: reqCBWrite, cc: c, data: data})
	l.mu.Unlock()
	l.wake()
}

// unpost takes n posted bytes off the accounts.
func (c *CallbackConn) unpost(n int64) {
	c.posted.Add(-n)
	if c.l.rt.cfg.MaxBufferedBytes > 0 {
		c.l.rt.budget.posted.Add(-n)
	}
}

// queueAsync takes the bytes of an AsyncWrite (loop only). They count
// as queued before they stop counting as posted: post checks the two
// together, and a moment with p in neither would let a write past the
// caps.
func (c *CallbackConn) queueAsync(p []byte) {
	c.queue(p, false)
	c.queued.Store(int64(c.outq.n))
	c.unpost(int64(len(p)))
	c.pendingWrites.Add(-1)
	c.markDirty()
	c.afterQueue()
	c.noteDrainMark()
	if c.closing {
		c.maybeFinalize()
	}
}

// queue appends p to the output (loop, or a holder of c's state). While a
// Close is under way the bytes still go out before the fd closes; after a
// failure (reset, write error, the runtime closing) there is nowhere to
// send them.
func (c *CallbackConn) queue(p []byte, noCopy bool) {
	if c.finalized || c.closing && c.closeErr != nil && c.closeErr != io.EOF {
		return
	}
	if t := c.tlsSt(); t != nil {
		c.tlsQueue(t, p) // tls_loop.go: sealed here, in the queue's order
		return
	}
	if !noCopy || !c.tryLend(p) { // lend.go: the buffers OnData got, without a copy
		c.outq.write(c.l, p)
	}
}

// Close closes the connection after the queued output is sent; OnClose
// follows with a nil error. When the peer is still sending (its bytes
// unread) or has not yet acknowledged the output, a close(2) would reset
// the connection and drop what the kernel still held to send, so the
// connection's sending side is shut down instead (the FIN follows the
// output) and the runtime waits, dropping what the peer sends meanwhile,
// until the peer closes too or has acknowledged all the output, as
// net/http waits after CloseWrite; a peer that takes none of it for 500 ms
// ends the wait, and CloseTimeout bounds it. OnClose comes after the
// socket's close. A peer that does not take the output cannot
// hold the connection: past Config.CloseTimeout (10 s by default) after
// the Close, or sooner when the write timeout of SetWriteTimeout passes
// without progress, the output is dropped, the connection reset (the peer
// sees an error, not an orderly end) and OnClose gets ErrCloseTimeout or
// ErrWriteTimeout. It may be called anywhere: in this connection's
// callback it takes effect when the callback returns (no OnData follows
// it); elsewhere it is AsyncClose. Writes after it return net.ErrClosed.
// It returns nil.
func (c *CallbackConn) Close() error {
	if c.std != nil {
		return c.closeStdGraceful()
	}
	if !c.blocking && c.hold() {
		c.closeReq = true
		c.shutWrites()
		c.unhold()
		return nil
	}
	return c.AsyncClose()
}

// AsyncClose is Close through the loop's request queue, from anywhere:
// writes that returned before it are sent first; writes after it return
// net.ErrClosed. It returns nil.
func (c *CallbackConn) AsyncClose() error {
	if c.std != nil {
		return c.closeStdGraceful()
	}
	if c.closeOnLoopInline() { // callback_inline_hold.go: a function of RunOnLoop
		return nil
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
