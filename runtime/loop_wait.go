package uringrt

import (
	"time"

	"github.com/uringrt/uringrt/netpoll"
	"github.com/uringrt/uringrt/runtime/experiment"
)

// How a loop waits: the batch size (min_complete) and timeouts of its one
// enter per iteration, and the optional busy poll before it sleeps.

// holdPWaitCap bounds a wait that keeps the loop's P (Config.DedicatedLoops):
// past it the loop is idle and its next wait releases the P.
const holdPWaitCap = time.Millisecond

// idlePoll busy-polls, for up to Config.IdlePoll, the CQ, the kernel's
// pending-task_work flag and the request queue, and reports whether work
// appeared (then the loop flushes it with a non-blocking enter instead of
// sleeping). Under sustained load the loop then never sleeps, so it takes
// no context switch per batch; the price is up to IdlePoll of CPU per idle
// gap.
func (l *loop) idlePoll() bool {
	d := l.rt.cfg.IdlePoll
	if d <= 0 || l.gw != nil || l.stopping || l.waitedEmpty || 2*l.polls > l.inflight {
		// Mostly parked net.Conn readers: each batch then wakes
		// goroutines and costs the locked thread's P hand-off, so
		// polling (which makes batches smaller) costs more switches
		// than it saves.
		return false
	}
	if l.ring.SQSpace() < l.ring.SQEntries() {
		// SQEs not yet consumed by the kernel (prepared, or left by an
		// EAGAIN/EBUSY enter) go in before the loop polls for their
		// completions.
		if _, err := l.ring.Submit(); err != nil {
			l.enterError(err)
			return true
		}
	}
	start := time.Now()
	for i := 1; ; i++ {
		if l.ring.CQPending() || l.posted.Load() {
			l.stats.idlePollHits.Add(1)
			return true
		}
		if i%64 == 0 && time.Since(start) >= d {
			l.stats.idlePollMiss.Add(1)
			return false
		}
	}
}

// waitPolicy sizes min_complete for the next wait (batched local
// task_work: the loop is woken once per batch, not once per completion).
// The batch asked for is twice the recent average batch (an EWMA of CQEs
// per wake-up), so it grows under load until WaitLatency bounds it, and at
// most a quarter of the requests in flight when most of them are polls of
// parked net.Conn readers (each can post one CQE per wait, so with few
// connections a larger batch would rarely fill and every wait would run to
// WaitLatency); at low
// load (average below 2) the loop waits for a single CQE and adds no
// latency. With the kernel's min-wait (6.12+) the wait returns after
// WaitLatency as soon as one CQE is ready; before that, WaitLatency is the
// wait's timeout.
func (l *loop) waitPolicy(idle time.Duration) (uint32, time.Duration, time.Duration) {
	cfg := &l.rt.cfg
	avg := l.batchAvg16 / 16
	if cfg.WaitBatch == experiment.WaitBatchOff || avg < 2 || l.inflight < minBatchInflight {
		return 1, idle, 0
	}
	limit := l.inflight
	if 2*l.polls > l.inflight {
		// Mostly parked net.Conn readers: each posts one CQE and then
		// waits for its goroutine, so a large batch rarely fills.
		limit = l.inflight / 4
	}
	want := uint32(min(2*avg, limit, 256))
	if l.ring.FeatureBits()&netpoll.FeatMinTimeout != 0 {
		return want, idle, cfg.WaitLatency
	}
	return want, cfg.WaitLatency, 0
}

// minBatchInflight is the fewest requests in flight for which the loop
// waits for a batch. With fewer (a handful of busy connections, each with
// a recv and a send) a batch fills only when most connections have gone
// round, so waiting for one stalls the others: side by side with recv
// bundles, a 10-connection echo lost 15-25 % of its msgs/s to batched
// waits, and won 2-10 % with this floor (BENCHMARKS.md).
const minBatchInflight = 64

// noteBatch folds the CQEs of one wake-up into the EWMA (weight 1/8, in
// sixteenths).
func (l *loop) noteBatch(n int) {
	l.batchAvg16 += (n*16 - l.batchAvg16) / 8
}

// wakesPending reports goroutines released outside reap, by requests the
// loop handled (an op armed after its deadline passed or its fd began
// closing completes at once): the loop must not sleep before waking them.
// Before, such a Write waited for the loop's next wake-up, up to its 1 s
// idle wait.
func (l *loop) wakesPending() bool { return len(l.wakes) > 0 || len(l.opWakes) > 0 }

// loopIdleWait is the longest a loop with nothing in flight sleeps; a
// variable so that a test can make a lost wake-up hang instead of taking a
// second.
var loopIdleWait = time.Second
