package uringrt

import (
	"io"
	"runtime"
)

// Direct sends: a write from off the loop (a worker goroutine answering a
// request, an AsyncWrite) to a connection with nothing queued, posted or in
// flight, whose loop is parked, is tried first with one nonblocking
// send(2) from the writing goroutine (the nonblock-try-first rule of the
// net.Conn path), and only what the socket did not take goes through the
// loop. With GOMAXPROCS > 1 only: with one P the writer and the parked
// loop share it, the loop's wake-up is no hand-off between CPUs, and it
// sends the writes of a whole batch in one submission where direct sends
// would make a system call each. A post would cost a copy, the queue lock, an eventfd write to wake
// the parked loop, the loop's wake-up in Go's scheduler (on another CPU
// when the writer runs on another P) and a send SQE and its CQE; the direct
// send costs one system call. A loop that is awake takes posted writes in
// its next batch, so they are posted as before.
//
// The socket's send side has one owner at a time, c.dsend:
//
//	dsFree    the loop owns it (queued output, a send in flight, or nothing)
//	dsSending a writer holds it for one nonblocking send(2): the loop arms
//	          no send of c and does not close c's fd until it is given back
//	dsRest    the writer's unsent rest is posted (reqCBFront): the loop
//	          puts it in front of what was queued meanwhile, then takes the
//	          token back
//
// A writer takes the token (dsFree -> dsSending) and then checks that the
// loop has nothing of c: no AsyncWrite posted or on its way (posted holds
// the writer's own reservation only, pendingWrites 0), nothing queued
// (queued 0: the loop publishes queued before it adds to the output queue,
// and keeps it above 0 while a send is in flight) and no close begun
// (wrClosed). The loop publishes each of these before it looks at the
// token, and the writer takes the token before it reads them (Go's atomics
// are sequentially consistent), so of a writer and the loop at least one
// sees the other: either the writer finds the loop's bytes and posts, or
// the loop finds the token and waits for the send (flushCB, maybeFinalize)
// before arming its own send or closing the fd, and bytes the loop queued
// meanwhile (a callback's writes, other AsyncWrites) go out after the
// writer's, whose rest is put in front of them. So the writer's bytes stay
// contiguous and in its order, the caps count its bytes while it holds
// them (reserved before the try, as a post reserves them) and a close
// sends them first.

// states of CallbackConn.dsend
const (
	dsFree    = iota // the loop owns the send side
	dsSending        // a writer is in a nonblocking send(2)
	dsRest           // the writer's rest is posted; the loop gives the token back
)

// sendDirect tries p, reserved by the caller (reserve), as a direct send.
// It reports false when it did not try: the caller posts p as usual. When
// it tried it has accounted for p: sent, or its rest posted in front of
// the connection's output, or (the loop exited) dropped.
func (c *CallbackConn) sendDirect(p []byte) bool {
	l := c.l
	if !l.rt.direct || c.blocking || !l.sleeping.Load() || l.rt.cfg.IdleTimeout > 0 || c.tlsSt() != nil {
		// (IdleTimeout: the idle sweep reads progress from loop-owned
		// state that a writer off the loop does not set.)
		return false
	}
	if !c.dsend.CompareAndSwap(dsFree, dsSending) {
		return false
	}
	n := int64(len(p))
	if c.pendingWrites.Load() != 0 || c.posted.Load() != n || c.queued.Load() != 0 || c.wrClosed.Load() {
		c.dsend.Store(dsFree)
		return false
	}
	m, errno := rawSend(c.fd.fd, p)
	if errno != 0 {
		// EAGAIN (the socket is full), or an error that the loop's send
		// will meet and report as it does for any write: all of p goes
		// through the loop.
		m = 0
	}
	if m > 0 {
		l.stats.writtenBytes.Add(uint64(m))
		c.unpost(int64(m))
	}
	if m == len(p) {
		c.dsend.Store(dsFree)
		l.stats.directSent.Add(1)
		return true
	}
	l.stats.directRest.Add(1)
	rest := append([]byte(nil), p[m:]...)
	l.mu.Lock()
	if l.exited {
		l.mu.Unlock()
		c.unpost(int64(len(rest)))
		c.dsend.Store(dsFree)
		return true // the runtime closed: queued output is dropped as well
	}
	c.pendingWrites.Add(1)
	l.queue = append(l.queue, request{kind: reqCBFront, cc: c, data: rest})
	c.dsend.Store(dsRest) // under mu: the request is in the queue
	l.mu.Unlock()
	l.wake()
	return true
}

// queueFront takes a direct send's rest (loop only): it goes before the
// bytes queued while the writer held the send side (no send of c was
// armed since the writer found the queue empty), then the loop owns the
// send side again.
func (c *CallbackConn) queueFront(p []byte) {
	if !(c.finalized || c.closing && c.closeErr != nil && c.closeErr != io.EOF) {
		c.outq.writeFront(c.l, p)
	}
	c.dsend.Store(dsFree)
	c.queued.Store(int64(c.outq.n))
	c.unpost(int64(len(p)))
	c.pendingWrites.Add(-1)
	c.markDirty()
	c.afterQueue()
	c.noteDrainMark()
	if c.closing {
		c.maybeFinalize()
	}
}

// directWait waits out a writer's send(2) on c (loop only: before the
// loop arms a send of c or closes its fd; one nonblocking system call) and
// returns the token's state after it: dsRest while the writer's rest is on
// its way to the loop (queueFront marks c dirty when it comes).
func (c *CallbackConn) directWait() int32 {
	for {
		if s := c.dsend.Load(); s != dsSending {
			return s
		}
		runtime.Gosched() // the writer may wait for this P
	}
}

// writeFront copies p in front of the queued bytes (no send in flight:
// head is 0).
func (q *outQueue) writeFront(l *loop, p []byte) {
	if len(q.chunks) == 0 {
		q.write(l, p)
		return
	}
	rest, n := q.chunks, q.n
	q.chunks, q.n = nil, 0
	q.write(l, p)
	q.chunks = append(q.chunks, rest...)
	q.n += n
}
