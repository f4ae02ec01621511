package uringrt

import (
	"sync"
	"sync/atomic"
	"time"
)

// deadline is one direction's deadline. When it passes, expired is set, the
// parked goroutine (if any) is interrupted, and an in-flight ring op of
// that direction is cancelled through the loop.
//
// Its timer is moved lazily: a deadline moved later, or cleared, leaves the
// timer where it is, and the timer, when it fires, finds the deadline not
// yet passed (or gone) and re-arms itself for what is left. net/http sets a
// read deadline a few seconds out and clears it again on every request (and
// sets one in the past to stop its background read): each of those is then
// an atomic store under the deadline's lock, where moving a runtime timer
// each time cost as much as Go's own netpoll deadline.
type deadline struct {
	at      atomic.Int64 // unix ns; 0 = none
	expired atomic.Bool
	mu      sync.Mutex
	t       *deadlineTimer // nil until the first set that needed a timer or fired
}

// deadlineTimer is the part of a deadline only its slow paths touch (under
// deadline.mu), kept out of line so that the fields a Read or Write checks
// stay in the first cache line of the connection (TestHotFieldsShareALine).
type deadlineTimer struct {
	timer   *time.Timer // nil until a deadline in the future was set
	timerAt int64       // unix ns the timer is armed for; 0: not armed
	fire    func()      // what the last set passed: run when the deadline passes
	stopped bool        // stop ran (the connection closed): the timer never re-arms
	// fd and write: a connection's own deadline (setConn). With no fire,
	// fd.deadlinePassed(write) runs when it passes, so a Conn's deadline
	// allocates no closure.
	fd    *netFD
	write bool
}

// run runs what passing the deadline does (d.mu held).
func (dt *deadlineTimer) run() {
	if dt.fire != nil {
		dt.fire()
	} else if dt.fd != nil {
		dt.fd.deadlinePassed(dt.write)
	}
}

// set arms the deadline at t (zero: none); fire is run when it passes, and
// by the timer of later setFast calls.
func (d *deadline) set(t time.Time, fire func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.t == nil {
		d.t = new(deadlineTimer)
	}
	d.t.fire = fire
	d.setLocked(t)
}

// setFast is set with the fire of the last set (or the connection's own,
// after setConn), for the callers that pass the same one every time: it
// allocates nothing. It does nothing and reports false when neither came
// before, or the last set passed no fire and setConn never ran.
func (d *deadline) setFast(t time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.t == nil || (d.t.fire == nil && d.t.fd == nil) {
		return false
	}
	d.setLocked(t)
	return true
}

// setConn arms the deadline at t for a connection's read (write false) or
// write side: when it passes, fd.deadlinePassed(write) runs. Later sets
// take setFast's path. Clearing a deadline never set allocates nothing.
func (d *deadline) setConn(t time.Time, fd *netFD, write bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.t == nil {
		if t.IsZero() {
			d.setLocked(t) // no deadline, none before: nothing to keep
			return
		}
		d.t = new(deadlineTimer)
	}
	d.t.fd, d.t.write = fd, write
	d.setLocked(t)
}

func (d *deadline) setLocked(t time.Time) {
	if t.IsZero() {
		// An armed timer stays: it fires, finds no deadline and stops.
		d.at.Store(0)
		d.expired.Store(false)
		return
	}
	at := t.UnixNano()
	d.at.Store(at)
	dur := time.Until(t)
	if dur <= 0 {
		d.expired.Store(true)
		d.t.run()
		return
	}
	d.expired.Store(false)
	switch dt := d.t; {
	case dt.stopped:
		// closed: no timer again
	case dt.timer == nil:
		dt.timer = time.AfterFunc(dur, d.onTimer)
		dt.timerAt = at
	case dt.timerAt == 0 || at < dt.timerAt:
		dt.timer.Reset(dur)
		dt.timerAt = at
	}
	// Otherwise the timer fires first, at or before at, and re-arms.
}

// onTimer is the timer's callback. It holds mu, as set does: a set that
// moves or clears the deadline while the callback runs then either comes
// first (the callback sees the new time and re-arms, or does nothing) or
// after (it clears expired again), never between the check and the Store.
func (d *deadline) onTimer() {
	d.mu.Lock()
	defer d.mu.Unlock()
	dt := d.t
	dt.timerAt = 0
	at := d.at.Load()
	if at == 0 || d.expired.Load() || dt.stopped {
		return // cleared, or passed and fired by set already
	}
	if now := time.Now().UnixNano(); now < at {
		dt.timer.Reset(time.Duration(at - now)) // moved later since the timer was set
		dt.timerAt = at
		return
	}
	if deadlineFireHook != nil {
		deadlineFireHook()
	}
	d.expired.Store(true)
	dt.run()
}

// deadlineFireHook, when set by a test, runs in onTimer between its check
// and its Store.
var deadlineFireHook func()

func (d *deadline) stop() {
	d.mu.Lock()
	if d.t != nil && d.t.timer != nil {
		d.t.timer.Stop()
		d.t.timerAt = 0
		d.t.stopped = true // a callback already running finds it and ends
	}
	d.mu.Unlock()
}
