package uringrt

import (
	"os"
	"sync/atomic"
	"time"
)

// Timers of the callback API: loop timers (AfterFunc, Every) and the
// per-connection deadlines (SetReadTimeout, SetWriteTimeout), all run on
// the connection's loop from one heap per loop (a 4-ary min-heap of due
// times, each timer knowing its place: arming and stopping cost O(log n)).
// Each connection links its timers in a list, so that its close takes them
// out of the heap at once. The loop runs the expired ones at the top of
// an iteration, at most timerBatch of them or timerSlice of time per
// iteration, and bounds its wait by the next due time (loop.go). A
// connection without timers costs nothing more than a nil check per recv
// and send; a loop without timers, a length check per iteration.
//
// Who touches what: the heap and the lists are loop-owned. A timer armed
// or stopped in its connection's own callback on the loop (the state held,
// callback_state.go) is put in or taken out at once; from anywhere else
// the change is posted to the loop. A timer's state (armed, running,
// stopped) is atomic: it is what Stop and the runs agree on, wherever they
// happen (the loop, a MayBlocker's worker, BackendStd's goroutines).

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

// timer states (LoopTimer.state)
const (
	timerArmed   = 0 // waiting for its due time, or its run handed to a worker and not started
	timerStopped = 1 // final: stopped, a one-shot run started, or ended with its connection
	timerRunning = 2 // a run of a periodic timer is under way
)

// LoopTimer is a function scheduled on a connection's loop by AfterFunc or
// Every. It ends with the connection: no run starts once the connection
// began closing.
type LoopTimer struct {
	c      *CallbackConn
	f      func(*CallbackConn)        // a user's function, run as a callback of c
	check  func(*CallbackConn, int64) // or a deadline's check (given now)
	when   int64                      // monoNow when due
	period int64                      // ns between runs; 0: once
	state  atomic.Int32               // timerArmed, timerStopped, timerRunning
	hidx   int32                      // 1 + its place in the loop's heap; 0: not in it (loop-owned)
	listed bool                       // in c's list (loop-owned; BackendStd: under c.sx.tm.mu)

	prev, next *LoopTimer // c's list

	std atomic.Pointer[time.Timer] // BackendStd: the timer of the next run
}

// Stop stops the timer. It returns true when the call stopped it: no run
// of f starts after Stop returns true (a run already under way, on the
// loop, a worker or a goroutine, completes; Stop does not wait for it). It
// returns false when the timer was already stopped: AfterFunc's run has
// started, or an earlier Stop, or the connection's end (Close or
// AsyncClose returned, the runtime or a failure closed it), after which
// none of its timers runs again. For AfterFunc, then, true means that f
// has not run and never will; false, that f has started (and may still be
// running) or never will. It may be called anywhere; the timer leaves the
// loop's heap at once in the connection's own callback, at the loop's next
// iteration otherwise.
func (t *LoopTimer) Stop() bool {
	if t == nil {
		return false
	}
	c := t.c
	for {
		s := t.state.Load()
		if s == timerStopped || c.timersEnded() {
			return false
		}
		if t.state.CompareAndSwap(s, timerStopped) {
			break
		}
	}
	if c.std != nil {
		c.stdDrop(t)
		return true
	}
	if !c.blocking && c.hold() {
		c.l.dropTimer(t)
		c.unhold()
		return true
	}
	l := c.l
	l.post(request{kind: reqFunc, fn: func() { l.dropTimer(t) }})
	return true
}

// AfterFunc runs f(c) once, d after the call, as a callback of c (on its
// loop, or its worker for a MayBlocker handler: never concurrently with
// its other callbacks), so f may write to c directly. The timer ends when
// the connection begins closing: f does not start after a Close or
// AsyncClose returned. It may be called anywhere: in c's own callback the
// timer is set at once. Resolution: a loop iteration (the loop's wait is
// bounded by the next due time); timers that come due together run a
// bounded number per loop iteration, between the loop's I/O, so many of
// them delay each other but not the loop's other connections. With
// BackendStd, f runs on a goroutine of its own, concurrently with OnData.
func (c *CallbackConn) AfterFunc(d time.Duration, f func(c *CallbackConn)) *LoopTimer {
	t := &LoopTimer{c: c, f: f}
	c.startTimer(t, d)
	return t
}

// Every runs f(c) every d (d > 0; at least 1 ms) as a callback of c, as
// AfterFunc does, until Stop or the connection begins closing. Runs are
// due at the call plus d, 2d, 3d... while they keep up. Runs never bunch:
// one run at a time (the next is not due until the last ended), and a run
// that started more than d/2 late, or lasted past the next due time,
// restarts the schedule: the next is due d after it ended; the runs missed
// meanwhile are skipped. So two runs start at least d/2 apart, and a late
// or long run is followed by a full d.
func (c *CallbackConn) Every(d time.Duration, f func(c *CallbackConn)) *LoopTimer {
	d = max(d, time.Millisecond)
	t := &LoopTimer{c: c, f: f, period: int64(d)}
	c.startTimer(t, d)
	return t
}

// nextDue is when a periodic timer's next run is due, after the run due
// at slot that started at start and ended at end (the rule of Every).
func nextDue(slot, start, end, period int64) int64 {
	next := slot + period
	if next < max(start+period/2, end) {
		next = end + period
	}
	return next
}

// SetReadTimeout closes the connection when it received nothing for d
// (while reading is not paused by backpressure); OnClose then gets
// ErrReadTimeout and queued output is dropped. The connection is reset
// (SO_LINGER 0), so the peer sees an error (ECONNRESET), not an orderly
// end; counted in uringrt_connections_timed_out_total{kind="read"}.
// d <= 0 turns it off. It may
// be called anywhere; the timeout counts from the call. The check runs
// every d/4, so the close comes between d and 1.25 x d after the last
// byte received. BackendStd: a read deadline on the net.Conn closes it,
// reset the same way, when its reader waited d in Read for a byte (the
// time OnData takes is not counted).
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
// BackendStd: a Write blocked with no progress for d (checked every d/4,
// the close coming within 1.5 x d) returns net.ErrClosed, and the
// connection is reset the same way.
func (c *CallbackConn) SetWriteTimeout(d time.Duration) error {
	return c.setDeadline(d, true)
}

// timersEnded reports whether c's timers ended: it began closing (any
// goroutine). A BackendStd connection's ended at closeStd, or as soon as
// its net.Conn was closed (the runtime's Close closes them and returns
// before their readers call closeStd).
func (c *CallbackConn) timersEnded() bool {
	if c.std == nil {
		return c.wrClosed.Load()
	}
	if c.sx.tm.ended.Load() {
		return true
	}
	if sc, ok := c.std.(*stdConn); ok {
		select {
		case <-sc.done:
			return true
		default:
		}
	}
	return false
}

// startTimer arms t, due d from now (any goroutine).
func (c *CallbackConn) startTimer(t *LoopTimer, d time.Duration) {
	when := monoNow() + int64(max(d, 0))
	t.when = when
	if c.std != nil {
		c.stdStart(t, when)
		return
	}
	if c.wrClosed.Load() {
		t.state.Store(timerStopped)
		return
	}
	if !c.blocking && c.hold() {
		c.l.armTimer(t)
		c.unhold()
		return
	}
	l := c.l
	l.post(request{kind: reqFunc, fn: func() { l.armTimer(t) }})
}
