package uringrt

import (
	"container/heap"
	"io"
	"os"
	"sync/atomic"
	"time"
)

// Timers of the callback API: loop timers (AfterFunc, Every) and the
// per-connection deadlines (SetReadTimeout, SetWriteTimeout), all run on
// the connection's loop from one heap per loop. The loop runs the expired
// ones once per iteration and bounds its wait by the next deadline
// (loop.go). A connection without timers costs nothing more than a nil
// check per recv and send; a loop without timers, a length check per
// iteration.

// ErrReadTimeout is the error OnClose gets when a connection received
// nothing for its read timeout (SetReadTimeout). It wraps
// os.ErrDeadlineExceeded (errors.Is) and has Timeout() true.
var ErrReadTimeout error = &cbTimeoutError{"uringrt: read timeout: nothing received for the connection's read timeout"}

// ErrWriteTimeout is the error OnClose gets when a connection's queued
// output made no progress for its write timeout (SetWriteTimeout): the
// peer stopped reading. It wraps os.ErrDeadlineExceeded (errors.Is) and
// has Timeout() true.
var ErrWriteTimeout error = &cbTimeoutError{"uringrt: write timeout: queued output not sent for the connection's write timeout"}

type cbTimeoutError struct{ s string }

func (e *cbTimeoutError) Error() string   { return e.s }
func (e *cbTimeoutError) Unwrap() error   { return os.ErrDeadlineExceeded }
func (e *cbTimeoutError) Timeout() bool   { return true }
func (e *cbTimeoutError) Temporary() bool { return true }

// monoBase anchors the loops' timer clock (set once, never written after).
var monoBase = time.Now()

// monoNow is the monotonic clock of the timers, in ns.
func monoNow() int64 { return int64(time.Since(monoBase)) }

// LoopTimer is a function scheduled on a connection's loop by AfterFunc or
// Every. It ends with the connection: it does not run once the connection
// began closing.
type LoopTimer struct {
	c      *CallbackConn
	f      func(*CallbackConn)        // a user's function, run as a callback of c
	check  func(*CallbackConn, int64) // or a deadline's check (given now)
	when   int64                      // monoNow when due
	period int64                      // ns between runs; 0: once
	state  atomic.Int32               // 0 pending; 1 stopped, fired once, or ended
	index  int                        // in the loop's heap
}

// Stop stops the timer: f does not run again. It reports whether it
// stopped a run still to come (false once a one-shot timer ran, or after
// an earlier Stop, or once the connection closed). It may be called
// anywhere; a run already under way on the loop completes.
func (t *LoopTimer) Stop() bool {
	return t != nil && t.state.CompareAndSwap(0, 1)
}

// AfterFunc runs f(c) once after d, as a callback of c (on its loop, or
// its worker for a MayBlocker handler: never concurrently with its other
// callbacks), so f may write to c directly. The timer is cancelled when the
// connection begins closing. It may be called anywhere. Resolution: a loop
// iteration (the loop's wait is bounded by the next deadline). With
// BackendStd, f runs on a goroutine of its own.
func (c *CallbackConn) AfterFunc(d time.Duration, f func(c *CallbackConn)) *LoopTimer {
	t := &LoopTimer{c: c, f: f}
	c.schedule(t, d)
	return t
}

// Every runs f(c) every d (d > 0; at least 1 ms) as a callback of c, as
// AfterFunc does, until Stop or the connection begins closing. A run that
// comes late does not make the next come early: runs that fall behind are
// skipped, not bunched.
func (c *CallbackConn) Every(d time.Duration, f func(c *CallbackConn)) *LoopTimer {
	d = max(d, time.Millisecond)
	t := &LoopTimer{c: c, f: f, period: int64(d)}
	c.schedule(t, d)
	return t
}

// SetReadTimeout closes the connection when it received nothing for d
// (while reading is not paused by backpressure); OnClose then gets
// ErrReadTimeout and queued output is dropped. The connection is reset
// (SO_LINGER 0), so the peer sees an error (ECONNRESET), not an orderly
// end; counted in uringrt_connections_timed_out_total{kind="read"}.
// d <= 0 turns it off. It may
// be called anywhere; the timeout counts from the call. The check runs
// every d/4, so the close comes between d and 1.25 x d after the last
// byte received. BackendStd: it returns errors.ErrUnsupported.
func (c *CallbackConn) SetReadTimeout(d time.Duration) error {
	return c.setDeadline(d, false)
}

