package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync/atomic"
	"time"
)

// Phases of a run, stored in runState.phase.
const (
	phaseWarmup int32 = iota
	phaseMeasure
	phaseStop
)

// runState is what the workers share with the coordinator.
type runState struct {
	phase  atomic.Int32
	errors atomic.Int64
	base   time.Time // monotonic origin of the workers' clocks
	errOut func(string)
	sent   atomic.Uint64 // open loop: messages put on the wire
}

// now returns nanoseconds since s.base on the monotonic clock.
func (s *runState) now() int64 { return int64(time.Since(s.base)) }

// worker drives one connection in closed loop. Its counters and histogram
// belong to its goroutine; done is read by the coordinator.
type worker struct {
	id    int
	conn  net.Conn
	r     io.Reader
	size  int
	depth int
	yield bool          // call runtime.Gosched between write and read
	done  atomic.Uint64 // messages completed; beside the hot fields on purpose
	hist  histogram
}

// newWorker prepares the worker of connection id.
func newWorker(id int, conn net.Conn, size, depth int) *worker {
	w := &worker{id: id, conn: conn, r: conn, size: size, depth: depth}
	if depth > 1 {
		// Several echoes may be queued: read them with fewer syscalls.
		w.r = bufio.NewReaderSize(conn, max(size*depth, 4096))
	}
	return w
}

// run pings until the phase is phaseStop or the connection fails. A failure
// before phaseStop is reported through s.errOut and counted in s.errors.
func (w *worker) run(s *runState) {
	err := w.loop(s)
	if err == nil || s.phase.Load() == phaseStop {
		return
	}
	s.errors.Add(1)
	s.errOut(fmt.Sprintf("conn %d: %v", w.id, err))
}

// loop is the closed-loop ping-pong. It allocates nothing per message.
func (w *worker) loop(s *runState) error {
	size, depth := w.size, w.depth
	pattern := newPattern(w.id, size)
	// One allocation keeps the buffers touched per message together.
	bufs := make([]byte, size*(2+depth))
	exp := bufs[:size:size]              // the echo expected next
	rbuf := bufs[size : 2*size : 2*size] // the echo received
	wbuf := bufs[2*size:]                // the first depth messages
	sentAt := make([]int64, depth)       // send time by seq % depth
	copy(exp, pattern)
	for i := 0; i < depth; i++ {
		copy(wbuf[i*size:], pattern)
		stamp(wbuf[i*size:(i+1)*size], w.id, uint64(i))
	}
	t := s.now()
	for i := range sentAt {
		sentAt[i] = t
	}
	if _, err := w.conn.Write(wbuf); err != nil {
		return fmt.Errorf("write: %w", cause(err))
	}
	wbuf = wbuf[:size]
	next := uint64(depth) // seq of the next message to send
	for seq := uint64(0); ; seq++ {
		if n, err := io.ReadFull(w.r, rbuf); err != nil {
			return readError(err, n, size, seq)
		}
		t := s.now()
		stamp(exp, w.id, seq)
		if !bytes.Equal(rbuf, exp) {
			return fmt.Errorf("echo mismatch in message %d (size %d) %s", seq, size, mismatch(rbuf, exp))
		}
		phase := s.phase.Load()
		if phase == phaseStop {
			return nil
		}
		if phase == phaseMeasure {
			w.hist.record(t - sentAt[seq%uint64(depth)])
		}
		w.done.Add(1)
		stamp(wbuf, w.id, next) // overwrites every byte the last stamp wrote
		sentAt[next%uint64(depth)] = t
		if _, err := w.conn.Write(wbuf); err != nil {
			return fmt.Errorf("write of message %d: %w", next, cause(err))
		}
		next++
		if w.yield {
			// Let the other connections run before reading: by the time
			// this one is scheduled again its echo has usually arrived, so
			// the read succeeds at once instead of failing with EAGAIN,
			// parking, and being woken by the netpoller. This keeps the
			// client cheaper per message than a Go net server.
			runtime.Gosched()
		}
	}
}

// readError explains a failed io.ReadFull of message seq.
func readError(err error, n, size int, seq uint64) error {
	switch {
	case errors.Is(err, io.EOF):
		return fmt.Errorf("server closed the connection before echoing message %d", seq)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("server closed the connection in the middle of message %d (%d of %d bytes)", seq, n, size)
	}
	return fmt.Errorf("read of message %d: %w", seq, cause(err))
}
