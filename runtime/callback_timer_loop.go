package uringrt

import (
	"io"
	"time"
)

// The loop's side of the callback timers: a connection's list of its
// timers, arming and dropping them, and their runs at the top of each
// loop iteration (bounded per iteration) and on a MayBlocker's worker.

// connTimers is a connection's timer state (loop-owned).
type connTimers struct {
	head      *LoopTimer // its timers, in the heap or running, to end them at close
	lastRead  int64      // monoNow of the last recv (or of SetReadTimeout)
	lastWrite int64      // monoNow of the last send submitted or progressing
	readTO    int64      // ns; 0: off
	writeTO   int64
	rdT, wrT  *LoopTimer // the deadlines' checks
	clT       *LoopTimer // the close timeout (Config.CloseTimeout), while a close sends
	sentQ     int        // the kernel's send queue at the write check's last look (callback_bounds.go)
	lg        *cbLinger  // a close's wait for the peer (callback_linger.go), while it lasts
}

func (c *CallbackConn) timers() *connTimers {
	if c.tm == nil {
		c.tm = &connTimers{}
	}
	return c.tm
}

// link adds t to the list.
func (tm *connTimers) link(t *LoopTimer) {
	t.prev, t.next = nil, tm.head
	if tm.head != nil {
		tm.head.prev = t
	}
	tm.head = t
	t.listed = true
}

// unlink takes t out of the list (if in it).
func (tm *connTimers) unlink(t *LoopTimer) {
	if !t.listed {
		return
	}
	if t.prev != nil {
		t.prev.next = t.next
	} else {
		tm.head = t.next
	}
	if t.next != nil {
		t.next.prev = t.prev
	}
	t.prev, t.next, t.listed = nil, nil, false
}

// armTimer puts t, due at t.when, in the heap and c's list (the loop, or
// the holder of c's state).
func (l *loop) armTimer(t *LoopTimer) {
	c := t.c
	if t.state.Load() != timerArmed || c.finalized || c.closing && !c.keepsTimer(t) || t.check == nil && c.wrClosed.Load() {
		t.state.Store(timerStopped)
		return
	}
	c.timers().link(t)
	l.timers.push(t)
}

// addTimer arms t due in d ns (loop only).
func (l *loop) addTimer(t *LoopTimer, d int64) {
	t.when = monoNow() + max(d, 0)
	l.armTimer(t)
}

// dropTimer takes t out of the heap and its connection's list (loop, or
// the holder of c's state). Its state is left as it is.
func (l *loop) dropTimer(t *LoopTimer) {
	if t.hidx > 0 {
		l.timers.remove(t)
	}
	if t.c.tm != nil {
		t.c.tm.unlink(t)
	}
}

// cancelTimer stops t and drops it (loop only).
func (l *loop) cancelTimer(t *LoopTimer) {
	t.state.Store(timerStopped)
	l.dropTimer(t)
}

// Expiry per loop iteration: at most timerBatch timers, and no new one
// once timerSlice has passed (looked at every 32), so that timers due
// together leave the loop's I/O its turn.
const (
	timerBatch = 1024
	timerSlice = int64(300 * time.Microsecond)
)

// runTimers runs the expired timers, a bounded amount of them (loop only;
// once per iteration).
func (l *loop) runTimers() {
	if len(l.timers) == 0 {
		return
	}
	now := monoNow()
	for n := 1; len(l.timers) > 0 && l.timers[0].when <= now; n++ {
		if n > timerBatch || n%32 == 0 && monoNow()-now > timerSlice {
			return
		}
		t := l.timers.pop()
		l.fire(t, now)
	}
	l.timers.shrink()
}