// SetWriteTimeout closes the connection when its queued output made no
// progress for d (the peer does not read: a slow subscriber); OnClose then
// gets ErrWriteTimeout. Progress is the peer's: a send completing, or the
// kernel's send queue shrinking as the peer acknowledges bytes (SIOCOUTQ),
// so a slow reader is not cut while one large send is still in flight. The
// connection is reset (SO_LINGER 0), its output dropped: the peer sees an
// error (ECONNRESET), not an orderly end after a truncated stream (as with
// Go's net, a write deadline followed by Close); counted in
// uringrt_connections_timed_out_total{kind="write"}. It bounds a Close
// too, set before it or after: a closing connection whose output stalls
// for d is cut off the same way. d <= 0 turns it off. It may be called
// anywhere. The close comes between d and 1.25 x d after the last
// progress.
// BackendStd: it returns errors.ErrUnsupported.
func (c *CallbackConn) SetWriteTimeout(d time.Duration) error {
	return c.setDeadline(d, true)
}

// connTimers is a connection's timer state (loop-owned).
type connTimers struct {
	list      []*LoopTimer // its timers, to end them at close
	lastRead  int64        // monoNow of the last recv (or of SetReadTimeout)
	lastWrite int64        // monoNow of the last send submitted or progressing
	readTO    int64        // ns; 0: off
	writeTO   int64
	rdT, wrT  *LoopTimer // the deadlines' checks
	clT       *LoopTimer // the close timeout (Config.CloseTimeout), while a close sends
	sentQ     int        // the kernel's send queue at the write check's last look (callback_bounds.go)
}

// loopTimers is a loop's timer heap (loop-owned).
type loopTimers []*LoopTimer

func (h loopTimers) Len() int           { return len(h) }
func (h loopTimers) Less(i, j int) bool { return h[i].when < h[j].when }
func (h loopTimers) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *loopTimers) Push(x any) {
	t := x.(*LoopTimer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *loopTimers) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return t
}

// schedule adds t to c's loop after d (any goroutine).
func (c *CallbackConn) schedule(t *LoopTimer, d time.Duration) {
	if c.std != nil {
		c.stdTimer(t, d)
		return
	}
	c.l.post(request{kind: reqFunc, fn: func() { c.l.addTimer(t, int64(d)) }})
}

// addTimer puts t in the heap, due in d ns (loop only).
func (l *loop) addTimer(t *LoopTimer, d int64) {
	c := t.c
	if c.finalized || t.state.Load() != 0 || c.closing && !c.keepsTimer(t) {
		t.state.Store(1)
		return
	}
	tm := c.timers()
	if len(tm.list) >= 8 && len(tm.list) == cap(tm.list) {
		live := tm.list[:0]
		for _, x := range tm.list {
			if x.state.Load() == 0 {
				live = append(live, x)
			}
		}
		clear(tm.list[len(live):])
		tm.list = live
	}
	tm.list = append(tm.list, t)
	t.when = monoNow() + max(d, 0)
	heap.Push(&l.timers, t)
}

func (c *CallbackConn) timers() *connTimers {
	if c.tm == nil {
		c.tm = &connTimers{}
	}
	return c.tm
}

// runTimers runs the expired timers (loop only; once per iteration).
func (l *loop) runTimers() {
	if len(l.timers) == 0 {
		return
	}
	now := monoNow()
	for len(l.timers) > 0 && l.timers[0].when <= now {
		t := l.timers[0]
		c := t.c
		if t.state.Load() != 0 || c.finalized || c.closing && !c.keepsTimer(t) {
			heap.Pop(&l.timers)
			t.state.Store(1)
			continue
		}
		if t.period > 0 {
			t.when = max(t.when+t.period, now+1)
			heap.Fix(&l.timers, 0)
		} else {
			heap.Pop(&l.timers)
			if !t.state.CompareAndSwap(0, 1) {
				continue
			}
		}
		if t.check != nil {
			t.check(c, now)
		} else {
			c.callback(t.f)
		}
	}
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

// endTimers stops c's timers (loop only; c is closing), but the write
// timeout's check of a close that still sends its queued output.
func (c *CallbackConn) endTimers() {
	if c.tm == nil {
		return
	}
	for _, t := range c.tm.list {
		if !c.keepsTimer(t) {
			t.state.Store(1)
		}
	}
	c.tm.list = nil
}

// keepsTimer reports whether t runs on while c is closing: the write
// timeout's check and the close timeout, while the close sends the queued
// output (Close), so that a peer that never reads cannot hold the
// connection and its output for ever (loop only).
func (c *CallbackConn) keepsTimer(t *LoopTimer) bool {
	return c.tm != nil && (t == c.tm.wrT || t == c.tm.clT) && c.sendsAtClose()
}

// sendsAtClose reports whether c's close sends its queued output: Close,
// or the peer's EOF, not a failure (loop only).
func (c *CallbackConn) sendsAtClose() bool {
	return !c.finalized && (c.closeErr == nil || c.closeErr == io.EOF)
}
