package uringrt

import "github.com/uringrt/uringrt/netpoll"

// Stream mode: a callback connection that keeps receiving large reads
// (a bulk transfer, a pipelined stream) stops taking the loop's provided
// buffers and reads with a single-shot recv into a buffer of its own,
// re-armed after each OnData, the way a goroutine-per-connection server
// reads into its one buffer; WriteNoCopy of what it read lends that buffer
// to the send (lend.go) and the next recv takes another from the loop's
// pool.
//
// Why: a multishot recv takes everything the socket holds into provided
// buffers, and the loop's ring of them (4 MiB by default) is reused in
// FIFO order, so at bulk rates each recv writes into memory the CPU cache
// no longer holds, and each send reads it back from there (in config iv of
// ../shared/bench, 64 KiB messages, the kernel's copies cost 1.7x per byte
// what they cost Go's net; BENCHMARKS.md). A 32 KiB buffer per streaming
// connection, taken most recently used first, stays in cache.
//
// The states of a connection's recv:
//   - first recv: a new connection reads first into a stream buffer when
//     the loop has one free (a 32 KiB recv, as a goroutine-per-connection
//     server's first read; a peer's first window is then taken at the
//     rate Go's net takes it, which is what the peer's BBR measures its
//     bandwidth from, and keeps, on loopback: BENCHMARKS.md). A read under
//     streamBig bytes gives the buffer back and moves to the multishot
//     recv; a big one stays in stream mode. With no buffer free, a probe.
//   - probe (a new connection when the loop's stream buffers are all
//     taken, or one that resumes reading after a pause): single-shot
//     recvs into one provided buffer, which hold no memory while they
//     wait. A recv under streamBig bytes (a request, a small
//     message) moves to the multishot recv; probeEnter big ones in a row
//     to stream mode, so a bulk transfer never goes through the multishot
//     recv (whose burst reads of a new connection's first window also
//     left the peer's BBR with a low bandwidth estimate, which paced every
//     later send of the peer on loopback: BENCHMARKS.md).
//   - multishot: no SQE per message. streamEnter recvs in a row of at
//     least streamBig bytes (or full provided buffers) move to stream mode
//     (the multishot recv is cancelled; its last completion re-arms).
//   - stream: streamLeave recvs in a row under streamSmall bytes (the
//     stream turned into small messages) give the buffer back to the pool
//     and move to the multishot recv. A connection whose peer does not
//     keep up with its output (budget.go's stalled) gives its buffer back
//     and moves to the multishot recv, whose arms the budget limits (one
//     whose reads paused probes again when it resumes). A connection whose stream stopped
//     keeps its buffer while idle, as a net.Conn server's copy buffer
//     does; a loop's connections hold at most streamMaxBufs of them.
//
// Without a provided buffer ring every connection reads into its own
// buffer, and none of this applies.

const (
	streamBufSize = 32 << 10 // bytes of a streaming connection's recv buffer
	streamBig     = 8 << 10  // a recv of at least this many bytes counts toward stream mode
	streamSmall   = 2 << 10  // a recv under this many bytes counts toward leaving stream mode
	streamEnter   = 4        // big multishot recvs in a row that enter stream mode
	streamLeave   = 4        // small recvs in a row that leave stream mode
	probeEnter    = 2        // big probe recvs in a row that enter stream mode
	// streamMaxBufs caps the stream buffers a loop's connections hold
	// (2 MiB, about a core's L2 cache: past it they would no longer stay
	// in cache, which is what stream mode is for); past it a connection
	// stays on the multishot recv. It also bounds what streams that
	// stopped hold while idle. A busy loop keeps every buffer it gave
	// back for reuse, so it allocates at most streamMaxBufs of them while
	// busy: lending one to a send and taking another makes no garbage.
	// The free ones are dropped once a second (noteIdle).
	streamMaxBufs = 64
	// firstMaxBufs caps the stream buffers held by first recvs still
	// waiting: connections that open and stay silent hold at most half of
	// a loop's, and the rest stay free for connections that stream.
	firstMaxBufs = streamMaxBufs / 2
)

// noteRecv moves c's recv between the states above after a completion of
// n > 0 bytes (loop only; the change takes effect at the recv's next arm).
func (c *CallbackConn) noteRecv(n int) {
	l := c.l
	if l.bufRing == nil || c.blocking || c.closing {
		return
	}
	big := n >= min(streamBig, int(l.bufRing.Size()))
	switch {
	case c.firstRecv:
		c.endFirstRecv()
		if !big {
			c.leaveStream() // a request: the multishot recv next
			return
		}
		l.stats.streamEnters.Add(1)
	case c.stream != nil:
		if n >= streamSmall {
			c.streamRun = 0
		} else if c.streamRun++; c.streamRun >= streamLeave {
			c.streamRun = 0
			c.leaveStream() // the multishot recv next
		}
	case c.probing:
		if !big {
			c.probing, c.streamRun = false, 0 // the multishot recv next
			return
		}
		if c.streamRun++; c.streamRun >= probeEnter {
			c.probing, c.streamRun = false, 0
			c.enterStream()
		}
	default:
		if !big {
			c.streamRun = 0
			return
		}
		if c.streamRun++; c.streamRun >= streamEnter {
			c.streamRun = 0
			if c.enterStream() {
				l.cancelOp(&c.recvOp) // a multishot recv: its last CQE re-arms
			}
		}
	}
}

