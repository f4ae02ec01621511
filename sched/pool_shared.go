package sched

import (
	"context"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
)

// SharedPool is the baseline: N workers sharing one list guarded by one
// mutex, with a sync.Cond to park idle workers. Each worker takes one work
// at a time (the io-wq behaviour before the fixed-worker series). A submit
// signals the cond only when some worker waits.
//
// SubmitKey and GoKey ignore the key: works of one key may run on different
// workers at once and in any order. Create it with NewShared; the zero value
// is not usable. All methods are safe for concurrent use. It implements Pool.
type SharedPool struct {
	mu      sync.Mutex
	cond    sync.Cond
	queue   ring
	waiting int // workers parked in cond.Wait
	running int // works taken off queue whose function has not returned
	closed  bool

	workers []*sharedWorker
	exited  chan struct{}
	live    atomic.Int32
	discard atomic.Bool
}

var _ Pool = (*SharedPool)(nil)

// sharedWorker holds one worker's counters, padded (inside runner.pub).
type sharedWorker struct {
	r runner
	_ [cacheLine]byte
}

// NewShared starts a SharedPool with opts.Workers workers. Call Close to
// stop them.
func NewShared(opts Options) *SharedPool {
	n := opts.workers()
	p := &SharedPool{
		workers: make([]*sharedWorker, n),
		exited:  make(chan struct{}),
	}
	p.cond.L = &p.mu
	p.live.Store(int32(n))
	for i := range p.workers {
		w := &sharedWorker{}
		w.r.discard = &p.discard
		w.r.onPanic = opts.OnPanic
		p.workers[i] = w
	}
	for i, w := range p.workers {
		go p.run(w, opts.Name, i)
	}
	return p
}

// Workers returns the number of workers.
func (p *SharedPool) Workers() int { return len(p.workers) }

// Submit queues fn on the shared list and returns its handle. It returns
// ErrClosed after Close.
func (p *SharedPool) Submit(fn func()) (*Work, error) {
	w := &Work{owner: p}
	if err := p.push(item{fn: fn, w: w}); err != nil {
		return nil, err
	}
	return w, nil
}

// SubmitKey is Submit: the key is ignored and per-key order is NOT kept.
func (p *SharedPool) SubmitKey(_ uint64, fn func()) (*Work, error) { return p.Submit(fn) }

// Go queues fn without a handle. It returns ErrClosed after Close.
func (p *SharedPool) Go(fn func()) error { return p.push(item{fn: fn}) }

// GoKey is Go: the key is ignored and per-key order is NOT kept.
func (p *SharedPool) GoKey(_ uint64, fn func()) error { return p.push(item{fn: fn}) }

// Cancel cancels w if it has not started; see FixedPool.Cancel for the
// results.
func (p *SharedPool) Cancel(w *Work) CancelResult { return w.cancel(p) }

// Close stops the pool; see Pool.Close. It returns nil once every worker
// has exited, or ctx.Err() if ctx ends first.
func (p *SharedPool) Close(ctx context.Context, mode CloseMode) error {
	if mode == CancelQueued {
		p.discard.Store(true)
	}
	p.mu.Lock()
	if mode == CancelQueued {
		p.queue.each(func(it *item) {
			if it.w != nil {
				it.w.state.CompareAndSwap(uint32(WorkQueued), uint32(WorkCancelled))
			}
		})
	}
	p.closed = true
	p.cond.Broadcast()
	p.mu.Unlock()
	return waitExited(ctx, p.exited)
}

// Stats returns a snapshot of the workers' counters; Queued is the length
// of the shared list.
func (p *SharedPool) Stats() Stats {
	s := Stats{Workers: make([]WorkerStats, len(p.workers)), Shared: true}
	// Queued first: a worker publishes its counters before it parks, in
	// the critical section in which its last work stops counting as
	// running, so a Queued of 0 read here comes with counters that show
	// every work finished.
	p.mu.Lock()
	s.Queued = int64(p.queue.n + p.running)
	p.mu.Unlock()
	for i, w := range p.workers {
		s.Workers[i] = w.r.pub.snapshot()
	}
	return s
}

func (p *SharedPool) push(it item) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	p.queue.push(it)
	if p.waiting > 0 {
		p.cond.Signal()
	}
	p.mu.Unlock()
	return nil
}

// publishEvery is how many works a shared worker runs between two
// publications of its counters while its list is not empty.
const publishEvery = 64

// run is the worker goroutine: take one work, run it, repeat; wait on the
// cond when the list is empty; exit when closed and empty.
func (p *SharedPool) run(w *sharedWorker, name string, idx int) {
	defer func() {
		if p.live.Add(-1) == 0 {
			close(p.exited)
		}
	}()
	if name != "" {
		pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(),
			pprof.Labels("sched.pool", name, "sched.worker", strconv.Itoa(idx))))
	}
	var one [1]item
	unpublished := 0
	p.mu.Lock()
	for {
		for p.queue.n == 0 {
			if unpublished > 0 {
				w.r.pub.publish(&w.r.own, -1)
				unpublished = 0
			}
			if p.closed {
				p.mu.Unlock()
				return
			}
			p.waiting++
			p.cond.Wait()
			p.waiting--
		}
		one[0] = p.queue.pop()
		p.running++
		p.mu.Unlock()

		w.r.runItems(one[:])
		one[0] = item{}
		w.r.own.addBatch(1)
		// Publish every publishEvery works and before parking, not per
		// work: the counters cost the baseline no more than the fixed pool.
		if unpublished++; unpublished >= publishEvery {
			w.r.pub.publish(&w.r.own, -1)
			unpublished = 0
		}

		p.mu.Lock()
		p.running--
	}
}
