package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/uringrt/uringrt/runtime"
)

// uringConn drives one connection on a uringrt loop through the callback
// API: OnData checks each echo and sends what comes next from the loop, with
// no goroutine per connection and no syscall per message beyond the
// batched sends. In closed loop the next message goes out when an echo
// returns; in open loop (engine.open) when the engine's pump releases it.
// Every field is the loop's.
type uringConn struct {
	e        *uringEngine
	w        *worker
	s        *runState
	cc       *uringrt.CallbackConn // set by OnOpen
	pattern  []byte
	exp      []byte // the echo expected next
	wbuf     []byte // the message being sent
	rx       []byte // bytes of the echo received so far
	sentAt   []int64
	seq      uint64 // next echo expected
	next     uint64 // next message to send
	released uint64 // open loop: messages released so far (next <= released)
	started  bool
	failed   bool
	closed   func()
}

func (u *uringConn) OnOpen(c *uringrt.CallbackConn) {
	u.cc = c
	u.rx = u.rx[:0:u.w.size]
	if u.e.started {
		u.start()
	}
}

// start begins the connection's traffic once the engine has started: in
// closed loop it sends the first -depth messages, in open loop what the
// pump released before the connection was open.
func (u *uringConn) start() {
	if u.started || u.failed {
		return
	}
	u.started = true
	if u.e.open != nil {
		u.flush()
		return
	}
	t := u.s.now()
	for i := 0; i < u.w.depth; i++ {
		copy(u.wbuf, u.pattern)
		stamp(u.wbuf, u.w.id, uint64(i))
		u.cc.Write(u.wbuf)
		u.sentAt[i] = t
	}
	u.next = uint64(u.w.depth)
}

// flush sends (open loop) the released messages that fit in -depth.
func (u *uringConn) flush() {
	for !u.failed && u.next < u.released && u.next-u.seq < uint64(u.w.depth) {
		stamp(u.wbuf, u.w.id, u.next)
		u.cc.Write(u.wbuf)
		u.next++
		u.s.sent.Add(1)
	}
}

func (u *uringConn) OnData(c *uringrt.CallbackConn, data []byte) {
	if !u.started && !u.failed {
		u.fail(c, fmt.Errorf("the server sent %d bytes before the first message", len(data)))
		return
	}
	size, depth := u.w.size, uint64(u.w.depth)
	open := u.e.open
	var t int64
	for len(data) > 0 && !u.failed {
		k := min(size-len(u.rx), len(data))
		u.rx = append(u.rx, data[:k]...)
		data = data[k:]
		if len(u.rx) < size {
			break
		}
		t = u.s.now()
		stamp(u.exp, u.w.id, u.seq)
		if !bytes.Equal(u.rx, u.exp) {
			u.fail(c, fmt.Errorf("echo mismatch in message %d (size %d) %s", u.seq, size, mismatch(u.rx, u.exp)))
			return
		}
		u.rx = u.rx[:0]
		phase := u.s.phase.Load()
		if phase == phaseStop {
			return
		}
		if open != nil {
			if phase == phaseMeasure {
				u.w.hist.record(t - open.sched.dueOf(u.w.id, u.seq))
			}
			u.w.done.Add(1)
			u.seq++
			continue
		}
		if phase == phaseMeasure {
			u.w.hist.record(t - u.sentAt[u.seq%depth])
		}
		u.w.done.Add(1)
		u.seq++
		stamp(u.wbuf, u.w.id, u.next)
		u.sentAt[u.next%depth] = t
		c.Write(u.wbuf)
		u.next++
	}
	if open != nil && t != 0 && !u.failed {
		u.flush()
		// Release what fell due meanwhile without waiting for the
		// pacer's wake-up: under load the loop rarely sleeps.
		if t >= open.nextDue {
			u.e.pump(t)
		}
	}
}

func (u *uringConn) fail(c *uringrt.CallbackConn, err error) {
	u.failed = true
	if u.s.phase.Load() != phaseStop {
		u.s.errors.Add(1)
		u.s.errOut(fmt.Sprintf("conn %d: %v", u.w.id, err))
	}
	c.Close()
}

func (u *uringConn) OnClose(c *uringrt.CallbackConn, err error) {
	if !u.failed && u.s.phase.Load() != phaseStop {
		u.s.errors.Add(1)
		var msg string
		switch {
		case err != nil && err != io.EOF:
			msg = fmt.Sprintf("read of message %d: %v", u.seq, cause(err))
		case len(u.rx) > 0:
			msg = fmt.Sprintf("server closed the connection in the middle of message %d (%d of %d bytes)", u.seq, len(u.rx), u.w.size)
		default:
			msg = fmt.Sprintf("server closed the connection before echoing message %d", u.seq)
		}
		u.s.errOut(fmt.Sprintf("conn %d: %s", u.w.id, msg))
	}
	u.failed = true
	u.closed()
}

