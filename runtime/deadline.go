package uringrt

import (
	"sync"
	"sync/atomic"
	"time"
)

// deadline is one direction's deadline. When it passes, expired is set, the
// parked goroutine (if any) is interrupted, and an in-flight ring op of
// that direction is cancelled through the loop.
type deadline struct {
	at      atomic.Int64 // unix ns; 0 = none
	expired atomic.Bool
	mu      sync.Mutex
	timer   *time.Timer
}

// set arms the deadline at t (zero: none); fire is run when it passes.
func (d *deadline) set(t time.Time, fire func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil {
		d.timer.Stop()
	}
	if t.IsZero() {
		d.at.Store(0)
		d.expired.Store(false)
		return
	}
	d.at.Store(t.UnixNano())
	dur := time.Until(t)
	if dur <= 0 {
		d.expired.Store(true)
		fire()
		return
	}
	d.expired.Store(false)
	if d.timer == nil {
		d.timer = time.AfterFunc(dur, func() { d.onTimer(fire) })
	} else {
		d.timer.Reset(dur)
	}
}

// onTimer is the timer's callback. It holds mu, as set does: a set that
// moves or clears the deadline while the callback runs then either comes
// first (the callback sees the new time and does nothing) or after (it
// clears expired again), never between the check and the Store.
func (d *deadline) onTimer(fire func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	at := d.at.Load()
	if at == 0 || time.Now().UnixNano() < at {
		return // moved since the timer was set
	}
	if deadlineFireHook != nil {
		deadlineFireHook()
	}
	d.expired.Store(true)
	fire()
}

// deadlineFireHook, when set by a test, runs in onTimer between its check
// and its Store.
var deadlineFireHook func()

func (d *deadline) stop() {
	d.mu.Lock()
	if d.timer != nil {
		d.timer.Stop()
	}
	d.mu.Unlock()
}
