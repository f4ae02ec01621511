// Package experiment holds the switches that reproduce uringrt's
// comparisons and older kernels: the pollable-request policies (a worker
// blocking on each socket against a nonblocking try and a poll arm),
// batched waiting off, a cap on io-wq workers, and kernel features turned
// off one by one. A server leaves them at their zero values, which are
// uringrt's defaults; the echo-server's flags set them (BENCHMARKS.md names
// the flags of each comparison). They reach a runtime through
// uringrt.Config's embedded Switches field.
package experiment

import "fmt"

// Switches are the experiment switches of one runtime. The zero value is
// the default behaviour.
type Switches struct {
	// Pollable is the pollable-request policy; the default is PollHybrid.
	Pollable Pollable
	// WaitBatch turns batched waiting off for comparison.
	WaitBatch WaitBatch
	// IOWQMaxWorkers, when > 0, caps each ring's io-wq workers, bounded and
	// unbounded alike (IORING_REGISTER_IOWQ_MAX_WORKERS, Linux 5.15+).
	IOWQMaxWorkers uint32
	// DisableDeferTaskrun sets locked loops' rings up without
	// DEFER_TASKRUN/SINGLE_ISSUER (COOP_TASKRUN instead), as on kernels
	// before 6.1.
	DisableDeferTaskrun bool
	// DisableMultishot uses single-shot accept and recv, as before Linux
	// 5.19/6.0.
	DisableMultishot bool
	// DisableBufRing uses per-connection buffers instead of provided buffer
	// rings (and so no multishot recv), as before Linux 5.19.
	DisableBufRing bool
	// DisableFixedFiles addresses callback connections by fd instead of
	// registered file slots (IORING_REGISTER_FILES2 sparse, Linux 5.19+).
	DisableFixedFiles bool
	// DisableRecvBundles makes each callback recv CQE carry one provided
	// buffer instead of a bundle of them (IORING_RECVSEND_BUNDLE, Linux
	// 6.10+): one tcp_recvmsg per 4 KiB of a stream instead of one per
	// bundle.
	DisableRecvBundles bool
	// DisableBufferLending makes the callback API's WriteNoCopy copy, as
	// Write does, instead of sending the provided buffers data arrived in.
	DisableBufferLending bool
	// NetpollReadiness makes net.Conn readers (PollHybrid) and Accept
	// wait in Go's own netpoller (epoll), as Go's net does, instead of on
	// a multishot POLLIN of their loop, whatever GOMAXPROCS is: the thread
	// that finds the socket readable runs the reader, with no loop
	// goroutine woken between, and a socket no writer ever found full is
	// closed by Close itself. Writers that find the socket full still wait
	// on the loop's POLLOUT. It is the default when GOMAXPROCS is 2 or
	// more and the loops are not LockedLoops; this switch chooses it in
	// those cases too.
	NetpollReadiness bool
	// LoopReadiness makes net.Conn readers and Accept wait on their loop's
	// multishot POLLIN (IORING_OP_POLL_ADD, Linux 5.13+), woken by the loop
	// goroutine's completion batch, and the loop close(2) every socket:
	// the default with GOMAXPROCS 1, where the loop and the readers share
	// one P, and with LockedLoops. It wins over NetpollReadiness.
	LoopReadiness bool
}

// Pollable is the policy for pollable requests (socket reads, writes and
// accepts): how an operation on a socket that is not ready waits.
type Pollable int

const (
	// PollHybrid (the default) tries the socket operation nonblocking in
	// the caller; on EAGAIN the loop arms a poll (IORING_OP_POLL_ADD) and
	// the caller parks until the completion batch wakes it, then retries.
	PollHybrid Pollable = iota
	// PollRing submits the operation itself (IORING_OP_RECV/SEND) and lets
	// the kernel try it and poll-arm it internally (FAST_POLL, Linux 5.7+).
	PollRing
	// PollAsync submits the operation with IOSQE_ASYNC: it is forced to
	// io-wq, where a worker blocks on it (bounded by IOWQMaxWorkers).
	PollAsync
	// PollBlocking is the baseline the others are measured against: each
	// operation runs blocking on a bounded pool of Config.Workers workers
	// (one sched fixed worker per connection key), so a worker waits on one
	// socket while other work queues behind it.
	PollBlocking
)

// String returns "hybrid", "ring", "async" or "blocking".
func (p Pollable) String() string {
	switch p {
	case PollHybrid:
		return "hybrid"
	case PollRing:
		return "ring"
	case PollAsync:
		return "async"
	case PollBlocking:
		return "blocking"
	}
	return fmt.Sprintf("Pollable(%d)", int(p))
}

// ParsePollable parses "hybrid", "ring", "async" or "blocking"; any other
// string is an error naming the four.
func ParsePollable(s string) (Pollable, error) {
	for _, p := range []Pollable{PollHybrid, PollRing, PollAsync, PollBlocking} {
		if p.String() == s {
			return p, nil
		}
	}
	return 0, fmt.Errorf("unknown pollable policy %q (want hybrid, ring, async or blocking)", s)
}

// WaitBatch selects how a loop waits for completions.
type WaitBatch int

const (
	// WaitBatchOn (the default) waits for min_complete CQEs sized from what
	// the loop has in flight, bounded by Config.WaitLatency (and the
	// kernel's min-wait, Linux 6.12+), on a DEFER_TASKRUN ring: one
	// wake-up per batch of completions.
	WaitBatchOn WaitBatch = iota
	// WaitBatchOff is the comparison baseline: the ring runs completion
	// task_work as it comes (COOP_TASKRUN instead of DEFER_TASKRUN) and the
	// loop waits for one CQE at a time (min_complete = 1).
	WaitBatchOff
)
