package runtime

import (
	"errors"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/uringrt/uringrt/netpoll"
)

// loop owns one ring on one locked OS thread. Other goroutines reach it only
// through post (an MPSC queue, a mutex-guarded slice swapped whole by the
// loop) and an eventfd wake that is written only when the loop sleeps.
type loop struct {
	id   int
	rt   *Runtime
	ring *netpoll.Ring
	efd  int

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
	dirty       []*CallbackConn
	bufRing     *netpoll.BufRing
	wakeOp      op
	wakeBuf     [8]byte
	stopping    bool
	batchAvg16  int     // EWMA of CQEs per wake-up, in sixteenths
	holdPMissed bool    // the last wait kept the P (DedicatedLoops) and timed out empty
	waitedEmpty bool    // the last wait ended with no CQE: skip the idle poll
	polls       int     // armed polls (parked net.Conn readers and writers)
	fixedOn     bool    // a sparse registered file table is in place
	fixedNext   int32   // next never-used slot
	fixedFree   []int32 // released slots
	closing     int     // fds waiting for their ops' CQEs before close(2)
	recancel    []*op   // cancels to send again (the last one failed)
	lastResend  time.Time
	draining    bool // in drainQueue
	cbConns     map[*CallbackConn]struct{}
	serving     []*listener

	chunks chunkPool  // output queue chunks (outq.go)
	budget loopBudget // budget.go
	idle   loopIdle   // idle.go

	stats loopStats
	udp   udpLoop // PacketConn counters and buffer groups (udp_metrics.go)
	hist  loopHists
	done  chan struct{}
}

// startLoop creates the ring on a new locked OS thread and starts the loop.
func startLoop(rt *Runtime, id int) (*loop, error) {
	l := &loop{id: id, rt: rt, done: make(chan struct{}), cbConns: make(map[*CallbackConn]struct{})}
	errc := make(chan error, 1)
	go func() {
		goruntime.LockOSThread() // never unlocked: the thread exits with the loop
		if err := l.setup(); err != nil {
			errc <- err
			close(l.done)
			return
		}
		errc <- nil
		l.run()
	}()
	if err := <-errc; err != nil {
		return nil, err
	}
	return l, nil
}

func (l *loop) setup() error {
	cfg := &l.rt.cfg
	flags := netpoll.SetupSingleIssuer | netpoll.SetupDeferTaskrun | netpoll.SetupTaskrunFlag
	if cfg.DisableDeferTaskrun || cfg.WaitBatch == WaitBatchOff {
		// Without DEFER_TASKRUN the kernel runs completion task_work as
		// it comes (COOP_TASKRUN): the comparison baseline for batching.
		flags = netpoll.SetupCoopTaskrun | netpoll.SetupTaskrunFlag
	}
	entries := cfg.RingEntries
	ring, err := l.rt.newRing(netpoll.Params{Entries: entries, CQEntries: entries * 4, Flags: flags | netpoll.SetupClamp, Fallback: true})
	if err != nil {
		return err
	}
	l.ring = ring
	if err := ring.RegisterRingFD(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		l.rt.logger.Debug("register ring fd", "err", err)
	}
	if cfg.IOWQMaxWorkers > 0 {
		if _, _, err := ring.IOWQMaxWorkers(cfg.IOWQMaxWorkers, cfg.IOWQMaxWorkers); err != nil {
			ring.Close()
			return err
		}
	}
	if l.rt.useBufRing {
		br, err := registerBufRing(ring, cfg)
		if err != nil {
			l.rt.logger.Warn("provided buffer ring unavailable; callback API uses single-shot recv", "err", err)
		} else {
			l.bufRing = br
		}
	}
	if !cfg.DisableFixedFiles {
		if err := ring.RegisterFilesSparse(fixedFileSlots); err == nil {
			l.fixedFree = make([]int32, 0, 64)
			l.fixedNext = 0
			l.fixedOn = true
		}
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		ring.Close()
		return err
	}
	l.efd = efd
	l.cqes = make([]netpoll.CQE, 256)
	l.slots = make([]*op, 0, 1024)
	l.wakeOp = op{kind: opWake, fd: efd}
	l.wakeOp.buf = l.wakeBuf[:]
	l.arm(&l.wakeOp)
	return nil
}

// fixedFileSlots is the size of each loop's sparse registered file table.
const fixedFileSlots = 1 << 16

