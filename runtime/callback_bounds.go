package uringrt

import (
	"io"

	"golang.org/x/sys/unix"
)

// The bounds a callback connection cannot escape, whatever its peer and
// its handler do:
//
//   - Config.MaxBufferedBytes caps the output queued by all connections
//     together, for every write path: a write that would take the
//     runtime's queued (and posted) bytes past it is refused with
//     ErrWriteBufferFull, and a connection refused in its own callback
//     stops reading (its requests make the output). OnDrained for such a
//     refusal, and the connection's reading again, wait until the
//     runtime's queues are under half the cap (waitBudget), so a handler
//     that retries on OnDrained does not spin while others hold the
//     budget.
//   - Config.CloseTimeout bounds a graceful close: past it the connection
//     is reset and its output freed (checkClose).
//   - A connection cut for a timeout (read, write, close) is reset
//     (SO_LINGER 0 before its close(2)), so its peer reads an error, not
//     an orderly end that would pass a truncated stream for a whole one.
//   - A write timeout measures the peer's progress: a send that stays in
//     flight while the peer reads (the socket reports room only once a
//     third of its buffer is free, which takes seconds for a slow reader
//     of a large buffer) is not a stall; the kernel's send queue
//     (SIOCOUTQ: bytes not yet acknowledged by the peer) shrinking is
//     progress (peerTook).

// ErrCloseTimeout is the error OnClose gets when a graceful close did not
// send the connection's queued output within Config.CloseTimeout (the peer
// does not read): the output was dropped and the connection reset. It
// wraps os.ErrDeadlineExceeded (errors.Is) and has Timeout() true.
var ErrCloseTimeout error = &cbTimeoutError{"uringrt: close timeout: queued output not sent within Config.CloseTimeout; connection reset"}

// write caps (uringrt_write_refusals_total{kind="conn"|"runtime"}).
const (
	capConn    = 0 // the connection's queue would pass MaxWriteBuffer
	capRuntime = 1 // all queues would pass MaxBufferedBytes
)

// timeouts that cut a connection off
// (uringrt_connections_timed_out_total{kind="read"|"write"|"close"}).
const (
	timedOutRead  = 0 // SetReadTimeout
	timedOutWrite = 1 // SetWriteTimeout
	timedOutClose = 2 // Config.CloseTimeout
)

// budgetWrite reports whether a write of n bytes in a connection's own
// callback fits under MaxBufferedBytes, and whether it reserved them (as
// posted bytes, which the caller gives back with budgetWriteDone once the
// bytes are queued). A write up to a big chunk is checked but not
// reserved, keeping the hot path at two loads: the loops writing at once
// may then pass the cap by one such write each. A bigger one is reserved
// first, so no two writes pass the cap together.
func (rt *Runtime) budgetWrite(n int64) (ok, reserved bool) {
	max := rt.cfg.MaxBufferedBytes
	if max <= 0 {
		return true, false
	}
	if n <= outBigChunk {
		return rt.budget.held.Load()+rt.budget.posted.Load()+n <= max, false
	}
	if rt.budget.posted.Add(n)+rt.budget.held.Load() > max {
		rt.budget.posted.Add(-n)
		return false, false
	}
	return true, true
}

func (rt *Runtime) budgetWriteDone(n int64) { rt.budget.posted.Add(-n) }

// refusedByRuntime records a write to c refused for MaxBufferedBytes (any
// goroutine): OnDrained, if awaited, waits for the runtime to drain.
func (c *CallbackConn) refusedByRuntime() {
	c.rtRefused.Store(true)
	c.l.budget.refused[capRuntime].Add(1)
}

// budgetRefused stops reading c, whose own callback was refused a write
// for MaxBufferedBytes, until the runtime's queues drain under half the
// cap (loop only, after the callback).
func (c *CallbackConn) budgetRefused() {
	if c.closing {
		return
	}
	c.pauseRead(pauseRuntime)
	c.l.budget.over = true // budgetCheck: the largest queues stop too
	c.l.waitBudget(c)
}

// waitBudget puts c among the loop's connections waiting for the
// runtime's queues to fall under half of MaxBufferedBytes (loop only).
// The flag is set before the budget is read again, and budgetAdd reads
// the flag after it lowered the budget: a drain between the two is seen
// by one side or the other.
func (l *loop) waitBudget(c *CallbackConn) {
	if !c.rtWait {
		c.rtWait = true
		l.budget.waiters = append(l.budget.waiters, c)
	}
	if !l.budget.waiting.Swap(true) {
		l.rt.budget.waitLoops.Add(1)
	}
	if !l.rt.overSoftBudget() {
		l.rt.wakeBudgetWaiters()
	}
}