// startRecv sets a new connection's first recv: into a stream buffer when
// the loop has one free and fewer than firstMaxBufs first recvs wait in
// theirs (held only until that recv completes, unless it was big), else a
// probe.
func (c *CallbackConn) startRecv() {
	l := c.l
	if c.blocking || l.rt.cfg.DisableMultishot {
		return
	}
	if l.streamLive < streamMaxBufs && l.firstLive < firstMaxBufs {
		c.stream, c.firstRecv = l.getStreamBuf(), true
		l.firstLive++
		return
	}
	c.probing = true
}

// endFirstRecv notes that c's first recv no longer waits (loop only).
func (c *CallbackConn) endFirstRecv() {
	if c.firstRecv {
		c.firstRecv = false
		c.l.firstLive--
	}
}

// enterStream gives c a stream buffer (loop only), unless the loop's
// stream buffers are at streamMaxBufs; it reports whether it did.
func (c *CallbackConn) enterStream() bool {
	l := c.l
	if l.streamLive >= streamMaxBufs {
		return false
	}
	c.stream = l.getStreamBuf()
	l.stats.streamEnters.Add(1)
	return true
}

// prepProbe preps a probe recv (see above): single-shot into one provided
// buffer. Not a bundle: a single-shot bundle that fills its buffers
// retries once for whatever the socket holds (Linux 6.12+), so one OnData
// could carry megabytes of a pipelining peer's input, and a connection
// resuming after a pause could overshoot the memory budget by a receive
// queue. Its length is probeRoom.
func (l *loop) prepProbe(sqe *netpoll.SQE, o *op) {
	sqe.PrepRecvSelect(o.fd, l.bufRing.Group(), 0)
	sqe.Len = uint32(o.cc.probeRoom())
}

// probeRoom is the most bytes a probe recv takes (its sqe->len, which caps
// the provided buffer it picks): the buffer, or less when c's queue leaves
// less room under MaxWriteBuffer, as streamRoom (a connection whose
// OnOpen queued a greeting, or one resuming from a pause with output still
// queued, would otherwise read a whole buffer past the cap and its echo
// would get ErrWriteBufferFull).
func (c *CallbackConn) probeRoom() int {
	return min(max(c.writeRoom(), 1<<10), int(c.l.bufRing.Size()))
}

// deliverStream is deliver of data read into c's stream buffer, which
// OnData's WriteNoCopy may lend (lend.go): the send then reads the buffer
// the kernel just filled, with no copy, and c reads into another one.
func (c *CallbackConn) deliverStream(data []byte) {
	l := c.l
	if c.blocking || l.rt.cfg.DisableBufferLending {
		c.deliver(data)
		return
	}
	l.lend = lendable{data: data, stream: c.stream}
	c.deliver(data)
	if l.endOffer() {
		// The lent buffer belongs to the queue now (tryLend let go of it);
		// at the cap, back to the multishot recv. A connection that began
		// closing in OnData takes none: it reads no more, and while a
		// peer that does not read keeps its queue from draining, a fresh
		// buffer would sit idle out of the loop's streamMaxBufs.
		c.stream = nil
		if !c.closing && l.streamLive < streamMaxBufs {
			c.stream = l.getStreamBuf()
		}
	}
}

// leaveStream gives c's stream buffer back once no recv uses it (loop
// only; c's recv is not armed: its completion is being handled, or it was
// never re-armed).
func (c *CallbackConn) leaveStream() {
	if c.recvOp.armed {
		return
	}
	c.endFirstRecv() // a first recv that ended in EOF, an error or a close, its buffer maybe lent
	if c.stream == nil {
		return
	}
	c.l.putStreamBuf(c.stream)
	c.stream = nil
}

// streamRoom is the length of c's next stream-mode recv: its whole buffer,
// or less when its queue leaves less room under MaxWriteBuffer (so an echo
// or a proxy is paused before its writes could pass the cap and fail).
// Unlike a multishot arm (recvRoom) it is not cut further while the peer
// is slow: a single-shot recv overshoots a pause by at most its buffer.
func (c *CallbackConn) streamRoom() int {
	return max(min(c.writeRoom(), len(c.stream)), 1<<10)
}

// writeRoom is how many more bytes c's output (queued, and posted by
// AsyncWrites) may take under MaxWriteBuffer; negative past it.
func (c *CallbackConn) writeRoom() int {
	return c.l.rt.cfg.MaxWriteBuffer - c.outq.n - int(c.posted.Load())
}

// getStreamBuf takes a stream buffer from the loop's pool, or a new one.
func (l *loop) getStreamBuf() []byte {
	l.streamLive++
	if n := len(l.streamBufs); n > 0 {
		b := l.streamBufs[n-1]
		l.streamBufs[n-1] = nil
		l.streamBufs = l.streamBufs[:n-1]
		return b
	}
	return make([]byte, streamBufSize)
}

// putStreamBuf returns b to the pool, the most recently used on top so
// the next taker finds it in cache.
func (l *loop) putStreamBuf(b []byte) {
	l.streamLive--
	l.streamBufs = append(l.streamBufs, b) // at most streamMaxBufs: see getStreamBuf's callers
}
