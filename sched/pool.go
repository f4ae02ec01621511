package sched

import (
	"context"
	"errors"
)

// ErrClosed is returned by Submit, SubmitKey, Go and GoKey once Close has
// been called on the pool. The work is not queued and will never run.
var ErrClosed = errors.New("sched: pool closed")

// Pool is the interface the runtime uses to hand work to a worker pool.
// FixedPool and SharedPool implement it. All methods are safe for concurrent
// use by any number of goroutines.
type Pool interface {
	// Submit queues fn and returns a handle that Cancel accepts.
	// FixedPool picks the worker round-robin; SharedPool lets any idle
	// worker take it. It returns ErrClosed after Close.
	Submit(fn func()) (*Work, error)
	// SubmitKey queues fn like Submit. On a FixedPool every work of one key
	// goes to the same worker and runs in submission order (for submissions
	// ordered by happens-before, e.g. from one goroutine). On a SharedPool
	// the key is ignored and the order of works is NOT guaranteed.
	SubmitKey(key uint64, fn func()) (*Work, error)
	// Go queues fn without a handle (fire-and-forget; it cannot be
	// cancelled except by Close with CancelQueued). It allocates nothing
	// beyond the caller's closure in the steady state. It returns ErrClosed
	// after Close.
	Go(fn func()) error
	// GoKey is Go with the key semantics of SubmitKey.
	GoKey(key uint64, fn func()) error
	// Cancel prevents w from running if it has not started, including when
	// a worker has already taken it into the batch it is running.
	Cancel(w *Work) CancelResult
	// Close stops accepting work and tells the workers to exit once their
	// queues are empty. With Drain every queued work still runs; with
	// CancelQueued every queued work is cancelled (its Work reports
	// Cancelled and it never runs). Close waits for the workers to exit and
	// returns ctx.Err() if ctx ends first; the workers then still exit in
	// the background. Close may be called again, e.g. with a longer
	// deadline or with CancelQueued after a Drain that timed out.
	Close(ctx context.Context, mode CloseMode) error
	// Stats returns a snapshot of the pool's counters. It is cheap enough
	// for a metrics scrape, not meant for a hot path.
	Stats() Stats
	// Workers returns the number of workers (fixed at construction).
	Workers() int
}

// CancelResult is what Cancel found.
type CancelResult uint8

const (
	// Cancelled: the work had not started; it will never run.
	Cancelled CancelResult = iota
	// Started: the work had started running or had finished; it was not
	// stopped (a running work is never interrupted).
	Started
	// AlreadyCancelled: the work had been cancelled before, by Cancel or by
	// Close with CancelQueued.
	AlreadyCancelled
	// NotFound: the handle is nil or belongs to another pool.
	NotFound
)

// String returns the constant's name.
func (r CancelResult) String() string {
	switch r {
	case Cancelled:
		return "Cancelled"
	case Started:
		return "Started"
	case AlreadyCancelled:
		return "AlreadyCancelled"
	case NotFound:
		return "NotFound"
	}
	return "CancelResult(?)"
}

// CloseMode says what Close does with works still queued.
type CloseMode uint8

const (
	// Drain runs every queued work before the workers exit.
	Drain CloseMode = iota
	// CancelQueued cancels every work that has not started, including works
	// already taken into a worker's batch; they never run.
	CancelQueued
)

// String returns the constant's name.
func (m CloseMode) String() string {
	switch m {
	case Drain:
		return "Drain"
	case CancelQueued:
		return "CancelQueued"
	}
	return "CloseMode(?)"
}

// waitExited waits until exited is closed (every worker returned) or ctx
// ends; an exit that raced with ctx still counts as done.
func waitExited(ctx context.Context, exited <-chan struct{}) error {
	select {
	case <-exited:
		return nil
	case <-ctx.Done():
		select {
		case <-exited:
			return nil
		default:
			return ctx.Err()
		}
	}
}
