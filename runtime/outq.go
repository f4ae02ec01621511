package uringrt

import "golang.org/x/sys/unix"

// outQueue is a callback connection's queued output: a list of chunks taken
// from its loop's chunk pool. Bytes are copied in at the tail and leave from
// the head, one chunk per send SQE; a chunk is returned to the pool as soon
// as its last byte is sent, so a queue holds at most its queued bytes
// rounded up to a chunk (plus the unsent head of the chunk in flight), and
// an empty queue holds nothing, where one contiguous slice per direction
// would pin twice MaxWriteBuffer for a slow reader's whole life.
//
// A chunk may instead be lent: provided buffers that OnData received and
// handed straight to Write (lend.go), sent from the buffer ring without a
// copy and recycled to the ring when sent or dropped.
//
// Loop-owned: every method runs on the connection's loop.
type outQueue struct {
	chunks   []outChunk // chunks[0].b[head:] is the next to send; len is the filled part
	head     int        // bytes of chunks[0] already sent
	n        int        // queued bytes, including those of the send in flight
	inflight int        // bytes of chunks[0] the send in flight covers (from head)
	held     int        // bytes of chunk capacity held (accounted in the budget)
}

// outChunk is one chunk of an outQueue: pooled (lent == 0) or lent
// provided buffers first..first+lent-1 of the loop's buffer ring, whose
// b has no spare capacity (nothing is ever appended to it).
type outChunk struct {
	b     []byte
	first uint16
	lent  uint16
	sbuf  []byte // a lent stream-mode recv buffer holding b (callback_stream.go)
}

// borrowed reports whether c's bytes lie in a lent buffer (nothing is ever
// appended to it).
func (c *outChunk) borrowed() bool { return c.lent > 0 || c.sbuf != nil }

// Chunk size classes. A new chunk is the smallest class that holds the
// bytes still to copy and half the bytes already queued, so a short
// message takes a small chunk (the echo case: a few bytes queued for one
// iteration), a queue that grows takes bigger ones (a send SQE then moves
// up to outBigChunk bytes), and the capacity a queue holds stays within
// 1.5x its queued bytes plus one chunk.
var outClasses = [...]int{2 << 10, 16 << 10}

const (
	outBigChunk = 16 << 10
	// outPoolBytes caps the free chunks a loop keeps for reuse; chunks
	// released past it are dropped for the GC to reclaim.
	outPoolBytes = 2 << 20
)

// chunkPool is a loop's free chunks, by size class (loop-owned). It keeps
// up to outPoolBytes, or more while the loop's queues hold more at a
// flush (limit, which decays by an eighth per flush): many connections
// that each queue and send a recv's worth per iteration then reuse the
// same chunks instead of leaving garbage for the GC at that rate, which
// doubled a slow-reader attack's peak RSS.
type chunkPool struct {
	free  [len(outClasses)][][]byte
	bytes int // capacity held in the free lists
	limit int // the most the free lists keep now (at least outPoolBytes)
}

// chunkClass returns the index of the smallest class of at least want
// bytes (the biggest class when none is).
func chunkClass(want int) int {
	for i, c := range outClasses {
		if want <= c {
			return i
		}
	}
	return len(outClasses) - 1
}

func (p *chunkPool) get(class int) []byte {
	list := &p.free[class]
	if n := len(*list); n > 0 {
		b := (*list)[n-1]
		(*list)[n-1] = nil
		*list = (*list)[:n-1]
		p.bytes -= cap(b)
		return b[:0]
	}
	return make([]byte, 0, outClasses[class])
}

func (p *chunkPool) put(b []byte) {
	if p.bytes+cap(b) > max(p.limit, outPoolBytes) {
		return // dropped: the GC returns it
	}
	p.bytes += cap(b)
	class := chunkClass(cap(b))
	p.free[class] = append(p.free[class], b[:0])
}

// adapt sets the pool's limit from the bytes the loop's queues hold now
// (held, at a flush) and drops free chunks over it (loop only).
func (p *chunkPool) adapt(held int) {
	p.limit = max(held, p.limit-p.limit/8)
	for class := range p.free {
		list := &p.free[class]
		for p.bytes > max(p.limit, outPoolBytes) && len(*list) > 0 {
			n := len(*list)
			p.bytes -= cap((*list)[n-1])
			(*list)[n-1] = nil
			*list = (*list)[:n-1]
		}
	}
}

