package sched

import (
	"context"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
)

// maxSpareCap bounds the capacity, in works, that a list keeps for reuse
// once it has been emptied (both pools): below it a steady load allocates
// nothing; above it the memory of a burst is given back.
const maxSpareCap = 1 << 20

// FixedPool is a pool of fixed workers: each worker has its own private
// list, guarded by its own mutex; there is no lock shared by all workers.
// Submit picks a worker round-robin, SubmitKey picks it from the key, so
// works of one key run on one worker in submission order. A worker takes
// its whole list in one step (a slice swap) and runs it as a batch, then
// parks until a submitter wakes it; a busy worker is not signalled. A
// worker's goroutine starts with the first work queued to it, so a pool
// that is given little work holds few goroutines.
//
// Create it with NewFixed; the zero value is not usable. All methods are
// safe for concurrent use. It implements Pool.
type FixedPool struct {
	workers []*fixedWorker
	exited  chan struct{} // closed when the last worker has exited
	live    atomic.Int32  // workers not yet exited
	discard atomic.Bool   // Close(CancelQueued): cancel instead of run
	name    string        // Options.Name: the workers' pprof label
	_       [cacheLine]byte
	next    atomic.Uint64 // round-robin cursor, written by every submitter
	_       [cacheLine]byte
}

var _ Pool = (*FixedPool)(nil)

// fixedWorker is one worker with its private list.
type fixedWorker struct {
	// Submitter side, guarded by mu.
	mu      sync.Mutex
	list    []item
	idle    bool // parked or about to park on wake: the next submit signals
	closed  bool
	started bool // its goroutine was started (first push), or Close came first
	p       *FixedPool
	idx     int
	wake    chan struct{} // 1-buffered; at most one token (sent only when idle)
	_       [cacheLine]byte

	// inBatch is the size of the batch being run (0 between batches):
	// stored by the worker twice per batch, read by Stats.
	inBatch atomic.Int64

	// Worker side: touched only by the worker goroutine (r.pub is read by
	// Stats).
	r     runner
	spare []item // the previous batch's slice, emptied, handed back as list
	_     [cacheLine]byte
}

// NewFixed starts a FixedPool with opts.Workers workers. Call Close to stop
// them.
func NewFixed(opts Options) *FixedPool {
	n := opts.workers()
	p := &FixedPool{
		workers: make([]*fixedWorker, n),
		exited:  make(chan struct{}),
		name:    opts.Name,
	}
	p.live.Store(int32(n))
	for i := range p.workers {
		w := &fixedWorker{wake: make(chan struct{}, 1), p: p, idx: i}
		w.r.discard = &p.discard
		w.r.onPanic = opts.OnPanic
		p.workers[i] = w
	}
	return p
}

// exitWorker counts a worker out: its goroutine ended, or Close found it
// never started.
func (p *FixedPool) exitWorker() {
	if p.live.Add(-1) == 0 {
		close(p.exited)
	}
}

// Workers returns the number of workers.
func (p *FixedPool) Workers() int { return len(p.workers) }

// WorkerForKey returns the index of the worker that runs the works of key
// (a Fibonacci hash of key, modulo Workers). It never changes for a pool.
func (p *FixedPool) WorkerForKey(key uint64) int {
	h := key * 0x9E3779B97F4A7C15
	return int((h >> 32) % uint64(len(p.workers)))
}

func (p *FixedPool) roundRobin() *fixedWorker {
	n := p.next.Add(1) - 1
	return p.workers[n%uint64(len(p.workers))]
}

// Submit queues fn on the next worker in round-robin order and returns its
// handle. It returns ErrClosed after Close.
func (p *FixedPool) Submit(fn func()) (*Work, error) {
	w := &Work{owner: p}
	if err := p.roundRobin().push(item{fn: fn, w: w}); err != nil {
		return nil, err
	}
	return w, nil
}

// SubmitKey queues fn on the worker of key (see WorkerForKey): works of one
// key run one at a time in submission order. It returns ErrClosed after
// Close.
func (p *FixedPool) SubmitKey(key uint64, fn func()) (*Work, error) {
	w := &Work{owner: p}
	if err := p.workers[p.WorkerForKey(key)].push(item{fn: fn, w: w}); err != nil {
		return nil, err
	}
	return w, nil
}