// uringEngine is the client on a uringrt runtime with one loop, so every
// callback of every connection runs on that loop's goroutine.
type uringEngine struct {
	rt      *uringrt.Runtime
	s       *runState
	conns   []*uringConn
	ctl     *control
	open    *uringOpen // nil in closed loop
	started bool       // the loop's: the control connection's start byte came
	done    chan struct{}
}

// uringOpen is the open-loop state of the uring engine: the loop releases
// messages (pump), the pacer only wakes it.
type uringOpen struct {
	schedule  atomic.Pointer[schedule] // stored before the start byte, loaded by begin
	sched     *schedule                // the loop's copy
	next      uint64                   // the loop's: index of the next message to release
	nextDue   int64                    // the loop's: its due time
	published atomic.Uint64            // next, for the pacer
	late      lateness                 // the loop's; read after the loop exited
	stop      atomic.Bool
	pacerDone chan struct{}
}

// pump releases every message due by now, on the loop.
func (e *uringEngine) pump(now int64) {
	o := e.open
	phase := e.s.phase.Load()
	if phase == phaseStop {
		return
	}
	n := uint64(len(e.conns))
	for {
		due := o.sched.due(o.next)
		if due > now {
			o.nextDue = due
			break
		}
		o.late.note(now, due, phase == phaseMeasure)
		u := e.conns[o.next%n]
		u.released++
		if u.started {
			u.flush()
		}
		o.next++
	}
	o.published.Store(o.next)
}

// begin starts the traffic of every open connection (on the loop, when the
// control connection's start byte arrives); one opened later starts in
// OnOpen.
func (e *uringEngine) begin() {
	e.started = true
	if o := e.open; o != nil {
		o.sched = o.schedule.Load()
		o.nextDue = o.sched.start
	}
	for _, u := range e.conns {
		if u.cc != nil {
			u.start()
		}
	}
}

// startUring opens cfg.conns connections through rt's callback API with at
// most cfg.dialConcurrency dials in flight, each bounded by -dial-timeout
// (as Go's net.Dialer.Timeout bounds one dial), and then starts the
// traffic of all of them at once, so that no echo traffic competes with
// the loop's connects of the rest. e.done is closed when every connection
// has ended.
func startUring(ctx context.Context, rt *uringrt.Runtime, s *runState, cfg config) (*uringEngine, []*worker, error) {
	e := &uringEngine{rt: rt, s: s, conns: make([]*uringConn, cfg.conns), done: make(chan struct{})}
	workers := make([]*worker, cfg.conns)
	var live atomic.Int64
	live.Store(int64(cfg.conns))
	closed := func() {
		if live.Add(-1) == 0 {
			close(e.done)
		}
	}
	fail := func(err error) (*uringEngine, []*worker, error) {
		s.phase.Store(phaseStop) // what closes now is not an error of the run
		rt.Close()
		if e.ctl != nil {
			e.ctl.close()
		}
		return nil, nil, err
	}
	var err error
	if e.ctl, err = openControl(ctx, rt, cfg, e); err != nil {
		return fail(err)
	}
	for i := range e.conns {
		w := &worker{id: i, size: cfg.size, depth: cfg.depth}
		workers[i] = w
		u := &uringConn{e: e, w: w, s: s, pattern: newPattern(i, cfg.size), closed: closed,
			sentAt: make([]int64, cfg.depth), rx: make([]byte, 0, cfg.size)}
		u.exp = append([]byte(nil), u.pattern...)
		u.wbuf = append([]byte(nil), u.pattern...)
		e.conns[i] = u
	}
	if cfg.rate > 0 {
		e.open = &uringOpen{pacerDone: make(chan struct{}), late: lateness{after: int64(cfg.lateAfter)}}
	}
	firstErr := dialEach(ctx, cfg, func(ctx context.Context, i int) error {
		ctx, cancel := context.WithTimeout(ctx, cfg.dialTimeout)
		defer cancel()
		_, err := rt.DialCallback(ctx, cfg.network, cfg.addr, e.conns[i])
		return err
	})
	if firstErr != nil {
		return fail(firstErr)
	}
	var sched *schedule
	if o := e.open; o != nil {
		sched = newSchedule(s.now(), cfg.rate, cfg.conns)
		o.schedule.Store(sched)
	}
	if err := e.ctl.kick(); err != nil {
		return fail(fmt.Errorf("starting the loop: %w", err))
	}
	if o := e.open; o != nil {
		go func() {
			defer close(o.pacerDone)
			pace(s, sched, o.published.Load, func(int64) { e.ctl.poke() }, &o.stop)
		}()
	}
	return e, workers, nil
}

// stop closes every connection and the runtime; the loop has exited when it
// returns, so the workers' histograms and the loop's counters can be read.
func (e *uringEngine) stop() {
	if o := e.open; o != nil {
		o.stop.Store(true)
		<-o.pacerDone
	}
	e.rt.Close()
	e.ctl.close()
}

// lateness returns the open-loop lateness counters (after stop).
func (e *uringEngine) lateness() *lateness {
	if e.open == nil {
		return nil
	}
	return &e.open.late
}