// fire runs t, taken out of the heap because it is due (loop only).
func (l *loop) fire(t *LoopTimer, now int64) {
	c := t.c
	if t.check != nil { // a deadline's check (loop-owned)
		if t.state.Load() != timerArmed || c.finalized || c.closing && !c.keepsTimer(t) {
			l.cancelTimer(t)
			return
		}
		if t.period == 0 {
			l.cancelTimer(t) // once
		} else {
			t.when = nextDue(t.when, now, now, t.period)
			l.timers.push(t)
		}
		t.check(c, now)
		return
	}
	if t.state.Load() != timerArmed || c.closing || c.wrClosed.Load() {
		l.cancelTimer(t)
		return
	}
	if c.blocking {
		// On c's worker, behind its other callbacks: the run checks there
		// that the timer was not stopped nor the connection closed
		// meanwhile. A periodic timer is not due again before that run
		// ends (runOnWorker posts it back).
		if t.period == 0 {
			c.tm.unlink(t)
		}
		slot := t.when
		l.rt.pool.GoKey(uint64(c.fd.fd), func() { t.runOnWorker(slot) })
		return
	}
	if t.period == 0 {
		c.tm.unlink(t)
		if t.state.CompareAndSwap(timerArmed, timerStopped) {
			c.runTimerCB(t.f)
		}
		return
	}
	if !t.state.CompareAndSwap(timerArmed, timerRunning) {
		l.dropTimer(t)
		return
	}
	slot := t.when
	c.runTimerCB(t.f)
	if t.state.CompareAndSwap(timerRunning, timerArmed) {
		l.reschedule(t, slot, now, monoNow())
	}
}

// runOnWorker is a run of t on its connection's worker (MayBlocker).
func (t *LoopTimer) runOnWorker(slot int64) {
	c := t.c
	if c.wrClosed.Load() {
		return // Close returned, or the connection ended: none of its timers runs
	}
	if t.period == 0 {
		if t.state.CompareAndSwap(timerArmed, timerStopped) {
			c.runTimerCB(t.f)
		}
		return
	}
	if !t.state.CompareAndSwap(timerArmed, timerRunning) {
		return // stopped: Stop or the close took it out of the list
	}
	start := monoNow()
	c.runTimerCB(t.f)
	end := monoNow()
	if t.state.CompareAndSwap(timerRunning, timerArmed) {
		l := c.l
		l.post(request{kind: reqFunc, fn: func() { l.reschedule(t, slot, start, end) }})
	}
}

// runTimerCB runs a timer's f as a callback of c (the loop, or c's
// worker), unless c began closing: the check comes after the callback
// state is taken, so a run either started before a Close (or AsyncClose)
// set wrClosed and returned, or does not run at all.
func (c *CallbackConn) runTimerCB(f func(*CallbackConn)) {
	c.enterCB()
	defer c.exitCB()
	if c.wrClosed.Load() {
		return
	}
	f(c)
}

// reschedule puts a periodic timer whose run due at slot went from start
// to end back in the heap (loop only).
func (l *loop) reschedule(t *LoopTimer, slot, start, end int64) {
	c := t.c
	if t.state.Load() != timerArmed || !t.listed || c.closing || c.finalized {
		return
	}
	t.when = nextDue(slot, start, end, t.period)
	l.timers.push(t)
}

// timerWait bounds the loop's wait by the next timer: it returns the
// timeout to wait with, and false when a timer is due now (do not wait).
func (l *loop) timerWait(timeout time.Duration) (time.Duration, bool) {
	if len(l.timers) == 0 {
		return timeout, true
	}
	d := time.Duration(l.timers[0].when - monoNow())
	if d <= 0 {
		return 0, false
	}
	return min(timeout, d), true
}

// endTimers stops c's timers and takes them out of the heap (loop only; c
// is closing, or finalized), but the write timeout's check of a close
// that still sends its queued output.
func (c *CallbackConn) endTimers() {
	if c.tm == nil {
		return
	}
	for t := c.tm.head; t != nil; {
		next := t.next
		if !c.keepsTimer(t) {
			c.l.cancelTimer(t)
		}
		t = next
	}
}

// keepsTimer reports whether t runs on while c is closing: the write
// timeout's check and the close timeout, while the close sends the queued
// output (Close), so that a peer that never reads cannot hold the
// connection and its output for ever, and the bound of the close's wait
// for the peer's FIN (callback_linger.go) (loop only).
func (c *CallbackConn) keepsTimer(t *LoopTimer) bool {
	return c.tm != nil && (t == c.tm.wrT || t == c.tm.clT || c.tm.lg != nil && t == &c.tm.lg.t) && c.sendsAtClose()
}

// sendsAtClose reports whether c's close sends its queued output: Close,
// or the peer's EOF, not a failure (loop only).
func (c *CallbackConn) sendsAtClose() bool {
	return !c.finalized && (c.closeErr == nil || c.closeErr == io.EOF)
}
