package uringrt

import (
	"sync"
	"sync/atomic"
	"time"
)

// The monitor of RunOnLoop: one goroutine per runtime that looks at every
// loop each inlineTick and takes over a loop whose function has run for a
// whole tick, then refuses new functions there for a while.

// inlineMonitor is the runtime's watch over the functions of RunOnLoop. It
// starts with the first one and parks after inlineIdleTicks looks that
// found no loop running any; a loop about to run some wakes it.
type inlineMonitor struct {
	once    sync.Once
	closing sync.Once
	parked  atomic.Bool
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

// inlineIdleTicks: looks without a function run before the monitor parks.
const inlineIdleTicks = 100

// start starts the monitor, or wakes it when parked.
func (m *inlineMonitor) start(rt *Runtime) {
	m.once.Do(func() {
		m.wake = make(chan struct{}, 1)
		m.stop = make(chan struct{})
		m.done = make(chan struct{})
		go m.run(rt)
	})
	if m.parked.Load() && m.parked.CompareAndSwap(true, false) {
		select {
		case m.wake <- struct{}{}:
		default:
		}
	}
}

// close ends the monitor (Runtime.Close, once the loops have stopped:
// nothing starts it after that).
func (m *inlineMonitor) close() {
	m.once.Do(func() {}) // not started: never will be
	m.closing.Do(func() {
		if m.stop != nil {
			close(m.stop)
			<-m.done
		}
	})
}

func (m *inlineMonitor) run(rt *Runtime) {
	defer close(m.done)
	t := time.NewTicker(inlineTick)
	defer t.Stop()
	idle := 0
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
		if m.look(rt) {
			idle = 0
			continue
		}
		if idle++; idle < inlineIdleTicks {
			continue
		}
		// Park. A loop that starts a function after the store below sees
		// parked and wakes the monitor; one that started before it is
		// seen by the look after it (both order a store before a load).
		m.parked.Store(true)
		if m.look(rt) {
			if m.parked.CompareAndSwap(true, false) {
				idle = 0
				continue
			}
			// A loop is waking the monitor: take its wake below.
		}
		t.Stop()
		select {
		case <-m.stop:
			return
		case <-m.wake:
		}
		idle = 0
		t.Reset(inlineTick)
	}
}

// look takes over every loop whose function has run since the last look,
// and reports whether any loop ran a function since then.
func (m *inlineMonitor) look(rt *Runtime) bool {
	active := false
	for _, l := range rt.loops {
		in := &l.inl
		w := in.word.Load()
		if w != in.seen {
			active = true
		}
		if w&3 == inlRun && w == in.seen && in.word.CompareAndSwap(w, w&^3|inlStolen) {
			now := time.Now()
			if now.Sub(in.lastTO) <= time.Duration(2*in.backoff)*inlineTick {
				in.backoff = min(2*in.backoff, refuseMax)
			} else {
				in.backoff = refuseMin
			}
			in.refuseLeft, in.lastTO = in.backoff, now
			in.refuse.Store(true)
			l.takeover(true, in.cur.Load())
		} else if w&3 == inlRun || w&3 == inlBusy {
			active = true
		}
		if in.refuseLeft > 0 {
			active = true // the window must be closed by a look
			if in.refuseLeft--; in.refuseLeft == 0 {
				in.refuse.Store(false)
			}
		}
		in.seen = w
	}
	return active
}