// write copies p to the tail (taking chunks from l's pool).
func (q *outQueue) write(l *loop, p []byte) {
	q.n += len(p) // (q.n-len(p) below: the bytes queued before p)
	for len(p) > 0 {
		if k := len(q.chunks); k > 0 {
			t := q.chunks[k-1].b
			if free := cap(t) - len(t); free > 0 {
				m := copy(t[len(t):cap(t)], p)
				q.chunks[k-1].b = t[:len(t)+m]
				p = p[m:]
				continue
			}
		}
		c := l.chunks.get(chunkClass(max(len(p), (q.n-len(p))/2)))
		q.push(l, outChunk{b: c})
		q.held += cap(c)
		l.budgetAdd(cap(c))
	}
}

// lend queues p, which lies in provided buffers first..first+n-1 of l's
// buffer ring, without copying it: the buffers stay out of the ring until
// the chunk is sent or dropped (l.returnLent).
func (q *outQueue) lend(l *loop, p []byte, first, n uint16) {
	q.n += len(p)
	q.push(l, outChunk{b: p[:len(p):len(p)], first: first, lent: n})
}

// lendStream queues p, which lies in the stream-mode recv buffer sbuf,
// without copying it: sbuf goes back to l's pool when the chunk is sent
// or dropped. Its capacity counts in the memory budget, as a pooled
// chunk's does.
func (q *outQueue) lendStream(l *loop, p, sbuf []byte) {
	q.n += len(p)
	q.push(l, outChunk{b: p[:len(p):len(p)], sbuf: sbuf})
	q.held += cap(sbuf)
	l.budgetAdd(cap(sbuf))
}

// push appends ch to the chunk list; an empty queue takes its list's array
// from l's free ones (dropArray), so an idle connection holds none.
func (q *outQueue) push(l *loop, ch outChunk) {
	if q.chunks == nil {
		if n := len(l.chunkArrs); n > 0 {
			q.chunks = l.chunkArrs[n-1]
			l.chunkArrs[n-1] = nil
			l.chunkArrs = l.chunkArrs[:n-1]
		}
	}
	q.chunks = append(q.chunks, ch)
}

// maxChunkArrs bounds the free chunk-list arrays a loop keeps; outSmallArr
// is the largest kept (a longer list's array goes to the GC).
const (
	maxChunkArrs = 256
	outSmallArr  = 2
)

// dropArray gives the emptied chunk list's array back to l (loop only).
func (q *outQueue) dropArray(l *loop) {
	if c := cap(q.chunks); c > 0 && c <= outSmallArr && len(l.chunkArrs) < maxChunkArrs {
		l.chunkArrs = append(l.chunkArrs, q.chunks[:0])
	}
	q.chunks = nil
}

// next returns the bytes to submit in the next send (the unsent part of
// the head chunk) and marks them in flight; nil when nothing is queued.
func (q *outQueue) next() []byte {
	if q.n == 0 || len(q.chunks) == 0 {
		return nil
	}
	b := q.chunks[0].b[q.head:]
	q.inflight = len(b)
	return b
}

// maxSendIov bounds the chunks one send SQE covers (sendmsg's iovecs).
const maxSendIov = 64

// nextVec is next for every queued chunk at once, up to maxSendIov: it
// fills iov (reusing its array) with the unsent part of the head chunk and
// the chunks after it, marks all of them in flight and returns the iovecs
// and the bytes they cover. One sendmsg SQE then moves the whole queue
// where one send per chunk needed a CQE and a loop iteration each.
func (q *outQueue) nextVec(iov []unix.Iovec) ([]unix.Iovec, int) {
	iov = iov[:0]
	if q.n == 0 || len(q.chunks) == 0 {
		return iov, 0
	}
	total := 0
	for i, ch := range q.chunks {
		if i == maxSendIov {
			break
		}
		c := ch.b
		if i == 0 {
			c = c[q.head:]
		}
		if len(c) == 0 {
			continue
		}
		v := unix.Iovec{Base: &c[0]}
		v.SetLen(len(c))
		iov = append(iov, v)
		total += len(c)
	}
	q.inflight = total
	return iov, total
}

