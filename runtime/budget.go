package uringrt

import (
	"io"
	"slices"
	"sync/atomic"
)

// The memory budget of the callback API.
//
// Per connection: Config.MaxWriteBuffer caps its queued output (writes
// past it fail with ErrWriteBufferFull). A queue over the pause mark
// (half the cap, at most 64 KiB) stops its connection's reads (the
// multishot recv is cancelled and not re-armed) until the queue has
// drained below half the mark; each recv arm is limited to the room left
// under the cap, so an echo's writes never pass it. Per runtime: Config.MaxBufferedBytes caps the chunk bytes all
// queues hold together. Over half of it, each loop stops reading from its
// connections with queued output, largest queue first, until the chunk
// bytes of the connections it still reads from are under its share of half
// the cap, so connections with small queues keep being served; over the
// cap itself it stops reading from every connection with queued output. A
// connection stopped this way reads again once its queue has drained below
// half the pause mark and the runtime is back under half the cap, or once
// its queue is empty. Every stop is counted in
// uringrt_read_pauses_total{loop,kind="conn"|"runtime"}; the bytes held
// are uringrt_output_buffered_bytes. docs/RELIABILITY.md states the worst
// case per connection. Writes past MaxBufferedBytes are refused, whatever
// path they take (callback_bounds.go). A MayBlocker connection also stops
// reading while more than blockInMax bytes it received wait for its worker.

// pause reasons, the label values of uringrt_read_pauses_total.
const (
	pauseConn    = 0 // the connection's queue passed MaxWriteBuffer
	pauseRuntime = 1 // the runtime's queues passed MaxBufferedBytes
)

var pauseReasons = [...]string{"conn", "runtime"}

// rtBudget is the runtime's share of the budget.
type rtBudget struct {
	held        atomic.Int64 // chunk bytes held by all callback queues
	posted      atomic.Int64 // bytes of writes posted to loops, not yet queued (callback_write.go)
	noRecvLimit atomic.Bool  // the kernel refused the multishot recv byte limit
	waitLoops   atomic.Int32 // loops with connections waiting for a drain (callback_bounds.go)
}

// recvLimit is the most bytes one arm of a callback connection's multishot
// recv receives (IORING_RECV_MSHOT_LIM, 6.17+); the loop re-arms it after.
// A pause cancels the recv, but what the kernel received before the cancel
// landed is still delivered: this bounds that overshoot per pause. Without
// the kernel feature, the overshoot is bounded by the socket's receive
// queue instead (docs/RELIABILITY.md).
const recvLimit = 64 << 10

func (rt *Runtime) recvLimitOn() bool { return !rt.budget.noRecvLimit.Load() }

// recvLimitFailed turns the multishot byte limit off after an EINVAL from a
// kernel without it; it reports whether the limit was on (so the EINVAL
// was the limit's).
func (rt *Runtime) recvLimitFailed() bool {
	if rt.budget.noRecvLimit.Swap(true) {
		return false
	}
	rt.logger.Debug("multishot recv byte limit unsupported (Linux 6.17+); pauses may overshoot by a socket receive queue")
	return true
}

// loopBudget is a loop's share (the counters are read at scrape time).
type loopBudget struct {
	held    atomic.Int64     // chunk bytes held by this loop's queues
	flushes uint32           // loop-owned: flushCB calls (one per iteration)
	pauses  [2]atomic.Uint64 // by reason
	over    bool             // loop-owned: a queue grew while the runtime was over the cap

	refused  [2]atomic.Uint64 // writes refused with ErrWriteBufferFull, by cap (callback_bounds.go)
	timedOut [3]atomic.Uint64 // connections cut off by a timeout: read, write, close
	waiting  atomic.Bool      // waiters is not empty (counted in rtBudget.waitLoops)
	waiters  []*CallbackConn  // loop-owned: refused for MaxBufferedBytes, waiting for its drain
}

// budgetAdd accounts d bytes of chunk capacity taken (d > 0) or returned.
func (l *loop) budgetAdd(d int) {
	l.budget.held.Add(int64(d))
	n := l.rt.budget.held.Add(int64(d))
	if d < 0 && l.rt.budget.waitLoops.Load() != 0 && n <= l.rt.cfg.MaxBufferedBytes/2 {
		l.rt.wakeBudgetWaiters() // callback_bounds.go
	}
}

// overBudget reports whether the runtime's queues hold more than
// MaxBufferedBytes (never, when the cap is off).
func (rt *Runtime) overBudget() bool {
	max := rt.cfg.MaxBufferedBytes
	return max > 0 && rt.budget.held.Load() > max
}

// overSoftBudget reports whether the runtime's queues hold more than half
// of MaxBufferedBytes: the zone where the largest queues stop first.
func (rt *Runtime) overSoftBudget() bool {
	max := rt.cfg.MaxBufferedBytes
	return max > 0 && rt.budget.held.Load() > max/2
}

// afterQueue applies the caps after bytes were queued on c (loop only).
func (c *CallbackConn) afterQueue() {
	if c.closing {
		return
	}
	if !c.paused && c.outq.n > c.pauseMark() {
		c.pauseRead(pauseConn)
	}
	switch {
	case c.l.rt.overBudget():
		// Over the cap itself: this queue stops growing now, not at the
		// loop's next check (one reap can run long).
		c.pauseRead(pauseRuntime)
		c.l.budget.over = true
	case c.l.rt.overSoftBudget():
		c.l.budget.over = true
	}
}

// readPauseMax is the most output a connection whose peer is not keeping
// up (stalled) may have queued and still be read (bytes), whatever
// MaxWriteBuffer: a peer that sends and does not read then costs the
// server about this plus one recv arm, as a net.Conn server's copy buffer
// does, not MaxWriteBuffer.
const readPauseMax = 32 << 10

