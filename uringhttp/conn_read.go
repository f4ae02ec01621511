package uringhttp

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"

	uringrt "github.com/uringrt/uringrt/runtime"
)

// appendIn adds received bytes to the connection's own input (mu held).
func (h *hconn) appendIn(data []byte) {
	if h.in == nil {
		h.in = getBuf()
		h.r = 0
	}
	if h.r > 0 && h.r == len(h.in) {
		h.in, h.r = h.in[:0], 0
	} else if h.r > 0 && len(h.in)+len(data) > cap(h.in) && h.r >= len(h.in)/2 {
		n := copy(h.in, h.in[h.r:])
		h.in, h.r = h.in[:n], 0
	}
	if need := len(h.in) + len(data); need > cap(h.in) {
		// Past the pooled 4 KiB, once to what reading holds at most
		// (inHighWater and a receive), not by doubling: a body that
		// streams then holds one buffer and leaves no trail of garbage.
		b := make([]byte, len(h.in), max(need, inHighWater+inRecvMax))
		copy(b, h.in)
		putBuf(h.in)
		h.in = b
	}
	h.in = append(h.in, data...)
}

func (h *hconn) buffered() int { return len(h.in) - h.r }

// consumed marks n bytes of the own input read (mu held); an emptied
// buffer goes back to the pool once no request is in flight.
func (h *hconn) consumed(n int) {
	h.r += n
	if h.r == len(h.in) {
		h.in, h.r = h.in[:0], 0
	}
	if h.paused && h.buffered() < inLowWater {
		h.paused = false
		resumeRead(h.c)
	}
}

func (h *hconn) releaseIn() {
	if h.in != nil && h.buffered() == 0 {
		putBuf(h.in)
		h.in, h.r = nil, 0
	}
}

// signal wakes the readers waiting for input (mu held).
func (h *hconn) signal() {
	if h.wake != nil {
		close(h.wake)
		h.wake = nil
	}
}

// waitLocked waits for the next signal: mu held on entry and on return.
// A handler running on the loop first hands the loop on: what it waits for
// comes through the loop.
func (h *hconn) waitLocked() {
	h.c.LeaveLoop()
	if h.wake == nil {
		h.wake = make(chan struct{})
	}
	ch := h.wake
	h.mu.Unlock()
	<-ch
	h.mu.Lock()
}

func (sh *srvHandler) OnOpen(c *uringrt.CallbackConn) {
	h := &hconn{srv: sh, c: c}
	c.SetValue(h)
	c.SetLowWater(sh.s.maxQueued() / 2) // outbound.go
	sh.startTLS(c)                      // tls.go
	sh.s.track(h, true)
	h.setPhase(phaseNew)
	h.setState(http.StateNew)
	if sh.s.shuttingDown() {
		h.dead = true
		c.Close()
	}
}

func (sh *srvHandler) OnData(c *uringrt.CallbackConn, data []byte) {
	h, _ := c.Value().(*hconn)
	if h == nil {
		return
	}
	h.mu.Lock()
	if h.hj != nil {
		if h.hj.tk != nil {
			h.takeoverData(c, data)
			return
		}
		h.hj.feed(data)
		h.mu.Unlock()
		return
	}
	if h.dead {
		h.mu.Unlock()
		return
	}
	if h.busy {
		h.appendIn(data)
		h.signal()
		if !h.paused && h.buffered() > inHighWater {
			h.paused = true
			pauseRead(c)
		}
		h.mu.Unlock()
		return
	}
	own := h.in != nil && h.buffered() > 0
	if own {
		h.appendIn(data)
		data = h.in[h.r:]
	}
	if h.post {
		// After a POST, up to 4 CR or LF bytes before the next request
		// are skipped (RFC 9112 tolerance for old clients).
		if k := leadingCRLF(data); k > 0 {
			h.scan = 0 // the head starts after them
			data = data[k:]
			if own {
				h.consumed(k)
			} else {
				c.Discard(k) // consumed: not kept with a partial head
			}
		}
		if len(data) > 0 {
			h.post = false
		}
	}
	if len(data) == 0 {
		if !own {
			c.Discard(-1)
		}
		h.mu.Unlock()
		return
	}
	seen := int(h.scan) // (bytes of the head looked at before)
	p, n, err := sh.parse(h, data, true)
	h.kept = 0
	if err == errIncomplete {
		if !own {
			c.Peek(-1) // framing: the runtime keeps the partial head for the next OnData
			h.kept = int32(len(data))
		}
		h.partialHead(data, seen) // timeouts.go
		h.mu.Unlock()
		return
	}
	if !own {
		c.Discard(-1) // all taken: the rest, if any, is copied below
	}
	if err == errBigHead {
		// Its parse would hold the loop's other connections up for
		// milliseconds: the goroutine that serves it parses it.
		if !own {
			h.appendIn(data)
		}
		h.busy = true
		h.mu.Unlock()
		go h.parseAndServe()
		return
	}
	if err != nil {
		h.dead = true
		h.releaseIn()
		h.mu.Unlock()
		h.errorReply(err, true)
		return
	}
	if own {
		h.consumed(n)
	} else if rest := data[n:]; len(rest) > 0 {
		h.appendIn(rest)
	}
	h.busy = true
	h.setPhase(phaseActive)
	h.mu.Unlock()
	sh.s.dispatch(c, p)
}

