// Package sched runs works (func()) on pools of worker goroutines for the
// uringrt runtime: completion callbacks, per-connection handlers, anything
// that must not run on an event loop. It imports nothing else of uringrt.
//
// Two pools implement the Pool interface:
//
// FixedPool: every worker owns a private list with its own lock. Submit
// deals works round-robin, SubmitKey by a hash of the key (so one key's
// works run on one worker, in order). A worker swaps its whole list for an
// empty one under its lock and runs the taken batch without any lock; it
// parks only when its list is empty, and only a submit that finds it parked
// wakes it.
//
//	submitters        private lists (lock each)     workers
//	  Submit ──rr──┬──▶ [w0: a d g] ──swap──▶ batch ─▶ w0 runs a d g
//	  SubmitKey(k) ├──▶ [w1: b e  ] ──swap──▶ batch ─▶ w1 runs b e
//	   └─hash(k)───┴──▶ [w2: c f k1 k2] ─swap─▶ batch ─▶ w2 runs c f k1 k2
//	  one lock per worker, taken once per work by the submitter and
//	  once per BATCH by the worker; a busy worker gets no wake-up
//
// SharedPool: the baseline, one list under one mutex shared by all workers
// (a sync.Cond parks idle ones); each worker takes one work per lock.
//
//	submitters          shared list (one lock)          workers
//	  Submit ──┐                                   ┌──▶ w0 runs a, then locks again
//	  Submit ──┼──▶ [a b c d e f ...] ──one each──┼──▶ w1 runs b, ...
//	  Submit ──┘   mutex + cond                    └──▶ w2 runs c, ...
//	  every work: one lock by the submitter and one by a worker, all
//	  on the same lock
//
// # Life of a work
//
// A Work (the handle of Submit and SubmitKey) moves queued -> running ->
// done, or queued -> cancelled, each step a compare-and-swap. A worker
// swaps queued->running right before calling the function; Cancel swaps
// queued->cancelled. So Cancel works wherever the work is, including in a
// batch the worker has already taken (it is skipped there), and a work
// either runs once or never. Go and GoKey queue a work without a handle and
// without allocating; only Close(ctx, CancelQueued) can cancel those.
//
// A work that panics is recovered: the worker goes on with its next work,
// the panic is counted and passed to Options.OnPanic. A work must not call
// runtime.Goexit (it would end its worker).
//
// # Counters
//
// Each worker counts works run, cancelled, panics and batches (with a
// power-of-two histogram of batch sizes) in its own fields and publishes
// them with plain atomic stores on cache lines no other worker writes; Stats
// reads them, and package runtime/uringprom's NewPoolCollector exports them
// to Prometheus at scrape time (this package links no metrics library).
package sched