// Go queues fn round-robin without a handle; it allocates nothing itself.
// It returns ErrClosed after Close.
func (p *FixedPool) Go(fn func()) error {
	return p.roundRobin().push(item{fn: fn})
}

// GoKey queues fn on the worker of key without a handle. It returns
// ErrClosed after Close.
func (p *FixedPool) GoKey(key uint64, fn func()) error {
	return p.workers[p.WorkerForKey(key)].push(item{fn: fn})
}

// Cancel cancels w if it has not started, wherever it is: in a worker's
// list or already taken into the batch the worker runs. It returns
// Cancelled (w will never run), Started (w is running or done),
// AlreadyCancelled, or NotFound (nil or another pool's work).
func (p *FixedPool) Cancel(w *Work) CancelResult { return w.cancel(p) }

// Close stops the pool; see Pool.Close. It returns nil once every worker
// has exited, or ctx.Err() if ctx ends first.
func (p *FixedPool) Close(ctx context.Context, mode CloseMode) error {
	if mode == CancelQueued {
		p.discard.Store(true)
	}
	for _, w := range p.workers {
		w.mu.Lock()
		if mode == CancelQueued {
			// Report them cancelled now; the worker skips and counts
			// them (and cancels those of its running batch).
			for i := range w.list {
				if wk := w.list[i].w; wk != nil {
					wk.state.CompareAndSwap(uint32(WorkQueued), uint32(WorkCancelled))
				}
			}
		}
		w.closed = true
		wake := w.idle
		w.idle = false
		never := !w.started
		w.started = true
		w.mu.Unlock()
		if never {
			p.exitWorker()
		}
		if wake {
			w.signal()
		}
	}
	return waitExited(ctx, p.exited)
}

// Stats returns a snapshot of the workers' counters.
func (p *FixedPool) Stats() Stats {
	s := Stats{Workers: make([]WorkerStats, len(p.workers))}
	for i, w := range p.workers {
		ws := w.r.pub.snapshot()
		ws.QueueDepth = w.depth()
		s.Queued += ws.QueueDepth
		s.Workers[i] = ws
	}
	return s
}

// push appends it to the worker's list and wakes the worker if it is idle.
func (w *fixedWorker) push(it item) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	w.list = append(w.list, it)
	if !w.started {
		w.started = true
		go w.p.run(w, w.p.name, w.idx)
	}
	wake := w.idle
	w.idle = false
	w.mu.Unlock()
	if wake {
		w.signal()
	}
	return nil
}

// depth is the worker's queue depth: its list plus the batch it runs. The
// two parts are read at slightly different instants; a work moving from
// the list to a new batch in between may be missed or counted twice.
func (w *fixedWorker) depth() int64 {
	w.mu.Lock()
	n := len(w.list)
	w.mu.Unlock()
	return int64(n) + w.inBatch.Load()
}

// signal hands the worker its wake token. The channel never holds more than
// one (a token is sent only on an idle->busy transition, made under mu), so
// the default case is only a safety net.
func (w *fixedWorker) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run is the worker goroutine: take the whole list, run it, repeat; park
// when the list is empty; exit when closed and empty.
func (p *FixedPool) run(w *fixedWorker, name string, idx int) {
	defer p.exitWorker()
	if name != "" {
		pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(),
			pprof.Labels("sched.pool", name, "sched.worker", strconv.Itoa(idx))))
	}
	for {
		w.mu.Lock()
		for len(w.list) == 0 {
			if w.closed {
				w.mu.Unlock()
				return
			}
			w.idle = true
			w.mu.Unlock()
			<-w.wake
			w.mu.Lock()
		}
		batch := w.list
		w.list = w.spare
		w.mu.Unlock()

		n := len(batch)
		w.inBatch.Store(int64(n))
		w.r.runItems(batch)
		clear(batch) // drop the closures
		if cap(batch) > maxSpareCap {
			batch = nil
		}
		w.spare = batch[:0]
		w.r.pub.publish(&w.r.own, w.r.own.addBatch(n))
		w.inBatch.Store(0)
	}
}
