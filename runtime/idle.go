package uringrt

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// ErrIdleTimeout is the error a callback connection's OnClose gets when
// Config.IdleTimeout closed it.
var ErrIdleTimeout = errors.New("uringrt: connection closed after IdleTimeout without progress")

// idleSweeps is how many sweeps come per IdleTimeout. A sweep that finds a
// connection's progress flag set clears it and stamps the connection with
// the sweep's time; a sweep that finds it clear closes the connection once
// IdleTimeout has passed since that stamp. The stamp is after the last
// progress, so a connection is never closed before IdleTimeout, and at most
// two sweep intervals later: between IdleTimeout and 1.25 x IdleTimeout
// (more when the sweeps themselves run late, under load).
const idleSweeps = 8

// idleSweep is the runtime's sweeper: one goroutine that ticks every
// IdleTimeout/idleSweeps, asks each loop to sweep its callback connections
// and sweeps the net.Conn connections itself. Progress costs a connection a
// flag store (a plain bool on the loop for a callback conn, an atomic for a
// net.Conn, stored only when it was clear): no timer per connection or per
// I/O.
type idleSweep struct {
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// loopIdle is a loop's idle counter (read at scrape time) and its sweep
// request.
type loopIdle struct {
	closed atomic.Uint64
	due    bool // loop-owned: the sweeper asked for a sweep (sweepAfterReap)
}

// startIdleSweep starts the sweeper when Config.IdleTimeout is set.
func (rt *Runtime) startIdleSweep() {
	d := rt.cfg.IdleTimeout
	if d <= 0 || rt.backend != BackendUring {
		return
	}
	rt.idle.stop, rt.idle.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(rt.idle.done)
		t := time.NewTicker(d / idleSweeps)
		defer t.Stop()
		for {
			select {
			case <-rt.idle.stop:
				return
			case <-t.C:
			}
			for _, l := range rt.loops {
				l.post(request{kind: reqFunc, fn: l.askSweep})
			}
			rt.sweepIdleConns()
		}
	}()
}

// stopIdleSweep stops the sweeper and waits for it (before the loops stop).
func (rt *Runtime) stopIdleSweep() {
	if rt.idle.stop == nil {
		return
	}
	rt.idle.once.Do(func() { close(rt.idle.stop) })
	<-rt.idle.done
}

// askSweep takes the sweeper's request (loop only). The sweep itself waits
// for the loop's next reap (sweepAfterReap): a request runs before the
// completions of its batch are reaped, and a loop held up for IdleTimeout
// (a long callback, the process descheduled) would otherwise judge its
// connections before seeing what their peers sent meanwhile, closing a
// connection whose data waits in the ring.
func (l *loop) askSweep() { l.idle.due = true }

// sweepAfterReap runs the sweep asked for, after the loop's reap: it reaps
// once more first (an empty completion queue makes the reap enter the
// kernel, which runs the ring's deferred completions), so that progress up
// to the sweep counts. It returns the completions it reaped (loop only).
func (l *loop) sweepAfterReap() int {
	if !l.idle.due {
		return 0
	}
	l.idle.due = false
	n := l.reap()
	l.sweepIdle()
	return n
}

// sweepIdle closes the loop's callback connections without progress for
// IdleTimeout (loop only).
func (l *loop) sweepIdle() {
	now := time.Now().UnixNano()
	timeout := int64(l.rt.cfg.IdleTimeout)
	for c := range l.cbConns {
		if c.closing {
			continue
		}
		if c.active {
			c.active, c.idleSeen = false, now
			continue
		}
		if now-c.idleSeen >= timeout {
			l.idle.closed.Add(1)
			c.closeOnLoop(ErrIdleTimeout)
		}
	}
}

// sweepIdleConns closes the net.Conn connections (accepted or dialed)
// without progress for IdleTimeout.
func (rt *Runtime) sweepIdleConns() {
	var idle []*netFD
	now := time.Now().UnixNano()
	timeout := int64(rt.cfg.IdleTimeout)
	rt.mu.Lock()
	for n := range rt.conns {
		if n.cb || n.ln == nil && !n.dialed || n.closing.Load() {
			continue
		}
		if n.idle.active.Load() {
			n.idle.active.Store(false)
			n.idleSeen = now
			continue
		}
		if now-n.idleSeen >= timeout {
			idle = append(idle, n)
		}
	}
	rt.mu.Unlock()
	for _, n := range idle {
		if n.close() == nil {
			n.l.idle.closed.Add(1)
		}
	}
}
