package main

import (
	"sync/atomic"

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
}

// server is the RESP server: a uringrt.Handler over the key space and the
// pub/sub registry.
type server struct {
	st  *store
	ps  *pubsub
	lim limits
	// pending is the capacity of all clients' partial-request buffers.
	pending atomic.Int64
}

func newServer(loops int, lim limits) *server {
	return &server{st: newStore(loops), ps: newPubsub(loops), lim: lim}
}

// client is one connection's state, owned by its loop.
type client struct {
	c    *uringrt.CallbackConn
	p    proto.Parser
	pend []byte // the bytes of a partial request, kept for the next OnData
	held int    // cap(pend), as counted in server.pending
	out  []byte // replies of one OnData, written at once
	// frame is the scratch buffer of the messages this client publishes.
	frame []byte
	// chans are the channels subscribed to; a client with any is in
	// subscribed mode (RESP2): only (UN)SUBSCRIBE, PING and QUIT.
	chans []*channel
	// closing: a QUIT or a protocol error; what follows is not run.
	closing bool
	// dropped: a publisher found this subscriber over the pubsub limit
	// and closed it; publishers skip it until its OnClose unsubscribes it.
	dropped atomic.Bool
}

// Largest buffers a client keeps between OnData calls; bigger ones (a big
// reply, a big request) are dropped for the GC once used.
const (
	keepOut  = 64 << 10
	keepPend = 64 << 10
)

// OnOpen sets up the client.
func (s *server) OnOpen(c *uringrt.CallbackConn) {
	cl := &client{c: c}
	cl.p.MaxBulk, cl.p.MaxRequest = s.lim.maxBulk, s.lim.maxRequest
	c.SetValue(cl)
}

// OnData runs every complete request in data (and in the partial request
// kept from before) and writes all their replies with one Write.
func (s *server) OnData(c *uringrt.CallbackConn, data []byte) {
	cl := c.Value().(*client)
	if cl.closing {
		return
	}
	buf := data
	joined := len(cl.pend) > 0
	if joined {
		cl.pend = append(cl.pend, data...)
		buf = cl.pend
	}
	out := cl.out[:0]
	for len(buf) > 0 && !cl.closing {
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
	if !cl.closing && !s.keep(cl, buf, joined) {
		out = proto.AppendError(out, "ERR server is out of memory for partial requests")
		cl.closing = true
	}
	if cl.closing {
		s.release(cl)
	}
	if len(out) > 0 {
		c.Write(out)
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

// keep holds rest, the start of a partial request, for the next OnData
// (joined: rest lies in cl.pend already), within the server's bound on
// partial requests. It reports false when the bound is exceeded.
func (s *server) keep(cl *client, rest []byte, joined bool) bool {
	switch {
	case len(rest) == 0:
		cl.pend = cl.pend[:0]
		if cap(cl.pend) > keepPend {
			cl.pend = nil
		}
	case joined:
		cl.pend = cl.pend[:copy(cl.pend, rest)]
	default:
		cl.pend = append(cl.pend[:0], rest...)
	}
	if d := cap(cl.pend) - cl.held; d != 0 {
		cl.held += d
		if s.pending.Add(int64(d)) > s.lim.maxPending && d > 0 && len(cl.pend) > keepPend {
			return false
		}
	}
	return true
}

// release gives back what the client holds of the partial-request bound.
func (s *server) release(cl *client) {
	s.pending.Add(-int64(cl.held))
	cl.held = 0
	cl.pend = nil
	cl.p.Reset()
}

// OnClose unsubscribes the client and releases what it held.
func (s *server) OnClose(c *uringrt.CallbackConn, err error) {
	cl := c.Value().(*client)
	if len(cl.chans) > 0 {
		s.ps.leave(cl)
	}
	s.release(cl)
}
