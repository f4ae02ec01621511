package main

import (
	"bytes"
	"log"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uringrt/uringrt/examples/resp/internal/proto"
	"github.com/uringrt/uringrt/runtime"
)

// limits bounds what the server holds for its clients.
type limits struct {
	// maxBulk and maxRequest bound one request (proto.Parser).
	maxBulk, maxRequest int
	// maxPending bounds the bytes of partial requests that all
	// connections hold together; a connection whose partial request would
	// go over it gets an error and is closed.
	maxPending int64
	// pubsubLimit is the most output bytes a subscriber may have queued;
	// a subscriber over it is disconnected (Redis's
	// client-output-buffer-limit for pubsub clients does the same).
	pubsubLimit int
	// writeTimeout disconnects a client whose replies wait and that
	// reads none of them for this long: one whose output passed
	// paceHigh, or one closing (QUIT, an error) with replies queued.
	writeTimeout time.Duration
}

// server is the RESP server: a uringrt.Handler over the key space and the
// pub/sub registry.
type server struct {
	st  *store
	ps  *pubsub
	lim limits
	// pending is the bytes of all clients' partial requests.
	pending atomic.Int64
	// crossLogged is when crossProtocol last logged (Unix ns).
	crossLogged atomic.Int64

	// mu guards conns and sweeper (taken at open and close, and to start
	// and stop the expiry sweep).
	mu       sync.Mutex
	conns    map[*client]struct{}
	sweeper  *client // the client whose loop timer runs the expiry sweep
	sweepT   *uringrt.LoopTimer
	sweeping atomic.Bool // sweeper != nil, read without mu

	flushFn func(*uringrt.CallbackConn) // flushMessages, made once

	// writesBlock: Go's net backend, where Write blocks until the client
	// took the bytes, so no reply is paced and every client gets the
	// write timeout from the start (cheap there: a deadline on the
	// socket).
	writesBlock bool
}

// newServer makes a server; shared says that callbacks of different
// connections may run at the same time (several loops, or the std backend's
// goroutine per connection), so the store and registry take locks.
func newServer(shared bool, lim limits) *server {
	s := &server{st: newStore(shared), ps: newPubsub(shared), lim: lim, conns: map[*client]struct{}{}}
	s.flushFn = s.flushMessages
	return s
}

// client is one connection's state, owned by its loop.
type client struct {
	c    *uringrt.CallbackConn
	p    proto.Parser
	held int    // bytes of a partial request kept, as counted in server.pending
	out  []byte // replies of one OnData, written at once
	// frame is the scratch buffer of the messages this client publishes.
	frame []byte
	// mq is this subscriber's batch of messages not yet written (mqBytes
	// bytes, in runs of channel segments), and flushing says that its
	// write is scheduled (pubsub.go); qbase is an upper bound of its
	// queued output without the batch: the exact figure when the last
	// batch was written, plus the replies its OnData wrote since (sends
	// only lower it). All under mmu when callbacks run in parallel.
	mmu      sync.Mutex
	mq       []msgRef
	mqBytes  int
	qbase    int
	flushing bool
	// chans are the channels subscribed to; a client with any is in
	// subscribed mode (RESP2): only (UN)SUBSCRIBE, PING and QUIT.
	// chanAt[j] is this client's index in chans[j].subs, and member maps
	// a channel to its index in chans (pubsub.go). Changed under the
	// registry's write lock only, member and chans by this client's own
	// callbacks (which read them without it).
	chans  []*channel
	chanAt []int
	member map[*channel]int
	// closing: a QUIT or a protocol error; what follows is not run.
	closing bool
	// dropped: a publisher found this subscriber over the pubsub limit
	// and closed it; publishers skip it until its OnClose unsubscribes it.
	dropped atomic.Bool

	// Pacing (see paceHigh): paced says that the client's queued output
	// passed paceHigh and its requests wait for OnDrained; backlog is
	// its input not yet run, kept by the client itself (non-nil from
	// the first pause until the client has caught up); mget the rest of
	// an MGET reply; qb its queued output as of the last write.
	paced   bool
	backlog []byte
	mget    *mgetRest
	qb      int
	timed   bool // its write timeout is set
}

// mgetRest is the part of an MGET reply not yet made: the values of the
// keys still to answer, taken when the MGET ran (their entries are lent:
// never written in place again), found false for a missing key.
type mgetRest struct {
	vals  [][]byte
	found []bool
	next  int
}

