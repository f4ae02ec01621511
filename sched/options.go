package sched

import "runtime"

// Options configure a pool. The zero value is valid.
type Options struct {
	// Workers is the number of worker goroutines. Zero or less means
	// runtime.GOMAXPROCS(0).
	Workers int
	// Name labels the worker goroutines for pprof (labels "sched.pool" and
	// "sched.worker"). It does not name metrics; uringprom.NewPoolCollector
	// takes its own label.
	Name string
	// OnPanic, if not nil, is called on the worker goroutine after a work
	// panicked, with the recovered value and the stack of the panic. The
	// worker then goes on with its next work. It must not block for long:
	// the worker's queue waits meanwhile. If it panics itself, the process
	// dies. Panics are counted in Stats whether or not OnPanic is set.
	OnPanic func(v any, stack []byte)
}

func (o Options) workers() int {
	if o.Workers > 0 {
		return o.Workers
	}
	return runtime.GOMAXPROCS(0)
}
