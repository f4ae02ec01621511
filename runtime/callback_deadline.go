package uringrt

import "time"

// The per-connection deadlines of the callback API (SetReadTimeout,
// SetWriteTimeout): a periodic check on the connection's loop every
// quarter of the timeout, reading the stamps that the connection's recv
// and send completions leave (only when it has timers: c.tm != nil).

// setDeadline sets the read (write false) or write timeout (any goroutine).
func (c *CallbackConn) setDeadline(d time.Duration, write bool) error {
	if c.std != nil {
		return c.stdSetTimeout(d, write) // std_deadline.go
	}
	c.l.post(request{kind: reqFunc, fn: func() { c.l.setDeadline(c, int64(max(d, 0)), write) }})
	return nil
}

// setDeadline applies it (loop only).
func (l *loop) setDeadline(c *CallbackConn, d int64, write bool) {
	if c.finalized || c.closing && !(write && c.sendsAtClose()) {
		return
	}
	tm := c.timers()
	cur, to := &tm.rdT, &tm.readTO
	if write {
		cur, to = &tm.wrT, &tm.writeTO
	}
	if *cur != nil {
		l.cancelTimer(*cur)
		*cur = nil
	}
	*to = d
	if d == 0 {
		return
	}
	now := monoNow()
	tm.lastRead, tm.lastWrite = now, now
	check := (*CallbackConn).checkRead
	if write {
		check = (*CallbackConn).checkWrite
	}
	period := max(d/4, int64(time.Millisecond))
	t := &LoopTimer{c: c, check: check, period: period}
	*cur = t
	l.addTimer(t, period)
}

// checkRead closes c when it received nothing for its read timeout.
func (c *CallbackConn) checkRead(now int64) {
	tm := c.tm
	if c.paused || c.rdPaused.Load() || c.rdEOF {
		tm.lastRead = now // not reading: nothing to wait for
		return
	}
	if now-tm.lastRead >= tm.readTO {
		c.cutOff(ErrReadTimeout, timedOutRead) // callback_bounds.go: reset
	}
}

// checkWrite closes c when its queued output made no progress for its
// write timeout; a close already under way (Close) then drops the output
// it was sending. Without a send completing for a check period, it asks
// the kernel whether the peer took bytes meanwhile (peerTook): a large
// send stays in flight while a slow peer reads. Only a send in flight can
// stall: output queued and not yet sent (the flush after this callback
// batch sends it) starts the wait now, not at the last check, which ran
// before the output came and may be long ago when the loop was held up
// (a long callback, the process descheduled).
func (c *CallbackConn) checkWrite(now int64) {
	tm := c.tm
	if !c.sending() {
		tm.lastWrite = now // nothing sent, nothing waits on the peer
		return
	}
	if now-tm.lastWrite >= tm.wrT.period && c.peerTook() {
		tm.lastWrite = now
	}
	if now-tm.lastWrite < tm.writeTO {
		return
	}
	c.cutOff(ErrWriteTimeout, timedOutWrite) // callback_bounds.go: reset
}