// Replies are made as fast as the client takes them. Before each request
// (and each value of an MGET) the client's queued output is looked at: past
// paceHigh, the requests left wait in the client's backlog (the bytes of
// one read: the runtime stops reading a connection whose output is queued)
// and the MGET's values in mgetRest, until OnDrained says the output fell
// to paceLow. So a client that reads gets every reply of any pipeline,
// however big, while the server holds at most about paceHigh plus one
// reply for it; one that reads nothing is disconnected after
// limits.writeTimeout. A reply fits: Config.MaxWriteBuffer is
// maxRequest (over the biggest bulk) plus 8 MiB (start.go).
const (
	paceHigh = 4 << 20
	paceLow  = paceHigh / 2
)

// keepOut is the largest reply buffer a client keeps between OnData calls;
// a bigger one (a big reply) is dropped for the GC once written.
const keepOut = 64 << 10

// OnOpen sets up the client.
func (s *server) OnOpen(c *uringrt.CallbackConn) {
	cl := &client{c: c}
	cl.p.MaxBulk, cl.p.MaxRequest = s.lim.maxBulk, s.lim.maxRequest
	c.SetValue(cl)
	c.SetLowWater(paceLow)
	if s.writesBlock && s.lim.writeTimeout > 0 {
		cl.timed = true
		c.SetWriteTimeout(s.lim.writeTimeout)
	}
	s.mu.Lock()
	s.conns[cl] = struct{}{}
	s.mu.Unlock()
}

// OnData runs every complete request in data and writes all their replies
// with one Write. data starts with the partial request left by the last
// OnData, if any (the callback API's framing keeps what Discard did not
// consume, and joins the next bytes to it); a request still partial stays
// for the next OnData, where the parser resumes it. While the client's
// replies are paced (see paceHigh) its input joins its backlog instead.
func (s *server) OnData(c *uringrt.CallbackConn, data []byte) {
	cl := c.Value().(*client)
	if cl.closing {
		return
	}
	if cl.paced || cl.backlog != nil {
		cl.backlog = append(cl.backlog, data...)
		if !cl.paced {
			s.resume(cl)
		} else {
			s.finish(cl, cl.out[:0], len(cl.backlog))
		}
		return
	}
	cl.qb = queued(c)
	out, buf := s.runAll(cl, data, cl.out[:0])
	if !cl.closing && len(buf) > 0 {
		if cl.paced {
			// The client keeps the requests left itself: the runtime's
			// framing gives kept input back only with new input, and
			// the client may send none before it has its replies.
			cl.backlog = append([]byte(nil), buf...)
		} else {
			// Keep the partial request: consume what was run, leave the rest.
			c.Discard(len(data) - len(buf))
		}
	}
	s.finish(cl, out, len(buf))
}

// OnDrained goes on with a paced client's replies and requests.
func (s *server) OnDrained(c *uringrt.CallbackConn) {
	cl := c.Value().(*client)
	if !cl.paced || cl.closing {
		return
	}
	cl.paced = false
	s.resume(cl)
}

// resume makes the rest of a paced MGET reply, then runs the backlog,
// until done or paced again.
func (s *server) resume(cl *client) {
	cl.qb = queued(cl.c)
	out := cl.out[:0]
	if cl.mget != nil {
		out = s.mgetMore(cl, out)
	}
	if !cl.paced && !cl.closing && len(cl.backlog) > 0 {
		var rest []byte
		out, rest = s.runAll(cl, cl.backlog, out)
		cl.backlog = cl.backlog[:copy(cl.backlog, rest)] // a partial request stays at the front
	}
	if !cl.paced && len(cl.backlog) == 0 {
		cl.backlog = nil // caught up: the runtime's framing again
	}
	s.finish(cl, out, len(cl.backlog))
}

// finish ends an OnData or a resume: it records the held bytes of cl's
// requests (refusing them past lim.maxPending), writes out, arms the
// write timeout of a paced or closing client, and closes one that is
// closing.
func (s *server) finish(cl *client, out []byte, held int) {
	c := cl.c
	if !cl.closing && !s.hold(cl, held) {
		out = proto.AppendError(out, "ERR server is out of memory for partial requests")
		cl.closing = true
	}
	if cl.closing {
		s.hold(cl, 0)
		cl.backlog, cl.mget = nil, nil
	}
	out = s.flush(cl, out)
	if (cl.paced || cl.closing) && !cl.timed && s.lim.writeTimeout > 0 {
		cl.timed = true
		c.SetWriteTimeout(s.lim.writeTimeout)
	}
	if cl.closing {
		c.Close()
	}
	if cap(out) <= keepOut {
		cl.out = out[:0]
	} else {
		cl.out = nil
	}
}

