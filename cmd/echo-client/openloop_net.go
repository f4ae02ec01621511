package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// netOpenConn is one connection of the open loop on Go's net: the pacer
// releases its messages and sends them, its reader goroutine checks the
// echoes and sends what was held back by -depth.
type netOpenConn struct {
	w        *worker
	conn     net.Conn
	mu       sync.Mutex // guards what follows, and orders the writes
	wbuf     []byte
	released uint64 // messages released by the pacer
	sent     uint64 // messages written
	recvd    uint64 // echoes checked
	failed   bool
}

// flush writes the released messages that fit in -depth; mu is held.
func (c *netOpenConn) flush(s *runState) {
	for !c.failed && c.sent < c.released && c.sent-c.recvd < uint64(c.w.depth) {
		stamp(c.wbuf, c.w.id, c.sent)
		if _, err := c.conn.Write(c.wbuf); err != nil {
			c.failed = true
			if s.phase.Load() != phaseStop {
				s.errors.Add(1)
				s.errOut(fmt.Sprintf("conn %d: write of message %d: %v", c.w.id, c.sent, cause(err)))
			}
			return
		}
		c.sent++
		s.sent.Add(1)
	}
}

// read checks the echoes until the run stops or the connection fails.
func (c *netOpenConn) read(s *runState, sched *schedule) error {
	size, id := c.w.size, c.w.id
	var r io.Reader = c.conn
	if c.w.depth > 1 {
		r = bufio.NewReaderSize(c.conn, max(size*c.w.depth, 4096))
	}
	pattern := newPattern(id, size)
	exp := append([]byte(nil), pattern...)
	rbuf := make([]byte, size)
	for seq := uint64(0); ; seq++ {
		if n, err := io.ReadFull(r, rbuf); err != nil {
			return readError(err, n, size, seq)
		}
		t := s.now()
		stamp(exp, id, seq)
		if !bytes.Equal(rbuf, exp) {
			return fmt.Errorf("echo mismatch in message %d (size %d) %s", seq, size, mismatch(rbuf, exp))
		}
		phase := s.phase.Load()
		if phase == phaseStop {
			return nil
		}
		if phase == phaseMeasure {
			c.w.hist.record(t - sched.dueOf(id, seq))
		}
		c.w.done.Add(1)
		c.mu.Lock()
		c.recvd = seq + 1
		c.flush(s)
		c.mu.Unlock()
	}
}

// netOpenEngine is the open loop on Go's net: one pacer goroutine on a
// thread of its own releases and writes the messages as they fall due, a
// reader goroutine per connection takes the echoes.
type netOpenEngine struct {
	s         *runState
	sched     *schedule
	conns     []*netOpenConn
	next      atomic.Uint64 // index of the next message to release (written by the pacer only)
	late      lateness      // the pacer's; read after it stopped
	stop      atomic.Bool
	pacerDone chan struct{}
	readers   sync.WaitGroup
}

// startNetOpen starts the open loop on conns. allDone is closed when every
// reader has returned.
func startNetOpen(s *runState, conns []net.Conn, cfg config) (*netOpenEngine, []*worker, <-chan struct{}) {
	e := &netOpenEngine{s: s, conns: make([]*netOpenConn, len(conns)), pacerDone: make(chan struct{}),
		late: lateness{after: int64(cfg.lateAfter)}}
	workers := make([]*worker, len(conns))
	for i, nc := range conns {
		w := &worker{id: i, conn: nc, size: cfg.size, depth: cfg.depth}
		workers[i] = w
		e.conns[i] = &netOpenConn{w: w, conn: nc, wbuf: newPattern(i, cfg.size)}
	}
	e.sched = newSchedule(s.now(), cfg.rate, len(conns))
	allDone := make(chan struct{})
	var live atomic.Int64
	live.Store(int64(len(conns)))
	for _, c := range e.conns {
		e.readers.Go(func() {
			if err := c.read(s, e.sched); err != nil && s.phase.Load() != phaseStop {
				s.errors.Add(1)
				s.errOut(fmt.Sprintf("conn %d: %v", c.w.id, err))
			}
			if live.Add(-1) == 0 {
				close(allDone)
			}
		})
	}
	go func() {
		defer close(e.pacerDone)
		pace(s, e.sched, e.next.Load, e.release, &e.stop)
	}()
	return e, workers, allDone
}

// release releases and sends every message due by now (the pacer's).
func (e *netOpenEngine) release(now int64) {
	n := uint64(len(e.conns))
	for k := e.next.Load(); ; k++ {
		due := e.sched.due(k)
		if due > now {
			e.next.Store(k)
			return
		}
		phase := e.s.phase.Load()
		if phase == phaseStop {
			e.next.Store(k)
			return
		}
		e.late.note(e.s.now(), due, phase == phaseMeasure)
		c := e.conns[k%n]
		c.mu.Lock()
		c.released++
		c.flush(e.s)
		c.mu.Unlock()
	}
}

// stopAll stops the pacer, then closes the connections and waits for the
// readers.
func (e *netOpenEngine) stopAll() {
	e.stop.Store(true)
	<-e.pacerDone
	for _, c := range e.conns {
		c.conn.Close()
	}
	e.readers.Wait()
}