// fixedFile registers fd in a free slot of the loop's file table
// (IORING_REGISTER_FILES_UPDATE2, one syscall per connection, not per op).
func (l *loop) fixedFile(fd int) (int32, bool) {
	if !l.fixedOn {
		return -1, false
	}
	var slot int32
	if n := len(l.fixedFree); n > 0 {
		slot = l.fixedFree[n-1]
		l.fixedFree = l.fixedFree[:n-1]
	} else if l.fixedNext < fixedFileSlots {
		slot = l.fixedNext
		l.fixedNext++
	} else {
		return -1, false
	}
	if _, err := l.ring.UpdateFiles(uint32(slot), []int32{int32(fd)}); err != nil {
		l.fixedFree = append(l.fixedFree, slot)
		return -1, false
	}
	return slot, true
}

// releaseFixedFile clears a slot once no op uses it.
func (l *loop) releaseFixedFile(slot int32) {
	l.ring.UpdateFiles(uint32(slot), []int32{-1})
	l.fixedFree = append(l.fixedFree, slot)
}

// post hands a request to the loop from any goroutine. A request posted
// after the loop exited (a connection accepted on another loop while the
// runtime closes) is handled at once by handleDead.
func (l *loop) post(r request) {
	l.mu.Lock()
	if l.exited {
		l.mu.Unlock()
		handleDead(&r)
		return
	}
	l.queue = append(l.queue, r)
	l.mu.Unlock()
	l.wake()
}

// wake makes the loop take its queue: a write to its eventfd, only when
// it sleeps.
func (l *loop) wake() {
	l.posted.Store(true)
	if l.sleeping.Load() && l.sleeping.CompareAndSwap(true, false) {
		var one = [8]byte{1}
		unix.Write(l.efd, one[:])
	}
}

// exit marks the loop as gone and hands what is still queued to
// handleDead: nothing is in flight any more, so nothing posted is lost.
func (l *loop) exit() {
	l.mu.Lock()
	l.exited = true
	q := l.queue
	l.queue = nil
	l.mu.Unlock()
	for i := range q {
		handleDead(&q[i])
	}
}

// handleDead does what a request still needs once its loop has exited (any
// goroutine): a connection handed to the loop is closed, an op's owner is
// told ECANCELED, a Serve returns. Other requests have nothing left to do.
func handleDead(r *request) {
	switch r.kind {
	case reqRegisterCB:
		r.cc.fd.closing.Store(true)
		r.cc.fd.finalClose()
	case reqCBWrite:
		r.cc.pendingWrites.Add(-1)
	case reqCloseFD:
		r.nfd.finalClose()
	case reqArm:
		if o := r.op; o.done != nil {
			o.res, o.flags = -int32(syscall.ECANCELED), 0
			o.done <- struct{}{}
		}
	case reqServe:
		r.ln.serveMu.Lock()
		if r.ln.served != nil {
			close(r.ln.served)
			r.ln.served = nil
		}
		r.ln.serveMu.Unlock()
	}
}

func (l *loop) queued() bool {
	l.mu.Lock()
	n := len(l.queue)
	l.mu.Unlock()
	return n > 0
}

