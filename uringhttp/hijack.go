package uringhttp

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

// hijackConn is a connection as a net.Conn: what Hijack returns (and what
// the ConnState and ConnContext hooks get). Its reads take the bytes the
// loop received (OnData appends them; reading pauses when 64 KiB wait
// unread), its writes go through the connection's output queue and block
// while it holds Server.MaxQueuedOutput, as a socket's do.
type hijackConn struct {
	h       *hconn
	rdTimer *time.Timer
	wrTimer *time.Timer
	wmu     sync.Mutex // Write's: one at a time, each written whole (as Go's net)
	tk      *takeover  // set when TakeOver, not Hijack, took the connection
}

var _ net.Conn = (*hijackConn)(nil)

// feed takes bytes received after the hijack (h.mu held).
func (hc *hijackConn) feed(data []byte) {
	h := hc.h
	h.appendIn(data)
	h.signal()
	if !h.paused && h.buffered() > inHighWater {
		h.paused = true
		pauseRead(h.c)
	}
}

func (hc *hijackConn) eof()          { hc.h.signal() }
func (hc *hijackConn) closedByPeer() { hc.h.signal() }

// Read reads what the peer sent: at least one byte, or an error (io.EOF
// after the peer's FIN, net.ErrClosed after Close, a timeout past the read
// deadline).
func (hc *hijackConn) Read(p []byte) (int, error) {
	h := hc.h
	h.mu.Lock()
	defer h.mu.Unlock()
	for {
		if n := h.buffered(); n > 0 {
			m := copy(p, h.in[h.r:])
			h.consumed(m)
			if h.buffered() == 0 {
				h.releaseIn()
			}
			return m, nil
		}
		if len(p) == 0 {
			return 0, nil
		}
		if h.dlIs(dlRexp) {
			return 0, &net.OpError{Op: "read", Net: "tcp", Addr: h.c.RemoteAddr(), Err: os.ErrDeadlineExceeded}
		}
		if h.closed {
			if h.rdErr == io.EOF || h.rdErr == io.ErrUnexpectedEOF {
				return 0, io.EOF
			}
			return 0, net.ErrClosed
		}
		if h.rdErr == io.EOF {
			return 0, io.EOF
		}
		h.waitLocked()
	}
}

// Write queues p on the connection, blocking while its output queue is
// full; after the write deadline it fails with a timeout.
func (hc *hijackConn) Write(p []byte) (int, error) {
	h := hc.h
	hc.wmu.Lock()
	defer hc.wmu.Unlock()
	h.werr = nil
	if err := h.send(p); err != nil {
		if err == errWriteTimeout {
			return 0, &net.OpError{Op: "write", Net: "tcp", Addr: h.c.RemoteAddr(), Err: os.ErrDeadlineExceeded}
		}
		return 0, err
	}
	return len(p), nil
}

// Close closes the connection once what was written is sent.
func (hc *hijackConn) Close() error {
	h := hc.h
	h.mu.Lock()
	closed := h.closed
	h.closed = true
	h.rdErr = net.ErrClosed
	h.signal()
	h.mu.Unlock()
	if closed {
		return net.ErrClosed
	}
	return h.c.Close()
}

func (hc *hijackConn) LocalAddr() net.Addr  { return hc.h.c.LocalAddr() }
func (hc *hijackConn) RemoteAddr() net.Addr { return hc.h.c.RemoteAddr() }

func (hc *hijackConn) SetDeadline(t time.Time) error {
	hc.SetReadDeadline(t)
	return hc.SetWriteDeadline(t)
}

func (hc *hijackConn) SetReadDeadline(t time.Time) error  { return hc.h.setDeadline(t, false) }
func (hc *hijackConn) SetWriteDeadline(t time.Time) error { return hc.h.setDeadline(t, true) }

// setDeadline arms the read or write deadline of the connection: past it,
// body and hijacked reads (or writes) fail with a timeout.
func (h *hconn) setDeadline(t time.Time, write bool) error {
	flag, own := dlRexp, dlRown
	if write {
		flag, own = dlWexp, dlWown
	}
	// As on net/http's connection, the handler's deadline replaces the
	// server's ReadTimeout or WriteTimeout for this request.
	h.dlSet(own, true)
	hc := h.hijackConn()
	tp := &hc.rdTimer
	if write {
		tp = &hc.wrTimer
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if *tp != nil {
		(*tp).Stop()
		*tp = nil
	}
	h.dlSet(flag, false)
	if t.IsZero() {
		return nil
	}
	d := time.Until(t)
	if d <= 0 {
		h.dlSet(flag, true)
		h.wakeAll()
		return nil
	}
	*tp = time.AfterFunc(d, func() {
		h.dlSet(flag, true)
		h.mu.Lock()
		h.wakeAll()
		h.mu.Unlock()
	})
	return nil
}

// wakeAll wakes readers and a writer waiting for a drain (mu held).
func (h *hconn) wakeAll() { h.signal() }

// Hijack implements http.Hijacker: the connection is handed to the
// handler as a net.Conn, with a bufio.ReadWriter over it (whose reader
// starts with the bytes received after the request).
func (w *response) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.handlerDone.Load() {
		panic("net/http: Hijack called after ServeHTTP finished")
	}
	if w.hijacked {
		return nil, nil, http.ErrHijacked
	}
	w.disableWriteContinue()
	h := w.h
	// The handler owns the connection from now on, for as long as it
	// likes: off the loop.
	h.c.LeaveLoop()
	w.flushForHandOver()
	hc := h.hijackConn()
	h.phase.Store(phaseHijacked)
	h.mu.Lock()
	h.hj = hc
	w.hijacked = true
	h.busy = false
	h.mu.Unlock()
	h.setDeadline(time.Time{}, false)
	h.setDeadline(time.Time{}, true)
	h.werr = nil
	h.setState(http.StateHijacked)
	br := bufio.NewReader(hc)
	h.mu.Lock()
	pending := h.buffered()
	h.mu.Unlock()
	if pending > 0 {
		// The bytes received after the request are in the reader's
		// buffer, as in net/http's (Buffered tells them).
		br.Peek(min(pending, br.Size()))
	}
	return hc, bufio.NewReadWriter(br, bufio.NewWriter(hc)), nil
}

// flushForHandOver ends the response of a connection handed to its
// handler (Hijack, TakeOver). As net/http: a head already written
// logically goes out (without the bytes still in the 2 KiB buffer, which
// are dropped); the connection's own buffer is flushed.
func (w *response) flushForHandOver() {
	if w.bw != nil {
		w.bw.Reset(&w.cw)
		w.bw = nil
	}
	if w.wroteHeader && !w.cw.wroteHeader {
		w.cw.writeHeader(nil)
	}
	w.h.flushOut()
}
