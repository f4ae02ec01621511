package main

import (
	"strconv"

	"github.com/uringrt/uringrt/examples/resp/internal/proto"
	"github.com/uringrt/uringrt/runtime"
)

// Writing replies: a batch's replies in one Write (flushed every flushAt
// bytes), a big value written as it is, and the end of a batch.

// keepOut is the largest reply buffer a client keeps between OnData calls;
// a bigger one (a big reply) is dropped for the GC once written.
const keepOut = 64 << 10

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