// pending reports bytes queued that no send in flight covers.
func (q *outQueue) pending() int { return q.n - q.inflight }

// sent records that the send in flight took m bytes (its CQE came); it
// frees the head chunk once all of it is sent. It returns true when part
// of the bytes in flight was not sent (a short send: submit next again).
func (q *outQueue) sent(l *loop, m int) bool {
	q.n -= m
	short := q.inflight > m
	q.inflight = 0
	// A sendmsg may have covered several chunks: free every chunk it
	// finished.
	for len(q.chunks) > 0 {
		left := len(q.chunks[0].b) - q.head
		if m < left {
			q.head += m
			break
		}
		m -= left
		q.head = len(q.chunks[0].b)
		if len(q.chunks) == 1 && q.n > 0 && !q.chunks[0].borrowed() {
			break
		}
		q.popHead(l)
	}
	return short
}

func (q *outQueue) popHead(l *loop) {
	c := q.chunks[0]
	k := copy(q.chunks, q.chunks[1:])
	q.chunks[k] = outChunk{}
	q.chunks = q.chunks[:k]
	q.head = 0
	q.drop(l, c)
	if k == 0 {
		q.dropArray(l) // an idle queue holds no array
	}
}

// drop gives back a chunk taken off the queue: a pooled one to l's pool
// (and the budget), a lent one to the buffer ring.
func (q *outQueue) drop(l *loop, c outChunk) {
	if c.lent > 0 {
		l.returnLent(c.first, c.lent)
		return
	}
	if c.sbuf != nil {
		q.held -= cap(c.sbuf)
		l.budgetAdd(-cap(c.sbuf))
		l.putStreamBuf(c.sbuf)
		return
	}
	q.held -= cap(c.b)
	l.budgetAdd(-cap(c.b))
	l.chunks.put(c.b)
}

// discard drops the queued bytes (the connection failed). The chunks a
// send in flight covers stay (the kernel reads them until its CQE: a
// sendmsg covers up to maxSendIov of them); the caller calls release after
// that CQE.
func (q *outQueue) discard(l *loop, sendArmed bool) {
	keep := 0
	if sendArmed && len(q.chunks) > 0 {
		keep = 1
		for left := q.inflight - (len(q.chunks[0].b) - q.head); left > 0 && keep < len(q.chunks); keep++ {
			left -= len(q.chunks[keep].b)
		}
	}
	for len(q.chunks) > keep {
		k := len(q.chunks) - 1
		c := q.chunks[k]
		q.chunks[k] = outChunk{}
		q.chunks = q.chunks[:k]
		q.drop(l, c)
	}
	if keep > 0 {
		q.n = q.inflight
		return
	}
	q.head, q.n, q.inflight = 0, 0, 0
	q.dropArray(l)
}

// release returns every chunk (no send in flight).
func (q *outQueue) release(l *loop) {
	q.discard(l, false)
}

// noteIdle follows a loop iteration that reaped n completions (loop only):
// once a second at most, the loop drops the free output chunks and
// stream-mode recv buffers it keeps for reuse, so what a burst of
// connections or a large transfer grew the pools to leaves the process
// (the pools shrink otherwise only as the loop flushes output, and an
// idle loop flushes none). A busy loop refills them at the cost of a
// pool's worth of garbage a second, against the per-flush garbage the
// pools are there to avoid. The clock is read after an iteration that
// reaped nothing (an idle loop iterates once a second) and once in 64
// others.
func (l *loop) noteIdle(n int) {
	l.trimTick++
	if n > 0 && l.trimTick%64 != 0 {
		return
	}
	if now := monoNow(); now-l.lastTrim >= int64(loopIdleWait) {
		l.lastTrim = now
		l.idleTrim()
	}
}

// idleTrim drops the pools' free buffers (noteIdle).
func (l *loop) idleTrim() {
	if l.chunks.bytes > 0 {
		for class := range l.chunks.free {
			clear(l.chunks.free[class])
			l.chunks.free[class] = nil
		}
		l.chunks.bytes, l.chunks.limit = 0, 0
	}
	if len(l.streamBufs) > 0 {
		clear(l.streamBufs)
		l.streamBufs = nil
	}
}
