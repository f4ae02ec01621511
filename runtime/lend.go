package uringrt

import "unsafe"

// Buffer lending: the callback API's zero-copy echo path.
//
// OnData's data lies in provided buffers of the loop's buffer ring. When
// the handler passes (part of) it to the same connection's WriteNoCopy
// (a write to another connection takes the loop's request queue, which
// copies: callback_state.go), the queued chunk can point at those buffers
// instead of a copy
// in a pooled chunk: the buffers are then not recycled after OnData but
// when the chunk has been sent (or dropped, the connection failing), and
// the send SQE reads the ring's memory. For a stream echo that removes the
// one copy in user space (a 64 KiB message is 64 KiB of memmove per echo).
// It is a separate method, not Write, because the handler must then leave
// those bytes alone for the rest of OnData, which Write does not ask.
//
// Limits: only runs of at least lendMin bytes are lent (below it a copy is
// cheaper than holding a buffer); each run at most once; and at most a
// quarter of the ring's buffers are lent at a time, so connections whose
// peers read slowly cannot starve the others' recvs (past it,
// WriteNoCopy copies). Lent bytes count in the connection's queued bytes
// (MaxWriteBuffer backpressure) but not in the memory budget: the ring's
// memory is allocated once. Config.DisableBufferLending turns it off.

// lendMin is the smallest WriteNoCopy lent instead of copied (bytes).
const lendMin = 2 << 10

// lendable is the run of buffers OnData is being called with (loop-owned).
type lendable struct {
	data   []byte // the run's bytes, as passed to OnData
	stream []byte // the stream-mode recv buffer data lies in, or nil (ring buffers)
	first  uint16 // its first buffer id
	n      uint16 // its buffer count
	taken  bool   // a WriteNoCopy lent it: do not recycle after OnData
}

// offer makes buffers first..first+n-1, holding data, lendable during the
// OnData call that follows (close it with endOffer).
func (l *loop) offer(data []byte, first, n uint16) {
	l.lend = lendable{data: data, first: first, n: n}
}

// endOffer closes the offer and reports whether the buffers were lent
// (so the caller must not recycle them).
func (l *loop) endOffer() bool {
	taken := l.lend.taken
	l.lend = lendable{}
	return taken
}

// tryLend queues p on c without a copy when p lies in the run on offer
// (see offer) and the limits allow; it reports whether it did.
func (c *CallbackConn) tryLend(p []byte) bool {
	l := c.l
	if s := l.lend.stream; s != nil {
		// A stream-mode recv buffer (callback_stream.go): its connection
		// reads into a fresh one next.
		if len(p) < lendMin || l.lend.taken || !within(p, l.lend.data) {
			return false
		}
		l.lend.taken = true
		l.stats.lentBufs.Add(1)
		c.outq.lendStream(l, p, s)
		if len(c.stream) > 0 && &c.stream[0] == &s[0] {
			// The queue owns it from now on: a close before OnData
			// returns (a panic, Close while the loop stops) must not
			// give it back a second time as c's recv buffer.
			c.stream = nil
		}
		return true
	}
	// p in l's ring at all (ringMem is set once at start): a Write of
	// another loop's data is refused before l.lend, which only l's
	// goroutine touches, is read.
	if len(p) < lendMin || !within(p, l.ringMem) {
		return false
	}
	o := &l.lend
	if o.data == nil || o.taken || l.lentBufs+int(o.n) > l.lendCap || !within(p, o.data) {
		return false
	}
	o.taken = true
	l.lentBufs += int(o.n)
	l.stats.lentBufs.Add(uint64(o.n))
	c.outq.lend(l, p, o.first, o.n)
	return true
}

// within reports whether p lies inside s.
func within(p, s []byte) bool {
	if len(s) == 0 {
		return false
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	ptr := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
	return ptr >= base && ptr+uintptr(len(p)) <= base+uintptr(len(s))
}

// returnLent recycles lent buffers first..first+n-1 to the ring and
// publishes them at once (the caller may be outside a reap, whose end
// commits).
func (l *loop) returnLent(first, n uint16) {
	for i := range int(n) {
		l.bufRing.Recycle(first + uint16(i))
	}
	l.bufRing.Commit()
	l.lentBufs -= int(n)
}