// run is the loop: take queued requests -> prep SQEs -> one enter that
// submits and waits -> reap all CQEs -> run their completions as one batch
// -> wake the goroutines of that batch.
func (l *loop) run() {
	defer close(l.done)
	idle := time.Second
	for {
		l.drainQueue()
		l.resendCancels()
		l.flushCB()
		if l.stopping && l.inflight == 0 && l.closing == 0 {
			l.exit()
			l.teardown()
			return
		}
		var minC uint32
		var timeout, minWait time.Duration
		if l.ring.CQReady() == 0 && !l.idlePoll() {
			l.sleeping.Store(true)
			if l.queued() {
				l.sleeping.Store(false)
			} else {
				minC, timeout, minWait = l.waitPolicy(idle)
			}
		}
		holdP := minC > 0 && l.rt.cfg.DedicatedLoops && !l.holdPMissed && 2*l.polls <= l.inflight
		var err error
		if minC > 0 && len(l.recancel) > 0 {
			timeout, minWait = min(timeout, cancelRetryGap), 0 // cancels to resend soon
		}
		if holdP {
			_, err = l.ring.SubmitAndWaitHoldP(minC, min(timeout, holdPWaitCap), minWait)
		} else {
			_, err = l.ring.SubmitAndWait(minC, timeout, minWait)
		}
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
		// A wait that kept the P and found nothing: the loop is idle, so
		// the next wait gives the P back to Go's scheduler.
		l.holdPMissed = holdP && n == 0
		// A wait that ended with nothing (the 1 s idle timeout): the loop
		// is idle, so it sleeps again without polling first.
		l.waitedEmpty = minC > 0 && n == 0
		if minC > 0 {
			l.noteBatch(n)
		}
		if l.rt.metrics {
			l.publish(n)
		}
		if l.flushWakes() {
			// Let the goroutines this batch released run before the loop
			// blocks in the kernel again.
			goruntime.Gosched()
		}
	}
}

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
	if d <= 0 || l.stopping || l.waitedEmpty || 2*l.polls > l.inflight {
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
	if cfg.WaitBatch == WaitBatchOff || avg < 2 || l.inflight < 8 {
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

// noteBatch folds the CQEs of one wake-up into the EWMA (weight 1/8, in
// sixteenths).
func (l *loop) noteBatch(n int) {
	l.batchAvg16 += (n*16 - l.batchAvg16) / 8
}

func (l *loop) enterError(err error) {
	var e *netpoll.Error
	if errors.As(err, &e) && (e.Err == syscall.EAGAIN || e.Err == syscall.EBUSY) {
		return // reap below frees CQ space; the SQEs are still queued
	}
	l.rt.logger.Error("io_uring_enter failed", "loop", l.id, "err", err)
	time.Sleep(time.Millisecond) // never spin on a persistent error
}

// drainQueue handles the queued requests. It does nothing when called
// from inside itself (a request's handling can reap, through getSQE on a
// full SQ): the inner call would take the queue's spare backing array
// while the outer one still reads it.
func (l *loop) drainQueue() {
	if l.draining {
		return
	}
	l.draining = true
	defer func() { l.draining = false }()
	l.posted.Store(false)
	l.mu.Lock()
	q := l.queue
	l.queue = l.spare[:0]
	l.mu.Unlock()
	for i := range q {
		l.handle(&q[i])
		q[i] = request{}
	}
	l.spare = q[:0]
}

func (l *loop) handle(r *request) {
	switch r.kind {
	case reqArm:
		l.arm(r.op)
	case reqCancel:
		l.cancelOp(r.op)
	case reqCloseFD:
		l.closeFD(r.nfd)
	case reqRegisterCB:
		l.registerCB(r.cc)
	case reqCBWrite:
		r.cc.queueAsync(r.data)
	case reqCBClose:
		r.cc.closeOnLoop(nil)
	case reqServe:
		l.startServe(r.ln)
	case reqStopServe:
		l.stopServe(r.ln)
	case reqShutdownCB:
		l.shutdownCB()
	case reqFunc:
		r.fn()
	case reqStop:
		l.stop()
	}
}

// getSQE returns a free SQE, submitting what is queued when the SQ is full
// (never dropping a request).
func (l *loop) getSQE() *netpoll.SQE {
	for {
		if sqe := l.ring.GetSQE(); sqe != nil {
			return sqe
		}
		if _, err := l.ring.Submit(); err != nil {
			l.enterError(err)
			l.reap()
			l.flushWakes()
		}
	}
}

func (l *loop) takeSlot(o *op) uint64 {
	var s uint32
	if n := len(l.free); n > 0 {
		s = l.free[n-1]
		l.free = l.free[:n-1]
		l.slots[s] = o
	} else {
		s = uint32(len(l.slots))
		l.slots = append(l.slots, o)
	}
	o.slot = s
	o.armed = true
	o.cancel = false
	l.inflight++
	return uint64(s) + 1
}

func (l *loop) freeSlot(o *op) {
	l.slots[o.slot] = nil
	l.free = append(l.free, o.slot)
	o.armed = false
	l.inflight--
}

// arm preps the SQE for o. An op whose deadline already passed, or whose fd
// is closing, completes at once with ECANCELED instead.
func (l *loop) arm(o *op) {
	if o.armed {
		return
	}
	if (o.expired != nil && o.expired.Load()) || (o.nfd != nil && o.nfd.closing.Load()) || l.stopping && o.kind != opWake {
		// Completed as if its CQE said ECANCELED, so that its owner
		// learns it (a callback conn's send while the loop stops: before,
		// nothing ran and the conn was never closed, left in CLOSE_WAIT).
		o.res, o.flags = -int32(syscall.ECANCELED), 0
		switch o.kind {
		case opAcceptCB, opTimer:
			// stopServe ends these; re-arming here would recurse.
		default:
			l.complete(o)
		}
		return
	}
	sqe := l.getSQE()
	sqe.UserData = l.takeSlot(o)
	switch o.kind {
	case opWake:
		sqe.PrepRead(o.fd, o.buf, ^uint64(0))
	case opPollIn:
		sqe.PrepPollAdd(o.fd, unix.POLLIN|unix.POLLRDHUP, !l.rt.cfg.DisableMultishot)
	case opPollOut:
		sqe.PrepPollAdd(o.fd, unix.POLLOUT, false)
	case opRecv, opCBRecv:
		l.prepRecv(sqe, o)
	case opSend, opCBSend:
		if o.cc != nil && o.cc.sendsMsg() {
			sqe.PrepSendmsg(o.fd, unsafe.Pointer(&o.cc.sendMsg), unix.MSG_NOSIGNAL)
		} else {
			sqe.PrepSend(o.fd, o.buf, unix.MSG_NOSIGNAL)
		}
	case opAcceptCB:
		if l.rt.cfg.DisableMultishot {
			sqe.PrepAccept(o.fd, nil, nil, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		} else {
			sqe.PrepAcceptMultishot(o.fd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		}
	case opTimer:
		sqe.PrepTimeout(&o.ts, 0, false)
	case opUDPRecv:
		o.ur.prep(sqe)
	}
	sqe.Flags |= o.sqeFlags
	if o.nfd != nil {
		o.nfd.ops = append(o.nfd.ops, o)
	}
	if o.cc != nil {
		o.cc.armed++
	}
	if o.kind == opPollIn || o.kind == opPollOut {
		l.stats.pollArms.Add(1)
		l.polls++
	}
}

func (l *loop) prepRecv(sqe *netpoll.SQE, o *op) {
	if o.kind == opCBRecv && l.bufRing != nil {
		if l.rt.cfg.DisableMultishot {
			sqe.PrepRecvSelect(o.fd, l.bufRing.Group(), 0)
		} else {
			sqe.PrepRecvMultishot(o.fd, l.bufRing.Group(), 0)
			if l.rt.recvLimitOn() {
				sqe.SetRecvLimit(recvLimit) // budget.go: bounds a pause's overshoot
			}
		}
		return
	}
	sqe.PrepRecv(o.fd, o.buf, 0)
}

// udCancelOp marks the user data of a cancel SQE: | slot+1 of the target
// op. A cancel that succeeds posts no CQE (CQE_SKIP_SUCCESS); one that
// fails says which op it was for, so that the loop sends it again while
// the target survives it: an IOSQE_ASYNC recv caught moving from io-wq to
// its internal poll is found by neither (ENOENT) or is running (EALREADY),
// and without a second cancel it would wait for data forever. Cancels are
// always by user data: the kernel finds a poll by a hash of it, where a
// cancel by fd walks every armed poll of the ring (closing N connections
// at once then costs N squared).
const udCancelOp = 1 << 62

func (l *loop) cancelOp(o *op) {
	if !o.armed || o.cancel {
		return
	}
	o.cancel = true
	l.sendCancel(o)
}

func (l *loop) sendCancel(o *op) {
	sqe := l.getSQE()
	sqe.PrepCancel(uint64(o.slot) + 1)
	sqe.UserData = udCancelOp | (uint64(o.slot) + 1)
	sqe.Flags |= netpoll.SQECQESkipSuccess
}

// cancelDone handles the CQE of a cancel that failed (found nothing, or
// found the op running). If the target is still in flight and still meant
// to be cancelled, the cancel is sent again (on the loop's next pass, so a
// target that is busy gets time to reach a cancellable state).
func (l *loop) cancelDone(ud uint64) {
	slot := ud&^udCancelOp - 1
	if slot < uint64(len(l.slots)) {
		if o := l.slots[slot]; o != nil && o.armed && o.cancel {
			l.recancel = append(l.recancel, o)
		}
	}
}

// cancelRetryGap spaces resent cancels: a target running in io-wq answers
// EALREADY at once, and resending on every pass would spin the loop against
// the worker it waits for.
const cancelRetryGap = 50 * time.Microsecond

// resendCancels sends again the cancels that failed, at most once per
// cancelRetryGap (the loop's wait is shortened to that while some are due).
func (l *loop) resendCancels() {
	if len(l.recancel) == 0 || time.Since(l.lastResend) < cancelRetryGap {
		return
	}
	l.lastResend = time.Now()
	// Take the list first: sending can reap (getSQE on a full SQ), and
	// a cancel failing then is queued for the next round, not dropped.
	ops := l.recancel
	l.recancel = nil
	for _, o := range ops {
		if o.armed && o.cancel {
			l.sendCancel(o)
		}
	}
}

// reap consumes every ready CQE and completes its op; the goroutines these
// completions release are collected for flushWakes.
func (l *loop) reap() int {
	total := 0
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
			c := &l.cqes[i]
			if c.UserData == 0 {
				continue // cancel-all's failure at teardown: nothing to do
			}
			if c.UserData&udCancelOp != 0 {
				l.cancelDone(c.UserData)
				continue
			}
			o := l.slots[c.UserData-1]
			if o == nil {
				continue
			}
			o.res, o.flags = c.Res, c.Flags
			if c.Flags&netpoll.CQEFMore == 0 {
				if o.kind == opPollIn || o.kind == opPollOut {
					l.polls--
				}
				l.freeSlot(o)
				if o.cc != nil {
					o.cc.armed--
				}
				if nfd := o.nfd; nfd != nil {
					nfd.dropOp(o)
					l.complete(o)
					if nfd.closeQueued && len(nfd.ops) == 0 {
						l.closing--
						nfd.finalClose()
					}
					continue
				}
			}
			l.complete(o)
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

// complete runs one completion on the loop.
func (l *loop) complete(o *op) {
	switch o.kind {
	case opWake:
		if !l.stopping {
			l.arm(o)
		}
	case opPollIn:
		if o.res > 0 && o.res&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) != 0 {
			o.nfd.rdHup.Store(true)
		}
		if o.res >= 0 || !o.armed {
			l.wakes = append(l.wakes, &o.nfd.rd)
			if o.res > 0 && o.res&(unix.POLLERR|unix.POLLHUP) != 0 {
				l.wakes = append(l.wakes, &o.nfd.wr)
			}
		}
		if !o.armed {
			// Single-shot, or a multishot the kernel ended: the next reader
			// that finds EAGAIN re-arms it (rearmPollIn). Re-arming here
			// would fire again at once on a socket readable but unread (a
			// pending connection, bytes or a FIN nobody reads): a busy loop.
			o.nfd.pollInIdle.Store(true)
		}
	case opPollOut:
		l.wakes = append(l.wakes, &o.nfd.wr)
	case opRecv, opSend:
		l.finish(o)
	case opCBRecv:
		o.cc.onRecv(o)
	case opCBSend:
		o.cc.onSend(o)
	case opAcceptCB:
		o.ln.onAccept(l, o)
	case opTimer:
		o.ln.onTimer(l, o)
	case opUDPRecv:
		o.ur.onCQE(l, o)
	}
}

// finish queues the owner of a one-shot op for waking.
func (l *loop) finish(o *op) {
	if o.done != nil {
		l.opWakes = append(l.opWakes, o)
	}
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

// closeFD cancels every op on nfd, each by its user data, and closes the
// fd once their CQEs are in (reap does it when the last one comes).
func (l *loop) closeFD(nfd *netFD) {
	if nfd.closeQueued {
		return
	}
	if len(nfd.ops) > 0 {
		nfd.closeQueued = true
		l.closing++
		for _, o := range nfd.ops {
			l.cancelOp(o)
		}
		return
	}
	nfd.finalClose()
}

// stop begins teardown: cancel every op; run exits once they completed.
func (l *loop) stop() {
	if l.stopping {
		return
	}
	l.stopping = true
	for cc := range l.cbConns {
		cc.closeOnLoop(errRuntimeClosed)
	}
	for _, ln := range l.serving {
		l.stopServe(ln)
	}
	sqe := l.getSQE()
	sqe.PrepCancelAll()
	sqe.Flags |= netpoll.SQECQESkipSuccess
}

func (l *loop) teardown() {
	if l.bufRing != nil {
		l.bufRing.Close()
	}
	l.ring.Close()
	unix.Close(l.efd)
}
