package uringrt

import (
	"sync"
	"sync/atomic"
	"time"
)

// The callback timers of a BackendStd connection: a time.Timer per run,
// the connection's list under a mutex.

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
