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
// subscriber gets the channel's messages in publishing order.
type channel struct {
	name string
	subs []*client
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
	for _, c := range cl.chans {
		if c == ch {
			return len(cl.chans)
		}
	}
	ch.subs = append(ch.subs, cl)
	cl.chans = append(cl.chans, ch)
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

// remove takes cl off ch (ps locked); a channel left without subscribers
// is deleted.
func (ps *pubsub) remove(cl *client, ch *channel) {
	for i, c := range cl.chans {
		if c == ch {
			cl.chans[i] = cl.chans[len(cl.chans)-1]
			cl.chans[len(cl.chans)-1] = nil
			cl.chans = cl.chans[:len(cl.chans)-1]
			break
		}
	}
	for i, c := range ch.subs {
		if c == cl {
			ch.subs[i] = ch.subs[len(ch.subs)-1]
			ch.subs[len(ch.subs)-1] = nil
			ch.subs = ch.subs[:len(ch.subs)-1]
			break
		}
	}
	if len(ch.subs) == 0 {
		delete(ps.chans, ch.name)
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
// how many it was sent to. The message is encoded once, into the
// publisher's scratch buffer, and appended to each subscriber's batch,
// which the subscriber's own loop writes (enqueue); a subscriber whose
// queued output would pass the pubsub limit is disconnected instead.
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
	n := 0
	for _, sub := range ch.subs {
		if s.enqueue(sub, f) {
			n++
		}
	}
	return n
}

// enqueue appends message f to sub's batch and, for the first message of
// a batch, schedules the batch's write as a loop timer of sub due at once
// (AfterFunc(0)): it runs as sub's own callback at the start of the loop's
// next iteration, after everything this iteration received, so all the
// messages published meanwhile, by any number of publishers and OnData
// calls, leave in one write straight into sub's queue (no copy posted
// per message, as Redis writes each client's replies once per event loop
// turn). When sub's queued output and batch would pass lim.pubsubLimit,
// sub is disconnected instead: a subscriber that does not read is cut
// off, and what is held for it never passes the limit, while the others
// keep their rate.
func (s *server) enqueue(sub *client, f []byte) bool {
	if s.ps.locked {
		sub.mmu.Lock()
		defer sub.mmu.Unlock()
	}
	if sub.dropped.Load() {
		return false
	}
	if queued(sub.c)+sub.mqBytes+len(f) > s.lim.pubsubLimit {
		s.releaseBatch(sub)
		s.drop(sub, "over the pubsub output limit of "+strconv.Itoa(s.lim.pubsubLimit)+" bytes")
		return false
	}
	n := len(sub.mq)
	if n == 0 || len(sub.mq[n-1].b)+len(f) > cap(sub.mq[n-1].b) {
		sub.mq = append(sub.mq, s.getChunk(len(f)))
		n++
	}
	sub.mq[n-1].b = append(sub.mq[n-1].b, f...)
	sub.mqBytes += len(f)
	if !sub.flushing {
		sub.flushing = true
		sub.c.AfterFunc(0, s.flushFn)
	}
	return true
}

// flushMessages writes the subscriber's batch (a loop timer of c, so a
// callback of c: each Write goes straight into c's queue).
func (s *server) flushMessages(c *uringrt.CallbackConn) {
	sub := c.Value().(*client)
	if s.ps.locked {
		sub.mmu.Lock()
		defer sub.mmu.Unlock()
	}
	sub.flushing = false
	for _, ch := range sub.mq {
		if sub.dropped.Load() {
			break
		}
		if _, err := c.Write(ch.b); err != nil {
			s.drop(sub, err.Error())
		}
	}
	s.releaseBatch(sub)
}

// msgChunkSize is the size of the chunks a subscriber's batch is kept in:
// they are reused (server.chunks), so a batch of any size costs no
// allocation once the server is warm, and a subscriber with nothing
// pending holds none.
const msgChunkSize = 16 << 10

// msgChunk is a chunk of a batch (a pointer, so the pool stores it
// without allocating).
type msgChunk struct{ b []byte }

// getChunk returns an empty chunk for at least n bytes.
func (s *server) getChunk(n int) *msgChunk {
	if n > msgChunkSize {
		return &msgChunk{b: make([]byte, 0, n)}
	}
	if ch, ok := s.chunks.Get().(*msgChunk); ok {
		return ch
	}
	return &msgChunk{b: make([]byte, 0, msgChunkSize)}
}

// releaseBatch empties sub's batch, giving its chunks back for reuse.
func (s *server) releaseBatch(sub *client) {
	for i, ch := range sub.mq {
		sub.mq[i] = nil
		if cap(ch.b) == msgChunkSize {
			ch.b = ch.b[:0]
			s.chunks.Put(ch)
		}
	}
	sub.mq = sub.mq[:0]
	sub.mqBytes = 0
}
