package uringhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"time"
)

const errorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// errorReply answers a request that could not be read as net/http does, and
// closes the connection; active: report StateActive first (the serving
// goroutine reports it itself while its request is still in flight, so
// that a StateClosed from OnClose cannot come before it).
func (h *hconn) errorReply(err error, active bool) {
	if h.srv.s.shuttingDown() {
		h.c.Close()
		return
	}
	var msg string
	var ute *unsupportedTEError
	switch {
	case err == errTooLarge:
		const publicErr = "431 Request Header Fields Too Large"
		msg = "HTTP/1.1 " + publicErr + errorHeaders + publicErr
	case errors.As(err, &ute):
		msg = "HTTP/1.1 501 Not Implemented" + errorHeaders + "Unsupported transfer encoding"
	default:
		if v, ok := err.(statusError); ok {
			msg = fmt.Sprintf("HTTP/1.1 %d %s: %s%s%d %s: %s", v.code, http.StatusText(v.code), v.text, errorHeaders, v.code, http.StatusText(v.code), v.text)
		} else {
			const publicErr = "400 Bad Request"
			msg = "HTTP/1.1 " + publicErr + errorHeaders + publicErr
		}
	}
	if active {
		h.setState(http.StateActive)
	}
	h.c.Write([]byte(msg))
	h.c.Close()
}

// failInFlight ends the serving of a connection whose next input is an
// error to answer (mu held on entry, released): StateActive is reported
// while the connection is still busy, then it is marked dead and idle and
// err answered.
func (h *hconn) failInFlight(err error) {
	h.dead = true
	h.mu.Unlock()
	h.setState(http.StateActive)
	h.mu.Lock()
	h.busy = false
	h.releaseIn()
	h.mu.Unlock()
	if f := h.srv.s.testHookFailInFlight; f != nil {
		f(h)
	}
	h.errorReply(err, false)
}

// serve runs the handler for p and for the pipelined requests already
// received after it, in order, then returns: the goroutine ends when the
// connection goes idle.
func (h *hconn) serve(w *response) {
	returned := false
	defer func() {
		if !returned {
			// The handler ended its goroutine (runtime.Goexit): as
			// net/http, cancel the request, send what was flushed and
			// close the connection.
			h.abandon()
		}
		h.reportClosed()
	}()
	h.serveLoop(w)
	returned = true
}

// abandon closes the connection of a request whose handler ended its
// goroutine (serving goroutine).
func (h *hconn) abandon() {
	h.endRequest()
	h.mu.Lock()
	hijacked := h.hj != nil
	if !hijacked {
		h.dead = true
		h.busy = false
		h.releaseIn()
	}
	h.mu.Unlock()
	if !hijacked {
		h.flushOut()
		h.c.Close()
	}
}

// reportClosed reports StateClosed for a connection that closed while a
// request was in flight (OnClose leaves it to the request's end, so that
// it follows the request's StateActive, as in net/http).
func (h *hconn) reportClosed() {
	h.mu.Lock()
	rep := h.closed && !h.busy && h.hj == nil && !h.stDone
	if rep {
		h.stDone = true
	}
	h.mu.Unlock()
	if rep {
		h.setState(http.StateClosed)
	}
}

// serveLoop is serve without its deferred end.
func (h *hconn) serveLoop(w *response) {
	for {
		keep, hijacked := h.serveOne(w)
		if hijacked {
			return
		}
		method := w.req.Method
		w.release()
		if !keep {
			h.mu.Lock()
			h.dead = true
			h.busy = false
			h.releaseIn()
			h.mu.Unlock()
			h.c.Close()
			return
		}
		h.setState(http.StateIdle)
		h.mu.Lock()
		h.post = method == "POST"
		if h.post {
			if k := leadingCRLF(h.in[h.r:]); k > 0 {
				h.scan = 0 // the head starts after them
				h.consumed(k)
			}
		}
		if h.buffered() > 0 {
			h.post = false
			seen := int(h.scan)
			next, n, err := h.srv.parse(h, h.in[h.r:], false)
			if err == nil {
				h.consumed(n)
				h.setPhase(phaseActive)
				h.mu.Unlock()
				w = next
				continue
			}
			if err != errIncomplete {
				h.failInFlight(err)
				return
			}
			h.setPhase(phaseIdle)
			h.partialHead(h.in[h.r:], seen) // timeouts.go
		} else {
			h.setPhase(phaseIdle)
		}
		if h.rdErr != nil && h.buffered() >= 4 {
			// As net/http between requests: a residue of 4 bytes or
			// more before the FIN is a request cut short (400), less is
			// not answered.
			h.failInFlight(protoError("unexpected EOF"))
			return
		}
		h.busy = false
		h.dlSet(dlWexp|dlRexp, false)
		h.releaseIn()
		if h.paused {
			h.paused = false
			resumeRead(h.c)
		}
		eof := h.rdErr != nil
		h.mu.Unlock()
		if eof {
			h.c.Close()
		}
		return
	}
}

