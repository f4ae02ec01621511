package uringrt

import (
	"io"
	"os"
	"sync"
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

// timerEntry is a timer in the loop's heap, its due time kept beside it
// so that ordering reads no timer.
type timerEntry struct {
	when int64
	t    *LoopTimer
}

// loopTimers is a loop's timer heap: a 4-ary min-heap on when (loop-owned).
type loopTimers []timerEntry

func (h *loopTimers) push(t *LoopTimer) {
	*h = append(*h, timerEntry{t.when, t})
	h.up(len(*h) - 1)
}

// pop takes out the earliest timer.
func (h *loopTimers) pop() *LoopTimer {
	t := (*h)[0].t
	h.removeAt(0)
	return t
}

// remove takes t out (t.hidx > 0).
func (h *loopTimers) remove(t *LoopTimer) { h.removeAt(int(t.hidx) - 1) }

func (h *loopTimers) removeAt(i int) {
	s := *h
	s[i].t.hidx = 0
	last := len(s) - 1
	if i != last {
		s[i] = s[last]
	}
	s[last] = timerEntry{}
	s = s[:last]
	*h = s
	if i < last {
		if i > 0 && s[i].when < s[(i-1)/4].when {
			h.up(i)
		} else {
			h.down(i)
		}
	}
}

func (h loopTimers) up(i int) {
	e := h[i]
	for i > 0 {
		p := (i - 1) / 4
		if h[p].when <= e.when {
			break
		}
		h[i] = h[p]
		h[i].t.hidx = int32(i + 1)
		i = p
	}
	h[i] = e
	e.t.hidx = int32(i + 1)
}

func (h loopTimers) down(i int) {
	n := len(h)
	e := h[i]
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m, w := c, h[c].when
		for j := c + 1; j < c+4 && j < n; j++ {
			if h[j].when < w {
				m, w = j, h[j].when
			}
		}
		if w >= e.when {
			break
		}
		h[i] = h[m]
		h[i].t.hidx = int32(i + 1)
		i = m
	}
	h[i] = e
	e.t.hidx = int32(i + 1)
}

// shrink gives back the memory of a heap that emptied (after a burst of
// timers), keeping room for a few.
func (h *loopTimers) shrink() {
	if c := cap(*h); c > 256 && len(*h) < c/8 {
		*h = append(make(loopTimers, 0, c/4), *h...)
	}
}

// stdTimers are a BackendStd connection's timers: each run is a
// time.AfterFunc of its own.
type stdTimers struct {
	mu    sync.Mutex
	head  *LoopTimer // pending (the list of connTimers, under mu)
	ended atomic.Bool
}

// stdStart arms t, due at when, for a BackendStd connection: f runs on a
// goroutine of its own (concurrently with the reader's OnData: synchronize
// what both touch); closeStd ends it.
func (c *CallbackConn) stdStart(t *LoopTimer, when int64) {
	s := &c.sx.tm
	s.mu.Lock()
	if c.timersEnded() {
		s.mu.Unlock()
		t.state.Store(timerStopped)
		return
	}
	l := connTimers{head: s.head}
	l.link(t)
	s.head = l.head
	s.mu.Unlock()
	c.stdSchedule(t, when)
}

// stdSchedule starts the time.Timer of t's run due at when.
func (c *CallbackConn) stdSchedule(t *LoopTimer, when int64) {
	tt := time.AfterFunc(time.Duration(when-monoNow()), func() { t.runStd(when) })
	t.std.Store(tt)
	if t.state.Load() == timerStopped {
		tt.Stop() // a Stop that came meanwhile may have stopped the last one
	}
}

// runStd is a run of a BackendStd connection's timer, due at slot.
// The connection's end is looked at after the state changed, so that a
// run either started before closeStd set ended (and Close returned) or
// does not run.
func (t *LoopTimer) runStd(slot int64) {
	c := t.c
	if t.period == 0 {
		if t.state.CompareAndSwap(timerArmed, timerStopped) && !c.timersEnded() {
			c.stdUnlink(t)
			t.f(c)
		}
		return
	}
	if !t.state.CompareAndSwap(timerArmed, timerRunning) {
		return
	}
	if c.timersEnded() {
		t.state.Store(timerStopped)
		return
	}
	start := monoNow()
	t.f(c)
	end := monoNow()
	if t.state.CompareAndSwap(timerRunning, timerArmed) {
		c.stdSchedule(t, nextDue(slot, start, end, t.period))
	}
}

// stdDrop stops the time.Timer of a stopped t and forgets it.
func (c *CallbackConn) stdDrop(t *LoopTimer) {
	if tt := t.std.Load(); tt != nil {
		tt.Stop()
	}
	c.stdUnlink(t)
}

func (c *CallbackConn) stdUnlink(t *LoopTimer) {
	s := &c.sx.tm
	s.mu.Lock()
	l := connTimers{head: s.head}
	l.unlink(t)
	s.head = l.head
	s.mu.Unlock()
}

// stdEndTimers stops a BackendStd connection's timers (at its close):
// none runs after, and Go's timers forget them.
func (c *CallbackConn) stdEndTimers() {
	s := &c.sx.tm
	s.mu.Lock()
	s.ended.Store(true)
	l := connTimers{head: s.head}
	for t := l.head; t != nil; {
		next := t.next
		t.state.Store(timerStopped)
		if tt := t.std.Load(); tt != nil {
			tt.Stop()
		}
		l.unlink(t)
		t = next
	}
	s.head = nil
	s.mu.Unlock()
}