// bigHeadOnLoop is the largest head parsed on the loop (bytes): a
// larger one (about half a millisecond of parsing and more) is parsed by
// the goroutine that serves it.
const bigHeadOnLoop = 64 << 10

// errBigHead: the head is complete and over bigHeadOnLoop.
var errBigHead = errors.New("uringhttp: request head to parse off the loop")

// parseAndServe parses the head at the start of the connection's input
// and serves it (a goroutine of its own, busy set).
func (h *hconn) parseAndServe() {
	h.mu.Lock()
	w, n, err := h.srv.parse(h, h.in[h.r:], false)
	if err != nil {
		h.failInFlight(err)
		h.reportClosed()
		return
	}
	h.consumed(n)
	h.setPhase(phaseActive)
	h.mu.Unlock()
	h.serve(w)
}

// parse parses the head at the start of data (mu held): the request, the
// head's length, or errIncomplete, or the error to answer; onLoop: a
// complete head over bigHeadOnLoop is left unparsed, errBigHead.
func (sh *srvHandler) parse(h *hconn, data []byte, onLoop bool) (*response, int, error) {
	limit := sh.s.maxHeaderBytes() + 4096
	from := int(h.scan)
	if from > len(data) {
		from = 0
	}
	n := headEnd(data, from)
	if n < 0 {
		if len(data) >= limit {
			h.scan = 0
			return nil, 0, errTooLarge
		}
		// The next call, with these bytes and more, resumes the search
		// where this one stopped.
		h.scan = int32(min(len(data), math.MaxInt32))
		return nil, 0, errIncomplete
	}
	h.scan = 0
	if n > limit {
		return nil, 0, errTooLarge
	}
	if onLoop && n > bigHeadOnLoop {
		return nil, 0, errBigHead
	}
	w := getResponse()
	p := &w.p
	a := new(reqAlloc)
	a.ctx.init(h.connCtx())
	p.rctx = &a.ctx
	if err := parseHead(&a.ctx, string(data[:n]), p, &a.url); err != nil {
		a.ctx.cancel(context.Canceled)
		w.release()
		return nil, 0, err
	}
	h.stampRequest()
	w.init(h)
	return w, n, nil
}

func leadingCRLF(b []byte) int {
	n := 0
	for _, c := range b {
		if c != '\r' && c != '\n' || n == 4 {
			break
		}
		n++
	}
	return n
}

// OnReadEOF: the peer closed its writing side. A request in flight is
// still answered (the connection is closed after it) and its context is
// cancelled, as net/http does; a partial request head gets 400.
func (sh *srvHandler) OnReadEOF(c *uringrt.CallbackConn) bool {
	h, _ := c.Value().(*hconn)
	if h == nil {
		return false
	}
	h.mu.Lock()
	if h.rdErr == nil {
		h.rdErr = io.EOF
	}
	h.signal()
	if h.hj != nil {
		if h.hj.tk != nil {
			return h.takeoverEOF(c)
		}
		h.hj.eof()
		h.mu.Unlock()
		return true
	}
	if h.busy {
		// The client is gone once its request is read: cancel.
		rctx := h.rctx
		if h.body != nil && !h.body.sawEOF {
			rctx = nil
		}
		h.mu.Unlock()
		if rctx != nil {
			rctx.cancel(context.Canceled)
		}
		return true
	}
	rest := h.buffered() + int(h.kept)
	partial := rest > 0
	if h.phase.Load() != phaseNew && rest < 4 {
		partial = false // after a request, net/http waits for 4 bytes
	}
	dead := h.dead
	h.dead = true
	h.mu.Unlock()
	if dead {
		// Whoever marked the connection dead closes it, after the error
		// answer it may be writing (failInFlight, off the loop): closing
		// it here would drop that answer.
		return true
	}
	if partial {
		h.errorReply(protoError("unexpected EOF"), true)
		return true
	}
	return false
}

func (sh *srvHandler) OnClose(c *uringrt.CallbackConn, err error) {
	h, _ := c.Value().(*hconn)
	if h == nil {
		return
	}
	h.mu.Lock()
	h.closed = true
	if h.rdErr == nil || h.rdErr == io.EOF {
		if err == nil || err == io.EOF {
			h.rdErr = io.ErrUnexpectedEOF
		} else {
			h.rdErr = err
		}
	}
	h.signal()
	hj := h.hj
	if hj != nil {
		hj.closedByPeer()
	} else if !h.busy {
		h.releaseIn()
	}
	// With a request in flight, StateClosed waits for its end
	// (reportClosed), after its StateActive.
	rep := hj == nil && !h.busy && !h.stDone
	if rep {
		h.stDone = true
	}
	rctx := h.rctx
	h.mu.Unlock()
	if rctx != nil {
		rctx.cancel(context.Canceled)
	}
	if hj != nil && hj.tk != nil {
		h.takeoverClose(c, err)
	}
	sh.s.track(h, false)
	if rep {
		h.setState(http.StateClosed)
	}
}

// MayBlock: the callbacks never block (handlers run on goroutines).
func (sh *srvHandler) MayBlock() bool { return false }
