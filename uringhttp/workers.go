package uringhttp

import (
	"sync"
	"time"
)

// Handler goroutines. A request is served on a goroutine taken from a
// stack of idle ones, or started when none is idle; a goroutine left idle
// for workerIdle ends. A goroutine started per request would be simpler,
// but each new goroutine starts on a small stack that a handler's first
// calls grow by copying (21 % of the CPU of a 13-byte response under
// wrk); a kept one has its grown stack. Idle goroutines are the server's,
// not a connection's: an idle connection holds none.

const workerIdle = 2 * time.Second

type workerPool struct {
	mu     sync.Mutex
	idle   []*worker // LIFO: the most recently used first (warm stack, caches)
	stop   chan struct{}
	once   sync.Once
	closed bool
}

type worker struct {
	ch   chan *response
	last time.Time
}

// run serves the request f (and those pipelined after it) on an idle
// worker, or a new one.
func (p *workerPool) run(f *response) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		w.ch <- f
		return
	}
	p.mu.Unlock()
	p.once.Do(func() {
		p.stop = make(chan struct{})
		go p.reap(p.stop)
	})
	w := &worker{ch: make(chan *response, 1)}
	go w.loop(p, f)
}

func (w *worker) loop(p *workerPool, f *response) {
	for f != nil {
		f.h.serve(f)
		w.last = time.Now()
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return
		}
		p.idle = append(p.idle, w)
		p.mu.Unlock()
		f = <-w.ch
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
		w.ch <- nil
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
