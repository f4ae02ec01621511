package main

import (
	"strconv"
	"sync"

	"github.com/uringrt/uringrt/examples/resp/internal/proto"
	"github.com/uringrt/uringrt/runtime"
)

// pubsub is the channel registry. With one loop only that loop touches it
// and it takes no lock; with several, subscribing takes the write lock and
// publishing the read lock, so publishers on different loops fan out in
// parallel.
type pubsub struct {
	locked bool
	mu     sync.RWMutex
	chans  map[string]*channel
}

// channel is one channel's subscribers, in no particular order; each
// subscriber gets the channel's messages in publishing order. subAt[i] is
// the index of this channel in subs[i].chans: with client.chanAt, a
// subscription is removed from both lists in constant time, however many
// channels a client has or clients a channel has.
type channel struct {
	name  string
	subs  []*client
	subAt []int
	// mu guards seg when the registry is locked (publishers on several
	// loops add to one channel at the same time).
	mu   sync.Mutex
	seg  *segment // the segment messages are being added to; nil at first
	fill int      // bytes of seg used
}

func newPubsub(shared bool) *pubsub {
	return &pubsub{locked: shared, chans: map[string]*channel{}}
}

func (ps *pubsub) lock() {
	if ps.locked {
		ps.mu.Lock()
	}
}

func (ps *pubsub) unlock() {
	if ps.locked {
		ps.mu.Unlock()
	}
}

// subscribe adds cl to the channel name and returns how many channels cl
// is subscribed to.
func (ps *pubsub) subscribe(cl *client, name []byte) int {
	ps.lock()
	defer ps.unlock()
	ch := ps.chans[string(name)]
	if ch == nil {
		ch = &channel{name: string(name)}
		ps.chans[ch.name] = ch
	}
	if _, ok := cl.member[ch]; ok {
		return len(cl.chans)
	}
	if cl.member == nil {
		cl.member = map[*channel]int{}
	}
	cl.member[ch] = len(cl.chans)
	ch.subs = append(ch.subs, cl)
	ch.subAt = append(ch.subAt, len(cl.chans))
	cl.chans = append(cl.chans, ch)
	cl.chanAt = append(cl.chanAt, len(ch.subs)-1)
	return len(cl.chans)
}

// unsubscribeAll removes cl from the channels named (all of its channels
// when names is empty) and appends Redis's replies to out: one
// "unsubscribe" message per channel with the count left.
func (ps *pubsub) unsubscribeAll(cl *client, names [][]byte, out []byte) []byte {
	ps.lock()
	defer ps.unlock()
	if len(names) == 0 {
		if len(cl.chans) == 0 {
			out = proto.AppendArray(out, 3)
			out = proto.AppendBulkString(out, "unsubscribe")
			out = proto.AppendNull(out)
			return proto.AppendInt(out, 0)
		}
		for len(cl.chans) > 0 {
			ch := cl.chans[len(cl.chans)-1]
			ps.remove(cl, ch)
			out = subReply(out, "unsubscribe", []byte(ch.name), len(cl.chans))
		}
		return out
	}
	for _, name := range names {
		if ch := ps.chans[string(name)]; ch != nil {
			ps.remove(cl, ch)
		}
		out = subReply(out, "unsubscribe", name, len(cl.chans))
	}
	return out
}

// leave removes cl from all its channels.
func (ps *pubsub) leave(cl *client) {
	ps.lock()
	defer ps.unlock()
	for len(cl.chans) > 0 {
		ps.remove(cl, cl.chans[len(cl.chans)-1])
	}
}

// remove takes cl off ch, if it is on it (ps locked); a channel left
// without subscribers is deleted. Each list's last entry moves into the
// hole, and the other list's index of it follows.
func (ps *pubsub) remove(cl *client, ch *channel) {
	j, ok := cl.member[ch]
	if !ok {
		return
	}
	delete(cl.member, ch)
	i := cl.chanAt[j]

	last := len(ch.subs) - 1
	moved, movedJ := ch.subs[last], ch.subAt[last]
	ch.subs[i], ch.subAt[i] = moved, movedJ
	moved.chanAt[movedJ] = i
	ch.subs[last] = nil
	ch.subs, ch.subAt = ch.subs[:last], ch.subAt[:last]

	last = len(cl.chans) - 1
	mch, mi := cl.chans[last], cl.chanAt[last]
	cl.chans[j], cl.chanAt[j] = mch, mi
	if mch != ch {
		mch.subAt[mi] = j
		cl.member[mch] = j
	}
	cl.chans[last] = nil
	cl.chans, cl.chanAt = cl.chans[:last], cl.chanAt[:last]

	if len(ch.subs) == 0 {
		delete(ps.chans, ch.name)
	}
	if len(cl.chans) == 0 {
		cl.member = nil
	}
}

// subReply appends a (un)subscribe confirmation: [kind, channel, count].
func subReply(out []byte, kind string, ch []byte, n int) []byte {
	out = proto.AppendArray(out, 3)
	out = proto.AppendBulkString(out, kind)
	out = proto.AppendBulk(out, ch)
	return proto.AppendInt(out, int64(n))
}

// publish sends msg to every subscriber of the channel name and returns
// how many it was sent to. The message is encoded once and appended to
// the channel's current segment (segment); each subscriber's batch takes
// a reference to those bytes, not a copy (enqueue), and the subscriber's
// own loop writes the batch. A subscriber whose queued output would pass
// the pubsub limit is disconnected instead.
func (s *server) publish(pub *client, name, msg []byte) int {
	ps := s.ps
	if ps.locked {
		ps.mu.RLock()
		defer ps.mu.RUnlock()
	}
	ch := ps.chans[string(name)]
	if ch == nil {
		return 0
	}
	f := proto.AppendArray(pub.frame[:0], 3)
	f = proto.AppendBulkString(f, "message")
	f = proto.AppendBulk(f, name)
	f = proto.AppendBulk(f, msg)
	if cap(f) <= keepOut {
		pub.frame = f
	}
	if ps.locked {
		ch.mu.Lock()
	}
	seg, start := ch.add(f)
	if ps.locked {
		ch.mu.Unlock()
	}
	n := 0
	for _, sub := range ch.subs {
		if s.enqueue(sub, seg, start, len(f)) {
			n++
		}
	}
	return n
}

