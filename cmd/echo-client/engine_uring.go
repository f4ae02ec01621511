package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/uringrt/uringrt/runtime"
)

// uringConn drives one connection in closed loop on a uringrt loop through
// the callback API: OnData checks each echo and sends the next message
// from the loop, with no goroutine per connection and no syscall per
// message beyond the batched sends.
type uringConn struct {
	w       *worker
	s       *runState
	pattern []byte
	exp     []byte // the echo expected next
	wbuf    []byte // the message being sent
	rx      []byte // bytes of the echo received so far
	sentAt  []int64
	seq     uint64 // next echo expected
	next    uint64 // next message to send
	failed  bool
	closed  func()
}

func (u *uringConn) OnOpen(c *uringrt.CallbackConn) {
	size, depth := u.w.size, u.w.depth
	t := u.s.now()
	for i := 0; i < depth; i++ {
		copy(u.wbuf, u.pattern)
		stamp(u.wbuf, u.w.id, uint64(i))
		c.Write(u.wbuf)
		u.sentAt[i] = t
	}
	u.next = uint64(depth)
	u.rx = u.rx[:0:size]
}

func (u *uringConn) OnData(c *uringrt.CallbackConn, data []byte) {
	size, depth := u.w.size, uint64(u.w.depth)
	for len(data) > 0 && !u.failed {
		k := min(size-len(u.rx), len(data))
		u.rx = append(u.rx, data[:k]...)
		data = data[k:]
		if len(u.rx) < size {
			return
		}
		t := u.s.now()
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
	u.closed()
}

// uringEngine is the client on a uringrt runtime with one loop.
type uringEngine struct {
	rt    *uringrt.Runtime
	conns []*uringrt.CallbackConn
	done  chan struct{}
}

// startUring opens cfg.conns connections through rt's callback API with at
// most cfg.dialConcurrency dials in flight; each starts its closed loop as
// soon as it is open. allDone is closed when every connection has ended.
func startUring(ctx context.Context, rt *uringrt.Runtime, s *runState, cfg config) (*uringEngine, []*worker, error) {
	e := &uringEngine{rt: rt, conns: make([]*uringrt.CallbackConn, cfg.conns), done: make(chan struct{})}
	workers := make([]*worker, cfg.conns)
	var live atomic.Int64
	live.Store(int64(cfg.conns))
	closed := func() {
		if live.Add(-1) == 0 {
			close(e.done)
		}
	}
	dctx, cancel := context.WithTimeout(ctx, cfg.dialTimeout)
	defer cancel()
	firstErr := dialEach(dctx, cfg, func(ctx context.Context, i int) error {
		w := &worker{id: i, size: cfg.size, depth: cfg.depth}
		workers[i] = w
		u := &uringConn{w: w, s: s, pattern: newPattern(i, cfg.size), closed: closed,
			sentAt: make([]int64, cfg.depth), rx: make([]byte, 0, cfg.size)}
		u.exp = append([]byte(nil), u.pattern...)
		u.wbuf = append([]byte(nil), u.pattern...)
		c, err := rt.DialCallback(ctx, "tcp", cfg.addr, u)
		if err != nil {
			return err
		}
		e.conns[i] = c
		return nil
	})
	if firstErr != nil {
		s.phase.Store(phaseStop) // what closes now is not an error of the run
		rt.Close()
		return nil, nil, firstErr
	}
	return e, workers, nil
}

// stop closes every connection and the runtime; the loop has exited when it
// returns, so the workers' histograms can be read.
func (e *uringEngine) stop() { e.rt.Close() }