// over reports whether cl's queued output with out passed paceHigh, and
// if so paces cl.
func (s *server) over(cl *client, out []byte) bool {
	if cl.qb+len(out) <= paceHigh {
		return false
	}
	cl.paced = true
	return true
}

// bigReply is the size from which a value is written to the connection
// as it is, not copied into the reply buffer first (one copy of it fewer,
// and no reply buffer of its size to allocate).
const bigReply = 64 << 10

// bigValue returns e's value when it is written as a big reply, marking
// e lent (its value stays as it is until written: the store's lock may be
// let go first); nil for a small one (e's shard locked).
func (s *server) bigValue(cl *client, e *entry) []byte {
	if len(e.val) < bigReply || cl.c == nil {
		return nil
	}
	e.lent = true
	return e.val
}

// writeBig appends val's bulk reply: the replies before it and its header
// are written, then val itself, and its CRLF is left in out.
func (s *server) writeBig(cl *client, out, val []byte) []byte {
	out = append(out, '$')
	out = strconv.AppendInt(out, int64(len(val)), 10)
	out = append(out, '\r', '\n')
	if out = s.flush(cl, out); cl.closing {
		return out
	}
	s.noteReplies(cl, len(val))
	if _, err := cl.c.Write(val); err == uringrt.ErrWriteBufferFull {
		cl.closing = true
	}
	cl.qb = queued(cl.c)
	return append(out, '\r', '\n')
}

// lendRest keeps the values of keys, the rest of a paced MGET, for
// mgetMore: taken now, so the reply is the key space as the MGET ran.
func (s *server) lendRest(cl *client, keys [][]byte) {
	m := &mgetRest{vals: make([][]byte, len(keys)), found: make([]bool, len(keys))}
	for i, k := range keys {
		sh := s.st.lock(k)
		if e := sh.get(k, nowNano); e != nil {
			e.lent = true
			m.vals[i], m.found[i] = e.val, true
		}
		s.st.unlock(sh)
	}
	cl.mget = m
}

// mgetMore appends the rest of cl's MGET reply to out, until done or
// paced again.
func (s *server) mgetMore(cl *client, out []byte) []byte {
	m := cl.mget
	for ; m.next < len(m.vals); m.next++ {
		if len(out) >= flushAt {
			if out = s.flush(cl, out); cl.closing {
				return out
			}
		}
		if s.over(cl, out) {
			return out
		}
		if v := m.vals[m.next]; m.found[m.next] && len(v) >= bigReply && cl.c != nil {
			if out = s.writeBig(cl, out, v); cl.closing {
				return out
			}
		} else if m.found[m.next] {
			out = proto.AppendBulk(out, v)
		} else {
			out = proto.AppendNull(out)
		}
		m.vals[m.next] = nil
	}
	cl.mget = nil
	return out
}

// flushAt is the reply bytes of one OnData written at once, before the
// requests after them run: the replies of a batch are not all held
// together (a few bytes of GETs of a big value make many times their
// size), and the connection's cap on queued output applies within a batch.
const flushAt = 256 << 10

// flush writes out, the replies made so far, and returns it emptied. Past
// Config.MaxWriteBuffer of queued output (the client does not read its
// replies) the client is dropped rather than held without bound (Redis's
// client-output-buffer-limit; no room is left for an error reply).
func (s *server) flush(cl *client, out []byte) []byte {
	if len(out) == 0 {
		return out
	}
	s.noteReplies(cl, len(out))
	if _, err := cl.c.Write(out); err == uringrt.ErrWriteBufferFull {
		cl.closing = true
	}
	cl.qb = queued(cl.c) // exact in cl's callback; 0 under Go's net backend, whose Write blocks
	return out[:0]
}

// runAll runs every complete request at the front of data, appending
// their replies to out (written at flushAt bytes), and returns out and
// the bytes left (a partial request). A protocol error appends its RESP
// error and sets cl.closing.
func (s *server) runAll(cl *client, data, out []byte) ([]byte, []byte) {
	buf := data
	for len(buf) > 0 && !cl.closing && !cl.paced {
		if len(out) >= flushAt {
			if out = s.flush(cl, out); cl.closing {
				break
			}
		}
		if s.over(cl, out) {
			break
		}
		args, n, err := cl.p.Next(buf)
		if err != nil {
			out = proto.AppendError(out, "ERR "+err.Error())
			cl.closing = true
			break
		}
		if n == 0 {
			break
		}
		buf = buf[n:]
		if len(args) > 0 {
			out = s.exec(cl, args, out)
		}
	}
	return out, buf
}