// segmentSize is the size of a channel's segments: messages up to a
// quarter of it share one; a bigger message gets a segment of its own.
const segmentSize = 64 << 10

// segment is an append-only run of a channel's encoded messages. Bytes
// once appended never change, so subscribers' batches refer to them
// instead of copying them (a message to a thousand subscribers is
// encoded and stored once, and each subscriber's write copies it from
// the same cache-hot bytes). A segment is garbage once the channel has
// moved to a new one and the batches that refer to it are written (one
// loop iteration): its memory is the GC's, allocated once per
// segmentSize bytes published, not per delivery.
type segment struct {
	b []byte // fixed at creation: only bytes past the channel's fill are written
}

// add appends message f to ch's current segment (starting a new one when
// it is full) and returns the segment and where f starts in it (ch.mu
// held when the registry is locked).
func (ch *channel) add(f []byte) (*segment, int) {
	if len(f) > segmentSize/4 {
		return &segment{b: append([]byte(nil), f...)}, 0
	}
	if ch.seg == nil || ch.fill+len(f) > len(ch.seg.b) {
		ch.seg, ch.fill = &segment{b: make([]byte, segmentSize)}, 0
	}
	start := ch.fill
	ch.fill += copy(ch.seg.b[start:], f)
	return ch.seg, start
}

// msgRef is a run of messages of a subscriber's batch: seg.b[start:end].
type msgRef struct {
	seg        *segment
	start, end int
}

// enqueue adds the message seg.b[start:start+n] to sub's batch: it
// extends the batch's last run when the message follows it in the same
// segment (the usual case: one channel, messages in publishing order), so
// a message costs the subscriber a few words, not a copy. For the first
// message of a batch it schedules the batch's write as a loop timer of
// sub due at once (AfterFunc(0)): it runs as sub's own callback at the
// start of the loop's next iteration, after everything this iteration
// received, so all the messages published meanwhile, by any number of
// publishers and OnData calls, leave in one write straight into sub's
// queue (no copy posted per message, as Redis writes each client's
// replies once per event loop turn).
//
// When sub's queued output and batch would pass lim.pubsubLimit, sub is
// disconnected instead: a subscriber that does not read is cut off, and
// what is held for it never passes the limit, while the others keep their
// rate. The queued output is sub.qbase, an upper bound kept without
// touching the connection (see client.qbase); only when that bound says
// over the limit is the connection asked for the exact figure.
func (s *server) enqueue(sub *client, seg *segment, start, n int) bool {
	if s.ps.locked {
		sub.mmu.Lock()
		defer sub.mmu.Unlock()
	}
	if sub.dropped.Load() {
		return false
	}
	if sub.qbase+sub.mqBytes+n > s.lim.pubsubLimit {
		sub.qbase = queued(sub.c)
		if sub.qbase+sub.mqBytes+n > s.lim.pubsubLimit {
			s.releaseBatch(sub)
			s.drop(sub, "over the pubsub output limit of "+strconv.Itoa(s.lim.pubsubLimit)+" bytes")
			return false
		}
	}
	if k := len(sub.mq) - 1; k >= 0 && sub.mq[k].seg == seg && sub.mq[k].end == start {
		sub.mq[k].end += n
	} else {
		sub.mq = append(sub.mq, msgRef{seg: seg, start: start, end: start + n})
	}
	sub.mqBytes += n
	if !sub.flushing {
		sub.flushing = true
		sub.c.AfterFunc(0, s.flushFn)
	}
	return true
}

// flushMessages writes the subscriber's batch (a loop timer of c, so a
// callback of c: each Write goes straight into c's queue) and notes the
// queued output it leaves (client.qbase).
func (s *server) flushMessages(c *uringrt.CallbackConn) {
	sub := c.Value().(*client)
	if s.ps.locked {
		sub.mmu.Lock()
		defer sub.mmu.Unlock()
	}
	sub.flushing = false
	for _, r := range sub.mq {
		if sub.dropped.Load() {
			break
		}
		if _, err := c.Write(r.seg.b[r.start:r.end]); err != nil {
			s.drop(sub, err.Error())
		}
	}
	s.releaseBatch(sub)
	sub.qbase = queued(c)
}

// noteReplies adds n bytes of replies written by sub's own OnData to
// sub.qbase when sub is subscribed (publishers read qbase).
func (s *server) noteReplies(sub *client, n int) {
	if len(sub.chans) == 0 || n == 0 {
		return
	}
	if s.ps.locked {
		sub.mmu.Lock()
		defer sub.mmu.Unlock()
	}
	sub.qbase += n
}

// releaseBatch empties sub's batch (the segments it referred to are the
// GC's once no batch and no channel holds them).
func (s *server) releaseBatch(sub *client) {
	clear(sub.mq)
	sub.mq = sub.mq[:0]
	sub.mqBytes = 0
}

// startQbase sets cl.qbase to its queued output as it enters subscribed
// mode (its own callback: exact), before publishers may read it.
func (s *server) startQbase(cl *client) {
	n := queued(cl.c)
	if s.ps.locked {
		cl.mmu.Lock()
		defer cl.mmu.Unlock()
	}
	cl.qbase = n
}
