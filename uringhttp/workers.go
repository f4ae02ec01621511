package uringhttp

import (
	"sync"
	"time"

	uringrt "github.com/uringrt/uringrt/runtime"
)

// Handler goroutines. Parsed requests wait in one FIFO queue for the
// server's kept goroutines (workers). A worker takes the requests one
// after another until the queue is empty and then parks; a parked one
// left idle for workerIdle ends. Whenever requests wait, at least one
// worker is looking at the queue or woken to: a worker that takes a
// request while others still wait and no other worker is free wakes one
// first, so a handler that blocks holds up only its own connection. The
// loop thus wakes one worker for a batch of requests received together,
// not one per request, and the requests of a batch run on a warm stack
// without a goroutine switch between them.
//
// A goroutine started per request would be simpler, but each new
// goroutine starts on a small stack that a handler's first calls grow by
// copying (21 % of the CPU of a 13-byte response under wrk); a kept one
// has its grown stack. Idle goroutines are the server's, not a
// connection's: an idle connection holds none.

const workerIdle = 2 * time.Second

// Handlers on the loop. A request's handler runs by default on the loop
// that parsed it (uringrt.CallbackConn.RunOnLoop): no goroutine hand-off,
// and the answers of a batch leave in one submission. The runtime moves a
// handler that has not returned after one to two milliseconds to a goroutine
// of its own (the loop goes on in another), and one about to wait
// (waitLocked, Hijack) moves itself; the handlers queued behind one that
// blocked then run off the loop, and for a while after such a takeover
// the runtime queues none (RunOnLoop refuses: they go to the workers). A
// handler that ran past slowOnLoop sends the server's next offLoopRuns
// requests to the workers too, so handlers that block on every request
// cost a takeover now and then, not every time.
const (
	slowOnLoop  = 500 * time.Microsecond // Server.slowOnLoop's default
	offLoopRuns = 256
)

// dispatch runs the handler of w, just parsed on c's loop (OnData).
func (s *Server) dispatch(c *uringrt.CallbackConn, w *response) {
	if !s.OffLoopHandlers {
		if s.offLoop.Load() > 0 {
			s.offLoop.Add(-1)
		} else {
			if w.onLoop == nil {
				w.onLoop = w.runOnLoop
			}
			if c.RunOnLoop(w.onLoop) {
				return
			}
		}
	}
	s.workers.run(w)
}

// runOnLoop serves w (and what was pipelined after it) on the loop.
func (w *response) runOnLoop() {
	h := w.h // w may be reused once served
	t0 := time.Now()
	h.serve(w)
	s := h.srv.s
	slow := s.slowOnLoop
	if slow == 0 {
		slow = slowOnLoop
	}
	if time.Since(t0) > slow {
		s.offLoop.Store(offLoopRuns)
	}
}

type workerPool struct {
	mu     sync.Mutex
	queue  []*response // requests waiting, from queue[qh]
	qh     int
	spin   int       // workers woken or looking at the queue (in no handler, not parked)
	idle   []*worker // parked, LIFO: the most recently used first (warm stack, caches)
	stop   chan struct{}
	once   sync.Once
	closed bool
}

type worker struct {
	ch   chan bool // true: look at the queue; false: end
	last time.Time
}

// run queues the request f (the worker that takes it also serves the
// requests pipelined after it) and wakes a worker unless one is free.
func (p *workerPool) run(f *response) {
	p.mu.Lock()
	if p.qh > 0 && p.qh == len(p.queue) {
		clear(p.queue)
		p.queue, p.qh = p.queue[:0], 0
	} else if p.qh >= 256 && 2*p.qh >= len(p.queue) {
		n := copy(p.queue, p.queue[p.qh:])
		clear(p.queue[n:])
		p.queue, p.qh = p.queue[:n], 0
	}
	p.queue = append(p.queue, f)
	if p.spin > 0 {
		p.mu.Unlock()
		return
	}
	p.wakeLocked()
}

// wakeLocked counts one more free worker and wakes an idle one, or starts
// one when none is idle; mu is held on entry and released.
func (p *workerPool) wakeLocked() {
	p.spin++
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		w.ch <- true
		return
	}
	p.mu.Unlock()
	p.once.Do(func() {
		p.stop = make(chan struct{})
		go p.reap(p.stop)
	})
	w := &worker{ch: make(chan bool, 1)}
	go w.loop(p)
}

// loop serves queued requests until the queue is empty, parks, and
// starts again when woken (it was counted free by its waker).
func (w *worker) loop(p *workerPool) {
	p.mu.Lock()
	for {
		if p.qh == len(p.queue) {
			p.spin--
			if p.closed {
				p.mu.Unlock()
				return
			}
			w.last = time.Now()
			p.idle = append(p.idle, w)
			p.mu.Unlock()
			if !<-w.ch {
				return
			}
			p.mu.Lock()
			continue
		}
		f := p.queue[p.qh]
		p.queue[p.qh] = nil
		p.qh++
		p.spin--
		if p.qh < len(p.queue) && p.spin == 0 {
			p.wakeLocked() // the rest must not wait for this handler
		} else {
			p.mu.Unlock()
		}
		f.h.serve(f)
		p.mu.Lock()
		p.spin++
	}
}

// reap ends the workers idle past workerIdle (the oldest are at the
// bottom of the stack).
func (p *workerPool) reap(stop chan struct{}) {
	t := time.NewTicker(workerIdle / 2)
	defer t.Stop()
	for {
		select {
		case <-stop:
			p.closeIdle(true)
			return
		case <-t.C:
			p.closeIdle(false)
		}
	}
}

func (p *workerPool) closeIdle(all bool) {
	now := time.Now()
	p.mu.Lock()
	n := 0
	for n < len(p.idle) && (all || now.Sub(p.idle[n].last) > workerIdle) {
		n++
	}
	old := append([]*worker(nil), p.idle[:n]...)
	m := copy(p.idle, p.idle[n:])
	clear(p.idle[m:])
	p.idle = p.idle[:m]
	p.mu.Unlock()
	for _, w := range old {
		w.ch <- false
	}
}

// shutdown ends the idle workers and the reaper.
func (p *workerPool) shutdown() {
	p.mu.Lock()
	stop := p.stop
	p.stop = nil
	p.closed = true
	p.mu.Unlock()
	if stop != nil {
		close(stop)
	} else {
		p.closeIdle(true)
	}
}
