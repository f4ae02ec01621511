package main

import (
	"github.com/uringrt/uringrt/examples/resp/internal/proto"
	"github.com/uringrt/uringrt/runtime"
)

// Pacing a client that reads its replies slower than it asks: the requests
// left and the rest of an MGET wait until OnDrained.

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

// over reports whether cl's queued output with out passed paceHigh, and
// if so paces cl.
func (s *server) over(cl *client, out []byte) bool {
	if cl.qb+len(out) <= paceHigh {
		return false
	}
	cl.paced = true
	return true
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