// serveOne serves one request and reports whether the connection stays
// open for the next.
func (h *hconn) serveOne(w *response) (keep, hijacked bool) {
	s := h.srv.s
	p := &w.p
	req := p.req
	req.RemoteAddr = h.remoteAddr()
	h.requestTLS(req) // tls.go
	h.w = w
	defer func() {
		h.w = nil
		if hc := h.hc; hc != nil && !w.hijacked && (hc.rdTimer != nil || hc.wrTimer != nil) {
			// A deadline the handler set (ResponseController) ends with
			// its request.
			h.setDeadline(time.Time{}, false)
			h.setDeadline(time.Time{}, true)
		}
		if !w.hijacked {
			h.dlSet(dlRown|dlWown, false)
		}
	}()
	var b *body
	if p.hasBody {
		b = &body{h: h, w: w, req: req, chunked: p.chunked, remain: p.clen}
		req.Body = b
		w.body = b
		if hasToken(p.expect, "100-continue") {
			if req.ProtoAtLeast(1, 1) && req.ContentLength != 0 {
				b.continueReader = true
				w.canWriteContinue.Store(true)
			}
		}
	} else {
		req.Body = http.NoBody
	}
	h.mu.Lock()
	h.rctx, h.body = p.rctx, b
	// The client may be gone already: OnReadEOF or OnClose (or
	// Server.Close) ran between the head's parse and now, when there was
	// no context to cancel. Cancel it as they would have.
	gone := h.closed || h.killed || h.rdErr != nil && b == nil
	h.mu.Unlock()
	if gone {
		p.rctx.cancel(context.Canceled)
	}
	if !hasToken(p.expect, "100-continue") && p.expect != "" {
		// Expect other than 100-continue: 417 and close.
		h.setState(http.StateActive)
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusExpectationFailed)
		w.finishRequest()
		h.flushOut()
		h.endRequest()
		return false, false
	}
	w.reqBody = req.Body
	h.setState(http.StateActive)
	handler := s.Handler
	if handler == nil {
		handler = http.DefaultServeMux
	}
	if req.RequestURI == "*" && req.Method == "OPTIONS" {
		handler = globalOptions{}
	}
	ok := h.runHandler(handler, w, req)
	h.endRequest()
	if w.hijacked {
		return false, true
	}
	if !ok {
		return false, false
	}
	w.finishRequest()
	h.flushOut()
	if !w.shouldReuseConnection() || s.shuttingDown() {
		return false, false
	}
	return true, false
}

// endRequest cancels the request's context and forgets it.
func (h *hconn) endRequest() {
	h.mu.Lock()
	rctx := h.rctx
	if h.body != nil {
		h.body.orphaned = true
	}
	h.rctx, h.body = nil, nil
	h.mu.Unlock()
	if rctx != nil {
		rctx.cancel(context.Canceled)
	}
}

// runHandler runs the handler; false after a panic (logged unless it was
// http.ErrAbortHandler), when the connection is closed.
func (h *hconn) runHandler(handler http.Handler, w *response, req *http.Request) (ok bool) {
	defer func() {
		if err := recover(); err != nil {
			if err != http.ErrAbortHandler {
				const size = 64 << 10
				buf := make([]byte, size)
				buf = buf[:runtime.Stack(buf, false)]
				h.srv.s.logf("http: panic serving %v: %v\n%s", h.remoteAddr(), err, buf)
			}
			w.disableWriteContinue()
			if !w.hijacked {
				h.flushOut()
			}
			ok = false
		}
	}()
	handler.ServeHTTP(w, req)
	return true
}

type globalOptions struct{}

func (globalOptions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Length", "0")
	if r.ContentLength != 0 {
		mb := http.MaxBytesReader(w, r.Body, 4<<10)
		io.Copy(io.Discard, mb)
	}
}
