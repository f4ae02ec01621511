package uringrt

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/uringrt/uringrt/netpoll"
)

// loop owns one ring, driven by one goroutine: by default an ordinary one
// that sleeps in Go's netpoller (loop_gowait.go), with Config.LockedLoops
// one locked to its OS thread that sleeps in io_uring_enter. Other
// goroutines reach it only
// through post (an MPSC queue, a mutex-guarded slice swapped whole by the
// loop) and an eventfd wake that is written only when the loop sleeps.
type loop struct {
	id   int
	rt   *Runtime
	ring *netpoll.Ring
	// wakeFD is the eventfd post signals when the loop sleeps; its read
	// (wakeOp) stays armed.
	wakeFD *netpoll.EventfdWake

	mu       sync.Mutex
	queue    []request
	exited   bool // the loop has stopped: requests are handled by handleDead
	sleeping atomic.Bool
	posted   atomic.Bool // queue is non-empty (read by the idle poll)

	// loop-owned from here on
	spare       []request
	slots       []*op
	free        []uint32
	inflight    int
	cqes        []netpoll.CQE
	wakes       []*pollDesc
	opWakes     []*op
	bufRing     *netpoll.BufRing
	bundles     bool // callback recvs take bundles (op_cb.go)
	wakeOp      op
	files       *netpoll.FileTable // registered files, nil without them
	stopping    bool
	batchAvg16  int            // EWMA of CQEs per wake-up, in sixteenths
	holdPMissed bool           // the last wait kept the P (DedicatedLoops) and timed out empty
	waitedEmpty bool           // the last wait ended with no CQE: skip the idle poll
	lastTrim    int64          // monoNow of the last drop of the pools' free buffers (noteIdle)
	trimTick    uint32         // iterations, so that a busy loop reads the clock for noteIdle once in 64
	polls       int            // armed polls (parked net.Conn readers and writers)
	handedOff   bool           // the last batch yielded the P (loop_yield.go)
	runq        *runnableProbe // nil: never yield for stranded goroutines
	lastYield   time.Time      // when the loop last let go of its P (loop_yield.go)
	closing     int            // fds waiting for their ops' CQEs before close(2)
	closes      closeQueue     // fds ready for close(2), a budget per iteration (close.go)
	tid         int32          // the thread running this iteration, 0 until curTid reads it (op_poll.go)
	rehomes     int            // multishot ops cancelled to be armed again from the loop's thread (op_poll.go)
	recancel    []*op          // cancels to send again (the last one failed)
	lastResend  time.Time
	stashed     []netpoll.CQE // reaped by getSQE on a full CQ, completed by reap
	stashBuf    []netpoll.CQE

	// buffer lending (lend.go): the most buffers that may be lent (0:
	// lending off)
	lendCap int
	ringMem []byte // every buffer of bufRing, to tell its memory

	loopCB // the callback API's state (callback_loop.go)

	stats loopStats
	udp   udpLoop // PacketConn counters and buffer groups (udp_metrics.go)
	hist  loopHists
	gw    *goWaiter // the park on the ring fd of a loop that is not locked (loop_gowait.go), nil otherwise
	done  chan struct{}
}

// run is the loop: take queued requests -> prep SQEs -> one enter that
// submits and waits -> reap all CQEs -> run their completions as one batch
// -> wake the goroutines of that batch.
func (l *loop) run() { l.runFrom(false, nil) }

// iterate runs the loop's iterations until it exits, or until another
// goroutine runs the loop (a takeover: runFrom, callback_inline_run.go).
func (l *loop) iterate() {
	idle := loopIdleWait
	for {
		l.tid = 0 // read again by curTid when a poll needs it
		l.drainQueue()
		if !l.runInline() { // callback_inline_run.go
			return // another goroutine runs the loop now
		}
		l.resendCancels()
		l.runTimers() // callback_timer_loop.go: before flushCB, so their writes go out now
		l.flushCB()
		l.closes.run(l)
		if l.stopping && l.inflight == 0 && l.closing == 0 && l.closes.empty() && l.inl.empty() {
			// An op refused in this pass (arm while stopping) owes its
			// owner a wake: flush it, or a goroutine waits for ever.
			l.flushWakes()
			l.exit()
			l.teardown()
			close(l.done)
			return
		}
		var minC uint32
		var timeout, minWait time.Duration
		if l.ring.CQReady() == 0 && len(l.stashed) == 0 && !l.wakesPending() && l.closes.empty() && !l.cbPending() && !l.idlePoll() {
			l.sleeping.Store(true)
			if l.queued() {
				l.sleeping.Store(false)
			} else {
				minC, timeout, minWait = l.waitPolicy(idle)
			}
		}
		if minC > 0 {
			var wait bool
			if timeout, wait = l.timerWait(timeout); !wait { // callback_timer_loop.go
				minC = 0
				l.sleeping.Store(false)
			}
		}
		holdP := l.gw == nil && minC > 0 && l.rt.cfg.DedicatedLoops && !l.holdPMissed && 2*l.polls <= l.inflight
		l.setRawSubmit()
		waits := l.ring.Stats().Waits
		var waitStart time.Time
		if l.runq != nil && minC > 0 { // only a wait (minC > 0) can sleep
			waitStart = time.Now()
		}
		var err error
		if minC > 0 && len(l.recancel) > 0 {
			timeout, minWait = min(timeout, cancelRetryGap), 0 // cancels to resend soon
		}
		if l.gw != nil && minC > 0 {
			l.goWait(timeout)
		} else if holdP {
			_, err = l.ring.SubmitAndWaitHoldP(minC, min(timeout, holdPWaitCap), minWait)
		} else {
			if minC > 0 && l.yieldStranded() && (l.posted.Load() || l.ring.CQReady() > 0) {
				minC = 0 // work came while the loop yielded: flush, do not sleep
			}
			_, err = l.ring.SubmitAndWait(minC, timeout, minWait)
		}
		l.handedOff = false
		if err != nil {
			l.enterError(err)
		}
		l.sleeping.Store(false)
		if l.posted.Load() {
			// Requests posted before this batch's completions (an
			// AsyncWrite, then the peer's reply to it) are handled
			// before those completions run, keeping their order.
			l.drainQueue()
		}
		n := l.reap()
		n += l.sweepAfterReap() // idle.go
		// A wait that kept the P and found nothing: the loop is idle, so
		// the next wait gives the P back to Go's scheduler.
		l.holdPMissed = holdP && n == 0
		// A wait that ended with nothing (the 1 s idle timeout): the loop
		// is idle, so it sleeps again without polling first.
		l.waitedEmpty = minC > 0 && n == 0
		l.noteIdle(n) // outq.go
		if minC > 0 {
			l.noteBatch(n)
		}
		if l.rt.metrics.Load() {
			l.publish(n)
		}
		if l.flushWakes() {
			l.handedOff = true
			// Let the goroutines this batch released run before the loop
			// blocks in the kernel again.
			runtime.Gosched()
			l.lastYield = time.Now()
		} else {
			l.yieldFair(waitStart, l.ring.Stats().Waits != waits && !holdP)
		}
	}
}

