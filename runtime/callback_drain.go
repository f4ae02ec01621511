package uringrt

// Drainer is implemented by handlers that want to know when a connection's
// queued output has drained, to pause a producer while a consumer is slow
// and resume it after, or to drop a consumer that stays full.
type Drainer interface {
	// OnDrained is called, as a callback of c (on its loop, or its worker
	// for a MayBlocker handler), when the bytes queued for c
	// (OutboundBuffered) fall to its low-water mark or below after they
	// had passed it, or after a write to c failed with
	// ErrWriteBufferFull. It is called once per such episode, not per
	// send, and not after the connection began closing.
	OnDrained(c *CallbackConn)
}

// SetLowWater sets the mark, in bytes, under which OnDrained is called
// (Drainer); n <= 0 restores the default, Config.MaxWriteBuffer/2. It may
// be called anywhere.
func (c *CallbackConn) SetLowWater(n int) {
	c.lowWater.Store(int64(max(n, 0)))
}

func (c *CallbackConn) lowMark() int {
	if lw := c.lowWater.Load(); lw > 0 {
		return int(lw)
	}
	if c.std != nil {
		return 0
	}
	return c.l.rt.cfg.MaxWriteBuffer / 2
}

// noteDrainMark remembers that the queue passed the low-water mark (loop
// only, after bytes were queued).
func (c *CallbackConn) noteDrainMark() {
	if c.hasDrainer && !c.drainWant && c.outq.n > c.lowMark() {
		c.drainWant = true
	}
}

// refused records a write refused with ErrWriteBufferFull (any goroutine):
// OnDrained follows once the queue drained. The loop is asked to check,
// in case the queue drained before the flag was seen.
func (c *CallbackConn) refused() {
	if !c.hasDrainer || c.drainReq.Swap(true) {
		return
	}
	c.l.post(request{kind: reqFunc, fn: c.checkDrain})
}

// checkDrain calls OnDrained when a drain was awaited and the queue is at
// or under the low-water mark (loop only: after a send CQE, or asked by
// refused).
func (c *CallbackConn) checkDrain() {
	if !c.hasDrainer || !c.drainWant && !c.drainReq.Load() || c.closing {
		return
	}
	if c.outq.n+int(c.posted.Load()) > c.lowMark() {
		return
	}
	if c.rtRefused.Load() && c.l.rt.overSoftBudget() {
		c.l.waitBudget(c) // callback_bounds.go: refused for MaxBufferedBytes
		return
	}
	c.drainWant = false
	c.drainReq.Store(false)
	c.callback(c.h.(Drainer).OnDrained)
}
