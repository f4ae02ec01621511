package uringhttp

import (
	"net"

	uringrt "github.com/uringrt/uringrt/runtime"
)

// Output flow control. What a connection's handler writes goes to the
// runtime's output queue of the connection, which the loop sends as the
// kernel takes it. The server lets a connection queue no more than
// Server.MaxQueuedOutput beyond what the kernel has taken: a Write (of the
// ResponseWriter or of a hijacked connection) is sent in pieces of at most
// half of it, each once the queue is at or under the bound less the
// piece, so that the queue never holds more than the bound and a handler
// writing faster than its client reads waits in Write, at its client's
// pace, as on net/http, whose handler waits for the socket. The queue's
// chunks go back to the runtime's pool as they are sent.
//
// A waiting writer wakes on OnDrained, which the runtime calls when the
// queue falls to its low-water mark (set to half the bound when the
// connection opens) after it had passed it. The writer reads the queue
// off the loop, where its count may still include bytes being moved
// between the posted and the queued counts, so before it waits it also
// asks the loop to look at the exact queue (a timer of no delay): either
// the loop sees the queue at or under the mark and wakes it, or the queue
// is over the mark on the loop, which has then noted it and calls
// OnDrained once it falls under. No wake-up is lost either way.

// DefaultMaxQueuedOutput is the bytes of output a connection queues
// beyond what the kernel has taken when Server.MaxQueuedOutput is 0
// (32 KiB).
const DefaultMaxQueuedOutput = 32 << 10

func (s *Server) maxQueued() int {
	if s.MaxQueuedOutput > 0 {
		return s.MaxQueuedOutput
	}
	return DefaultMaxQueuedOutput
}

// send writes p to the connection, waiting while its output queue is over
// the server's bound (or the runtime's caps): a handler that writes faster
// than its client reads blocks here.
func (h *hconn) send(p []byte) error {
	if h.werr != nil {
		return h.werr
	}
	bound := h.srv.s.maxQueued()
	piece := max(bound/2, 1)
	for len(p) > 0 {
		n := min(len(p), piece)
		if err := h.waitRoom(bound - n); err != nil {
			h.werr = err
			return err
		}
		if err := h.sendPiece(p[:n]); err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

// waitRoom waits until the connection's queued output is at most limit
// bytes (at least half the bound: the low-water mark is under it).
func (h *hconn) waitRoom(limit int) error {
	for {
		if h.dlIs(dlWexp) {
			return errWriteTimeout
		}
		d0 := h.drains.Load()
		if h.c.OutboundBuffered() <= limit {
			return nil
		}
		h.mu.Lock()
		if h.closed || h.killed {
			h.mu.Unlock()
			return net.ErrClosed
		}
		if h.drains.Load() == d0 && !h.dlIs(dlWexp) {
			h.c.AfterFunc(0, checkRoom)
			h.waitLocked() // OnDrained, checkRoom, a close or the write deadline
		}
		h.mu.Unlock()
	}
}

// checkRoom runs on the connection's loop for a writer about to wait:
// the queue read there is exact.
func checkRoom(c *uringrt.CallbackConn) {
	h, _ := c.Value().(*hconn)
	if h == nil || c.OutboundBuffered() > h.srv.s.maxQueued()/2 {
		return // over the low-water mark: OnDrained follows
	}
	h.mu.Lock()
	h.drains.Add(1)
	h.signal()
	h.mu.Unlock()
}

// sendPiece writes p to the connection, waiting while the runtime refuses
// it for its own caps (Config.MaxWriteBuffer, MaxBufferedBytes: OnDrained
// wakes it).
func (h *hconn) sendPiece(p []byte) error {
	for {
		if h.dlIs(dlWexp) {
			h.werr = errWriteTimeout
			return h.werr
		}
		d0 := h.drains.Load()
		_, err := h.c.Write(p)
		if err == nil {
			return nil
		}
		if err != uringrt.ErrWriteBufferFull {
			h.werr = err
			return err
		}
		h.mu.Lock()
		if h.closed || h.killed {
			h.mu.Unlock()
			h.werr = net.ErrClosed
			return h.werr
		}
		if h.drains.Load() == d0 && !h.dlIs(dlWexp) {
			h.waitLocked() // OnDrained, a close or the write deadline
		}
		h.mu.Unlock()
	}
}
