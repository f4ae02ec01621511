package sched

import (
	"runtime/debug"
	"sync/atomic"
)

// WorkState is the life-cycle state of a Work. The transitions are
// WorkQueued -> WorkRunning -> WorkDone, or WorkQueued -> WorkCancelled; each
// is made with a compare-and-swap, so a work either runs or is cancelled,
// never both.
type WorkState uint32

const (
	// WorkQueued: submitted, not started. It may sit in a worker's list or
	// in the batch the worker is running.
	WorkQueued WorkState = iota
	// WorkRunning: its function is running on a worker.
	WorkRunning
	// WorkDone: its function returned (or panicked and was recovered).
	WorkDone
	// WorkCancelled: it was cancelled before it started; it never runs.
	WorkCancelled
)

// String returns the state's name.
func (s WorkState) String() string {
	switch s {
	case WorkQueued:
		return "queued"
	case WorkRunning:
		return "running"
	case WorkDone:
		return "done"
	case WorkCancelled:
		return "cancelled"
	}
	return "WorkState(?)"
}

// Work is the handle of one submitted function, returned by Submit and
// SubmitKey and accepted by Cancel. Its methods are safe for concurrent use.
type Work struct {
	state atomic.Uint32
	owner Pool
}

// State returns the work's current state. It may change right after the
// call returns unless it is WorkDone or WorkCancelled, which are final.
func (w *Work) State() WorkState { return WorkState(w.state.Load()) }

// cancel implements Pool.Cancel for the pool p.
func (w *Work) cancel(p Pool) CancelResult {
	if w == nil || w.owner != p {
		return NotFound
	}
	if w.state.CompareAndSwap(uint32(WorkQueued), uint32(WorkCancelled)) {
		return Cancelled
	}
	if w.State() == WorkCancelled {
		return AlreadyCancelled
	}
	return Started
}

// item is one entry of a work list: the function and, for Submit, its
// handle (nil for Go, which then allocates nothing).
type item struct {
	fn func()
	w  *Work
}

// runner is the part of a worker that runs works and counts. Its own
// counters are touched only by the worker goroutine; pub is written only by
// the worker goroutine (atomic stores) and read by Stats.
type runner struct {
	own     counts
	pub     pubCounts
	discard *atomic.Bool // set by Close(CancelQueued): cancel, don't run
	onPanic func(v any, stack []byte)
}

// runItems runs items in order, skipping cancelled ones, and recovers from
// panics so that one bad work neither kills the worker nor skips the rest.
func (r *runner) runItems(items []item) {
	for i := 0; i < len(items); {
		i = r.runFrom(items, i)
	}
}

// runFrom runs items[i:] and returns len(items), or, after a panic in
// items[k], records it and returns k+1. One deferred call covers the whole
// batch.
func (r *runner) runFrom(items []item, i int) (next int) {
	cur := i
	defer func() {
		if cur >= len(items) {
			return
		}
		v := recover()
		if v == nil {
			return // runtime.Goexit: cannot be stopped
		}
		if w := items[cur].w; w != nil {
			w.state.Store(uint32(WorkDone))
		}
		r.own.run++
		r.own.panics++
		next = cur + 1
		if r.onPanic != nil {
			r.onPanic(v, debug.Stack())
		}
	}()
	for ; cur < len(items); cur++ {
		it := &items[cur]
		if w := it.w; w != nil {
			if r.discard.Load() {
				w.state.CompareAndSwap(uint32(WorkQueued), uint32(WorkCancelled))
			}
			if !w.state.CompareAndSwap(uint32(WorkQueued), uint32(WorkRunning)) {
				r.own.cancelled++
				continue
			}
			it.fn()
			w.state.Store(uint32(WorkDone))
		} else {
			if r.discard.Load() {
				r.own.cancelled++
				continue
			}
			it.fn()
		}
		r.own.run++
	}
	return cur
}