// stalled reports that c's peer is not taking the bytes as fast as they
// come: the socket's send buffer is full (the last send was short), or a
// send is still in flight after a whole loop iteration (a flush and a
// wait). A peer that reads has each send complete, whole, by the next
// reap.
func (c *CallbackConn) stalled() bool {
	return c.sendShort || c.sending() && c.l.budget.flushes != c.sendSince
}

// pauseMark is the queued output (bytes) over which c stops reading: half
// of MaxWriteBuffer, and at most readPauseMax once its peer stalls, so
// that what a paused recv still delivers fits under MaxWriteBuffer
// (recvRoom) and a slow reader holds little.
func (c *CallbackConn) pauseMark() int {
	mark := c.l.rt.cfg.MaxWriteBuffer / 2
	if c.stalled() {
		mark = min(mark, readPauseMax)
	}
	return mark
}

// blockInMax is the most received input (bytes) a MayBlocker
// connection may have waiting for its worker: past it the connection
// stops reading until the handler has taken all but half of it. Its
// OnData calls run on the worker with copies of what the loop read, and
// a handler that blocks while its peer keeps sending would otherwise have
// the loop read and copy everything the peer sends.
const blockInMax = 256 << 10

// noteBlockedInput counts n bytes handed to c's worker (loop only) and
// stops reading c past blockInMax.
func (c *CallbackConn) noteBlockedInput(n int) {
	if c.inQueued.Add(int64(n)) > blockInMax && !c.closing {
		c.pauseRead(pauseConn)
	}
}

// blockedInputDone counts n bytes the worker handled (any goroutine); the
// one call that takes the backlog to half of blockInMax or below asks the
// loop to read c again.
func (c *CallbackConn) blockedInputDone(n int) {
	if left := c.inQueued.Add(-int64(n)); left <= blockInMax/2 && left+int64(n) > blockInMax/2 {
		c.l.post(request{kind: reqFunc, fn: c.maybeResume})
	}
}

// resumeMark is the queued output under which a paused c reads again.
func (c *CallbackConn) resumeMark() int {
	return min(c.l.rt.cfg.MaxWriteBuffer/4, readPauseMax/2)
}

// recvRoom is the byte limit of c's next multishot recv arm: recvLimit,
// or less when c's queue leaves less room under MaxWriteBuffer (so a
// handler writing what it reads, an echo or a proxy, is paused before its
// writes could pass the cap and fail) or, once its peer stalls, under the
// pause mark (so a slow reader's arm overshoots little).
func (c *CallbackConn) recvRoom() uint32 {
	// Less one buffer: the recv that reaches the limit may fill its
	// buffer past it.
	buf := int(c.l.bufRing.Size())
	queued := c.outq.n + int(c.posted.Load())
	room := c.l.rt.cfg.MaxWriteBuffer - queued - buf
	if c.stalled() {
		room = min(room, readPauseMax-queued)
	}
	return uint32(max(min(room, recvLimit), 1<<10))
}

// pauseRead stops reading c: its recv is cancelled and not re-armed.
// Completions the kernel already posted are still delivered (dropping them
// would lose bytes): that is the overshoot docs/RELIABILITY.md bounds.
func (c *CallbackConn) pauseRead(reason int) {
	if c.paused {
		return
	}
	c.paused = true
	c.l.budget.pauses[reason].Add(1)
	if c.recvOp.armed {
		c.l.cancelOp(&c.recvOp)
		// Submit the cancel now: the loop may still be reaping, and a
		// multishot recv delivers until its cancel reaches the kernel.
		if _, err := c.l.ring.Submit(); err != nil {
			c.l.enterError(err)
		}
	}
}

// maybeResume re-arms c's recv when its queue has drained enough (loop
// only; called after each send completion).
func (c *CallbackConn) maybeResume() {
	if !c.paused || c.closing || c.outq.n >= c.resumeMark() || c.inQueued.Load() > blockInMax/2 {
		return
	}
	if c.l.rt.overSoftBudget() {
		if c.outq.n > 0 {
			return // the runtime is still over: wait until this queue is empty
		}
		if c.rtRefused.Load() {
			c.l.waitBudget(c) // refused for the runtime cap: wait for its drain (callback_bounds.go)
			return
		}
	}
	c.paused = false
	if !c.recvOp.armed && !c.readDone() && !c.rdPaused.Load() {
		c.l.arm(&c.recvOp)
	}
}

// budgetCheck runs once per loop iteration, before the loop flushes its
// queues: when a queue grew while the runtime was over MaxBufferedBytes,
// stop reading from this loop's largest queues.
func (l *loop) budgetCheck() {
	if !l.budget.over {
		return
	}
	l.budget.over = false
	rt := l.rt
	if !rt.overSoftBudget() {
		return
	}
	var reading []*CallbackConn
	total := 0
	for c := range l.cbConns {
		if !c.paused && !c.closing && c.outq.held > 0 {
			reading = append(reading, c)
			total += c.outq.held
		}
	}
	share := int(rt.cfg.MaxBufferedBytes / int64(2*len(rt.loops)))
	if rt.overBudget() {
		share = 0 // over the cap itself: every queue stops growing
	}
	slices.SortFunc(reading, func(a, b *CallbackConn) int { return b.outq.held - a.outq.held })
	for _, c := range reading {
		if total <= share {
			break
		}
		total -= c.outq.held
		c.pauseRead(pauseRuntime)
	}
}

// readDone reports that c's peer closed its writing side, so its recv is
// not re-armed.
func (c *CallbackConn) readDone() bool { return c.rdEOF }

// failed reports that c is closing on an error: its queued output will
// never be sent.
func (c *CallbackConn) failed() bool {
	return c.closing && c.closeErr != nil && c.closeErr != io.EOF
}