// hold records that cl keeps n bytes of a partial request and reports
// false when all clients together would pass lim.maxPending (the
// runtime bounds one connection's kept input by Config.MaxWriteBuffer;
// this bounds their sum).
func (s *server) hold(cl *client, n int) bool {
	d := n - cl.held
	if d == 0 {
		return true
	}
	cl.held = n
	if s.pending.Add(int64(d)) > s.lim.maxPending && d > 0 {
		return false
	}
	return true
}

// OnClose unsubscribes the client and releases what it held.
func (s *server) OnClose(c *uringrt.CallbackConn, err error) {
	cl := c.Value().(*client)
	if len(cl.chans) > 0 {
		s.ps.leave(cl)
		cl.dropped.Store(true) // publishers holding it skip it
		if s.ps.locked {
			cl.mmu.Lock()
		}
		s.releaseBatch(cl)
		if s.ps.locked {
			cl.mmu.Unlock()
		}
	}
	s.hold(cl, 0)
	s.mu.Lock()
	delete(s.conns, cl)
	if s.sweeper == cl { // hand the sweep to another client
		s.sweeper, s.sweepT = nil, nil
		s.sweeping.Store(false)
		for other := range s.conns {
			s.startSweepLocked(other)
			break
		}
	}
	s.mu.Unlock()
}

// The active expiry: while some keys have a TTL, a loop timer of one
// client's connection deletes expired keys every 100 ms (keys read again
// are deleted on access anyway). It runs on that client's loop, so with
// one loop the unlocked store is touched by that loop only; it stops when
// no key has a TTL (a server without them keeps no timer, and its idle
// loop does not wake), ends with the connection, and OnClose hands it to
// another client.

// startSweep starts the sweep on cl's loop unless it runs.
func (s *server) startSweep(cl *client) {
	s.mu.Lock()
	if s.sweeper == nil {
		s.startSweepLocked(cl)
	}
	s.mu.Unlock()
}

// startSweepLocked starts the sweep on cl's loop (s.mu held, none running).
func (s *server) startSweepLocked(cl *client) {
	s.sweeper = cl
	s.sweeping.Store(true)
	s.sweepT = cl.c.Every(sweepEvery, func(*uringrt.CallbackConn) {
		s.st.sweep(nowNano())
		if s.st.ttlKeys() > 0 {
			return
		}
		s.mu.Lock()
		if s.sweeper == cl {
			// Stop, unless a key with a TTL came meanwhile: a SET that
			// stored one after the count above sees sweeping false and
			// starts a new sweep; one before it shows in the count.
			s.sweeping.Store(false)
			if s.st.ttlKeys() == 0 {
				s.sweepT.Stop()
				s.sweeper, s.sweepT = nil, nil
			} else {
				s.sweeping.Store(true)
			}
		}
		s.mu.Unlock()
	})
}

// sweepEvery is the active expiry's period.
const sweepEvery = 100 * time.Millisecond

// crossProtocol closes cl, with no reply, when args are what an HTTP
// request makes of the RESP inline syntax: a request line (GET / HTTP/1.1,
// any method) or, as Redis treats them, a POST or a Host: header line.
// A browser made to send a request to the server (cross-protocol
// scripting) thus runs nothing that follows, its body included. It
// reports whether it closed cl; the attempt is logged at most once a
// minute, as Redis logs it.
func (s *server) crossProtocol(cl *client, args [][]byte) bool {
	if !isCrossProtocol(args) {
		return false
	}
	cl.closing = true
	if now := nowNano(); now-s.crossLogged.Load() > int64(time.Minute) {
		s.crossLogged.Store(now)
		log.Printf("resp: possible security attack: a client sent an HTTP request (%.20q); connection from %v closed", args[0], cl.c.RemoteAddr())
	}
	return true
}

// httpMethods are the request methods that crossProtocol knows.
var httpMethods = []string{"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"}

// isCrossProtocol reports whether args are an HTTP request line, POST or
// Host: (see crossProtocol).
func isCrossProtocol(args [][]byte) bool {
	if len(args) == 0 {
		return false
	}
	if bytes.EqualFold(args[0], []byte("post")) || bytes.EqualFold(args[0], []byte("host:")) {
		return true
	}
	if len(args) != 3 || !bytes.HasPrefix(args[2], []byte("HTTP/")) {
		return false
	}
	for _, m := range httpMethods {
		if bytes.EqualFold(args[0], []byte(m)) {
			return true
		}
	}
	return false
}