// wakeBudgetWaiters asks every loop with waiting connections to let them
// go (any goroutine; once per wait).
func (rt *Runtime) wakeBudgetWaiters() {
	for _, l := range rt.loops {
		if l.budget.waiting.CompareAndSwap(true, false) {
			rt.budget.waitLoops.Add(-1)
			l.post(request{kind: reqFunc, fn: l.budgetDrained})
		}
	}
}

// budgetDrained lets the waiting connections read again and calls their
// OnDrained, once the runtime is under half its cap (loop only).
func (l *loop) budgetDrained() {
	ws := l.budget.waiters
	l.budget.waiters = nil
	for _, c := range ws {
		c.rtWait = false
	}
	if l.rt.overSoftBudget() { // over again: wait on
		for _, c := range ws {
			if !c.finalized {
				l.waitBudget(c)
			}
		}
		return
	}
	for _, c := range ws {
		if c.finalized || c.closing {
			continue
		}
		c.rtRefused.Store(false)
		c.maybeResume()
		c.checkDrain()
	}
}

// unwaitBudget takes a finalized c off the loop's waiting connections.
func (l *loop) unwaitBudget(c *CallbackConn) {
	if !c.rtWait {
		return
	}
	c.rtWait = false
	ws := l.budget.waiters
	for i, w := range ws {
		if w == c {
			last := len(ws) - 1
			ws[i] = ws[last]
			ws[last] = nil
			l.budget.waiters = ws[:last]
			return
		}
	}
}

// cutOff closes c for a timeout of kind (loop only): the connection is
// reset, its queued output dropped, and OnClose gets err, whether c was
// open or in a graceful close.
func (c *CallbackConn) cutOff(err error, kind int) {
	if c.finalized || c.closing && !c.sendsAtClose() {
		return // already failing
	}
	c.l.budget.timedOut[kind].Add(1)
	c.resetAtClose()
	if c.lingering {
		c.endLinger() // its recv's cancel brings the close (maybeFinalize)
	}
	if !c.closing {
		c.closeOnLoop(err)
		return
	}
	c.closeErr = err // (sendsAtClose is false now: no timer of c is kept)
	c.endTimers()
	if c.tm != nil {
		c.tm.wrT.Stop()
		c.tm.clT.Stop()
	}
	c.outq.discard(c.l, c.sending())
	c.cancelSend()
	c.maybeFinalize()
}

// resetAtClose makes c's close(2) reset the connection (SO_LINGER on, 0
// seconds): the peer gets a RST, its reads fail with ECONNRESET, and what
// the kernel still held to send is dropped with the socket.
func (c *CallbackConn) resetAtClose() {
	unix.SetsockoptLinger(c.fd.fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
}

// armCloseTimer bounds the graceful close just begun by CloseTimeout, if
// it waits for output to be sent (loop only).
func (c *CallbackConn) armCloseTimer() {
	d := c.l.rt.cfg.CloseTimeout
	if d < 0 || c.finalized || !c.sendsAtClose() || c.outq.n == 0 && c.pendingWrites.Load() == 0 {
		return
	}
	tm := c.timers()
	if tm.clT != nil {
		return
	}
	t := &LoopTimer{c: c, check: (*CallbackConn).checkClose}
	tm.clT = t
	c.l.addTimer(t, int64(d))
}

// checkClose cuts c off when its graceful close is still sending at
// CloseTimeout.
func (c *CallbackConn) checkClose(int64) {
	if c.closing && c.sendsAtClose() {
		c.cutOff(ErrCloseTimeout, timedOutClose)
	}
}

// dropCloseTimer takes c's close timer out of the loop's heap at its
// finalize, so that the timer does not keep c reachable until it was due.
func (c *CallbackConn) dropCloseTimer() {
	if c.tm == nil || c.tm.clT == nil {
		return
	}
	t := c.tm.clT
	c.tm.clT = nil
	c.l.cancelTimer(t)
}

// peerTook reports whether the kernel's send queue of c (bytes written
// and not yet acknowledged by the peer, SIOCOUTQ) changed since the last
// look: the peer is taking bytes although no send completed (loop only).
func (c *CallbackConn) peerTook() bool {
	q, err := unix.IoctlGetInt(c.fd.fd, unix.SIOCOUTQ)
	if err != nil {
		return false
	}
	changed := q != c.tm.sentQ
	c.tm.sentQ = q
	return changed
}

// gracefulErr reports whether a close with err sends the queued output.
func gracefulErr(err error) bool { return err == nil || err == io.EOF }
