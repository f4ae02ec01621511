package main

import (
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
