package runtime

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// ErrIdleTimeout is the error a callback connection's OnClose gets when
// Config.IdleTimeout closed it.
var ErrIdleTimeout = errors.New("uringrt: connection closed after IdleTimeout without progress")

// idleTicks is how many sweeps a connection must stay without progress to
// be closed: sweeps come every IdleTimeout/idleTicks, so a connection is
// closed between IdleTimeout and (1 + 1/idleTicks) x IdleTimeout after its
// last progress.
const idleTicks = 4

// idleSweep is the runtime's sweeper: one goroutine that ticks every
// IdleTimeout/idleTicks, asks each loop to sweep its callback connections
// and sweeps the net.Conn connections itself. Progress costs a connection a
// flag store (a plain bool on the loop for a callback conn, an atomic for a
// net.Conn, stored only when it was clear): no timer per connection or per
// I/O.
type idleSweep struct {
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// loopIdle is a loop's idle counter (read at scrape time).
type loopIdle struct {
	closed atomic.Uint64
}

// fdIdle is a net.Conn's idle state.
type fdIdle struct {
	active atomic.Bool // progress since the last sweep
	ticks  int         // sweeps without progress (the sweeper's, under rt.mu)
}

// touch records read or write progress on a net.Conn.
func (n *netFD) touch() {
	if !n.idle.active.Load() {
		n.idle.active.Store(true)
	}
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
		t := time.NewTicker(d / idleTicks)
		defer t.Stop()
		for {
			select {
			case <-rt.idle.stop:
				return
			case <-t.C:
			}
			for _, l := range rt.loops {
				l.post(request{kind: reqFunc, fn: l.sweepIdle})
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

// sweepIdle closes the loop's callback connections without progress for
// idleTicks sweeps (loop only).
func (l *loop) sweepIdle() {
	for c := range l.cbConns {
		if c.closing {
			continue
		}
		if c.active {
			c.active, c.idleTicks = false, 0
			continue
		}
		if c.idleTicks++; c.idleTicks >= idleTicks {
			l.idle.closed.Add(1)
			c.closeOnLoop(ErrIdleTimeout)
		}
	}
}

// sweepIdleConns closes the net.Conn connections (accepted or dialed)
// without progress for idleTicks sweeps.
func (rt *Runtime) sweepIdleConns() {
	var idle []*netFD
	rt.mu.Lock()
	for n := range rt.conns {
		if n.cb || n.ln == nil && !n.dialed || n.closing.Load() {
			continue
		}
		if n.idle.active.Load() {
			n.idle.active.Store(false)
			n.idle.ticks = 0
			continue
		}
		if n.idle.ticks++; n.idle.ticks >= idleTicks {
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