// setRawSubmit chooses how large a submission may be made as a raw system
// call that keeps the loop's P (netpoll Ring.SetRawSubmitMax). A ring of
// mostly parked net.Conn readers keeps netpoll's default (64 SQEs): the
// goroutines the last batch woke may still be runnable on the P, and a
// long submission lets them run meanwhile. Otherwise nothing waits for the
// P and submissions up to rawSubmitMax are raw: the callback API with 10
// connections then never sleeps between batches (1.22-1.28x msgs/s at
// 0.78-0.82x CPU per message, BENCHMARKS.md).
func (l *loop) setRawSubmit() {
	if l.gw != nil {
		// A loop that parks in Go's netpoller never sleeps in an enter,
		// and every enter it makes through Syscall6 lets sysmon move it
		// to another thread when the enter outlasts a tick: the ops it
		// armed there then run their COOP_TASKRUN task_work on that
		// thread, waking it from its idle sleep for every completion.
		l.ring.SetRawSubmitMax(l.ring.SQEntries())
		return
	}
	if 2*l.polls > l.inflight {
		l.ring.SetRawSubmitMax(netpoll.DefaultRawSubmitMax)
	} else {
		l.ring.SetRawSubmitMax(rawSubmitMax)
	}
}

// rawSubmitMax bounds a raw submission of a callback-API loop: 256 SENDs
// of small messages take the kernel a few hundred microseconds; a GC
// stop-the-world waits for a raw system call to return.
const rawSubmitMax = 256

func (l *loop) enterError(err error) {
	var e *netpoll.Error
	if errors.As(err, &e) && (e.Err == syscall.EAGAIN || e.Err == syscall.EBUSY) {
		return // reap below frees CQ space; the SQEs are still queued
	}
	l.rt.logger.Error("io_uring_enter failed", "loop", l.id, "err", err)
	time.Sleep(time.Millisecond) // never spin on a persistent error
}

// getSQE returns a free SQE, submitting what is queued when the SQ is full
// (never dropping a request).
func (l *loop) getSQE() *netpoll.SQE {
	for {
		if sqe := l.ring.GetSQE(); sqe != nil {
			return sqe
		}
		if _, err := l.ring.Submit(); err != nil {
			// EBUSY: the CQ (and its overflow) is full. Take CQEs out to
			// make room, but complete none here: completions run only in
			// reap, never inside the preparation of a request.
			l.enterError(err)
			l.stash()
		}
	}
}

// stash moves ready CQEs out of the CQ, uncompleted, for reap.
func (l *loop) stash() {
	if l.stashBuf == nil {
		l.stashBuf = make([]netpoll.CQE, 256)
	}
	n, err := l.ring.Reap(l.stashBuf)
	if err != nil {
		l.enterError(err)
	}
	l.stashed = append(l.stashed, l.stashBuf[:n]...)
}

// reap consumes every ready CQE (those stashed first) and completes its
// op: the one point of an iteration where completions run. The goroutines
// these completions release are collected for flushWakes.
func (l *loop) reap() int {
	total := len(l.stashed)
	for i := 0; i < len(l.stashed); i++ { // completions can stash more
		l.completeCQE(&l.stashed[i])
	}
	l.stashed = l.stashed[:0]
	for {
		entered := l.ring.CQReady() == 0 // Reap then enters to flush task_work
		n, err := l.ring.Reap(l.cqes)
		if err != nil {
			l.enterError(err)
		}
		if entered && n > 0 && l.posted.Load() {
			// The same ordering as after the loop's wait: what was
			// posted before these completions ran goes first.
			l.drainQueue()
		}
		for i := 0; i < n; i++ {
			l.completeCQE(&l.cqes[i])
		}
		total += n
		if n < len(l.cqes) {
			break
		}
	}
	if l.bufRing != nil && total > 0 {
		l.bufRing.Commit()
	}
	if total > 0 {
		l.hist.observeBatch(total)
	}
	return total
}

// flushWakes wakes, together, every goroutine the batch released.
func (l *loop) flushWakes() bool {
	woke := false
	for i, pd := range l.wakes {
		if pd.notify() {
			woke = true
		}
		l.wakes[i] = nil
	}
	l.wakes = l.wakes[:0]
	for i, o := range l.opWakes {
		o.done <- struct{}{}
		woke = true
		l.opWakes[i] = nil
	}
	l.opWakes = l.opWakes[:0]
	return woke
}
