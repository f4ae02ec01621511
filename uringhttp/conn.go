package uringhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	uringrt "github.com/uringrt/uringrt/runtime"
)

// hconn is one connection's state. An idle keep-alive connection holds
// this struct and nothing else: no goroutine, no buffer (input and output
// buffers come from pools while a request is under way).
//
// The loop (OnData, OnReadEOF, OnClose, OnDrained) and the goroutine
// serving a request share it under mu.
type hconn struct {
	srv *srvHandler
	c   *uringrt.CallbackConn

	mu     sync.Mutex
	wake   chan struct{} // closed by signal: waiters for input or a drain (lazily, mu)
	in     []byte        // input received while a request is served (pooled), read from r
	r      int
	rdErr  error         // input ended: io.EOF (peer's FIN), net.ErrClosed, a timeout
	busy   bool          // a goroutine serves a request
	dead   bool          // answered an error or closing: input is ignored
	closed bool          // OnClose ran
	stDone bool          // StateClosed reported (mu): once, after the request in flight's states
	killed bool          // Server.Close closed it: writes fail at once
	paused bool          // reading paused for backpressure
	post   bool          // the last request was a POST (leading CRLF tolerance)
	dl     atomic.Uint32 // deadline flags (dlWexp...), one word so that an idle connection stays in its size class
	shut   atomic.Bool   // closing for Shutdown/Close
	kept   int32         // bytes of a partial head the runtime keeps for the next OnData
	phase  atomic.Int32  // for the timeout sweep
	drains atomic.Uint32 // OnDrained calls, so that a writer misses none
	hj     *hijackConn   // set once hijacked (mu)

	rctx  *reqContext     // the context of the request in flight (mu)
	body  *body           // its body, or nil (mu)
	since atomic.Int64    // coarse ns when the phase began
	reqAt atomic.Int64    // coarse ns when the request in flight was read
	ctx   context.Context // connection context (ConnContext), lazily
	raddr string
	hc    *hijackConn // the connection as a net.Conn for hooks and Hijack (lazily)
	out   []byte      // response bytes not yet handed to the connection (serving goroutine only)
	w     *response   // the response being written (serving goroutine only)
	werr  error       // a write failed (serving goroutine only)
}

// deadline flags of a connection (hconn.dl)
const (
	dlWexp uint32 = 1 << iota // WriteTimeout (or the handler's write deadline) passed: writes fail
	dlRexp                    // ReadTimeout (or the handler's read deadline) passed: body reads fail
	dlWown                    // the handler set a write deadline: WriteTimeout no longer applies to its request
	dlRown                    // the handler set a read deadline: ReadTimeout no longer applies to its request
)

// dlIs reports whether deadline flag f is set (any goroutine).
func (h *hconn) dlIs(f uint32) bool { return h.dl.Load()&f != 0 }

// dlSet sets or clears the deadline flags f (any goroutine).
func (h *hconn) dlSet(f uint32, on bool) {
	if on {
		h.dl.Or(f)
	} else {
		h.dl.And(^f)
	}
}

// phases of a connection, for the timeout sweep
const (
	phaseNew      = iota // accepted, no request yet
	phaseIdle            // between requests
	phaseHead            // a request head is arriving
	phaseActive          // a request is being served
	phaseHijacked        // the handler owns the connection: no server timeout applies
)

const (
	inHighWater = 64 << 10 // pause reading when this much input waits
	inLowWater  = 16 << 10 // and resume under this
	outFlushAt  = 4 << 10  // connection-level output buffer, as net/http's bufio.Writer
)

var bufPool = sync.Pool{New: func() any { return new([4096]byte) }}

func getBuf() []byte { return bufPool.Get().(*[4096]byte)[:0] }

// putBuf gives back a buffer of getBuf (one that grew past it goes to
// the GC).
func putBuf(b []byte) {
	if cap(b) == 4096 {
		bufPool.Put((*[4096]byte)(b[:4096]))
	}
}

func (h *hconn) conn() *uringrt.CallbackConn { return h.c }

// netConn returns the connection as a net.Conn (the same value every call).
func (h *hconn) netConn() net.Conn { return h.hijackConn() }

func (h *hconn) hijackConn() *hijackConn {
	if h.hc == nil {
		h.hc = &hijackConn{h: h}
	}
	return h.hc
}

func (h *hconn) remoteAddr() string {
	if h.raddr == "" {
		if a := h.c.RemoteAddr(); a != nil {
			h.raddr = a.String()
		}
	}
	return h.raddr
}

func (h *hconn) setState(st http.ConnState) {
	if f := h.srv.s.ConnState; f != nil {
		f(h.netConn(), st)
	}
}

func (h *hconn) setPhase(p int32) {
	h.phase.Store(p)
	if h.srv.s.sweeping() {
		h.since.Store(h.srv.s.coarseNow())
	} else if p == phaseNew {
		h.since.Store(monoNow()) // for Shutdown's 5 s grace of a new connection
	}
}

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

// srvHandler is the callback handler of one Serve call.
type srvHandler struct {
	s    *Server
	ctx  context.Context // BaseContext with ServerContextKey
	lctx atomic.Pointer[localCtx]
}

// localCtx is a connection context without ConnContext, shared by the
// connections whose LocalAddr is the same net.Addr (the runtime gives the
// connections of a listener on a specified address the listener's): an
// idle connection then holds no context of its own.
type localCtx struct {
	addr net.Addr
	ctx  context.Context
}

func (sh *srvHandler) OnOpen(c *uringrt.CallbackConn) {
	h := &hconn{srv: sh, c: c}
	c.SetValue(h)
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
	p, n, err := sh.parse(h, data)
	h.kept = 0
	if err == errIncomplete {
		if !own {
			c.Peek(-1) // framing: the runtime keeps the partial head for the next OnData
			h.kept = int32(len(data))
		}
		if h.phase.Load() != phaseNew && h.phase.Load() != phaseHead {
			h.setPhase(phaseHead)
		}
		h.mu.Unlock()
		return
	}
	if !own {
		c.Discard(-1) // all taken: the rest, if any, is copied below
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

// parse parses the head at the start of data (mu held): the request, the
// head's length, or errIncomplete, or the error to answer.
func (sh *srvHandler) parse(h *hconn, data []byte) (*response, int, error) {
	limit := sh.s.maxHeaderBytes() + 4096
	n := headEnd(data)
	if n < 0 {
		if len(data) >= limit {
			return nil, 0, errTooLarge
		}
		return nil, 0, errIncomplete
	}
	if n > limit {
		return nil, 0, errTooLarge
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
	if sh.s.sweeping() {
		h.reqAt.Store(sh.s.coarseNow())
	}
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

// connCtx returns the connection's context: the server's base context
// with the local address and ConnContext applied (built at first use).
func (h *hconn) connCtx() context.Context {
	if h.ctx != nil {
		return h.ctx
	}
	la := h.c.LocalAddr()
	cc := h.srv.s.ConnContext
	if cc == nil && la != nil {
		if lc := h.srv.lctx.Load(); lc != nil && sameAddrObject(lc.addr, la) {
			h.ctx = lc.ctx
			return lc.ctx
		}
	}
	ctx := context.WithValue(h.srv.ctx, http.LocalAddrContextKey, la)
	if cc != nil {
		ctx = cc(ctx, h.netConn())
		if ctx == nil {
			panic("ConnContext returned nil")
		}
	} else if la != nil {
		h.srv.lctx.Store(&localCtx{addr: la, ctx: ctx})
	}
	h.ctx = ctx
	return ctx
}

// sameAddrObject reports whether a and b are the same address object.
func sameAddrObject(a, b net.Addr) bool {
	switch x := a.(type) {
	case *net.TCPAddr:
		y, ok := b.(*net.TCPAddr)
		return ok && x == y
	case *net.UnixAddr:
		y, ok := b.(*net.UnixAddr)
		return ok && x == y
	}
	return false
}

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
				h.consumed(k)
			}
		}
		if h.buffered() > 0 {
			h.post = false
			next, n, err := h.srv.parse(h, h.in[h.r:])
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
			h.setPhase(phaseHead)
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

// writeOut adds response bytes to the connection's output (serving
// goroutine), handing them to the connection when 4 KiB are gathered.
func (h *hconn) writeOut(p []byte) (int, error) {
	if h.werr != nil {
		return 0, h.werr
	}
	if h.out == nil {
		if len(p) >= outFlushAt {
			if err := h.send(p); err != nil {
				return 0, err
			}
			return len(p), nil
		}
		h.out = h.takeOut()
	}
	if len(h.out)+len(p) > outFlushAt && len(h.out) > 0 {
		if err := h.flushOut(); err != nil {
			return 0, err
		}
		if len(p) >= outFlushAt {
			if err := h.send(p); err != nil {
				return 0, err
			}
			return len(p), nil
		}
		if h.out == nil {
			h.out = h.takeOut()
		}
	}
	h.out = append(h.out, p...)
	return len(p), nil
}

func (h *hconn) writeOutString(s string) (int, error) {
	if h.out != nil && len(h.out)+len(s) <= outFlushAt {
		h.out = append(h.out, s...)
		return len(s), nil
	}
	return h.writeOut([]byte(s))
}

// flushOut hands the gathered output to the connection.
func (h *hconn) flushOut() error {
	if h.out == nil {
		return h.werr
	}
	var err error
	if len(h.out) > 0 {
		err = h.send(h.out)
	}
	h.giveOut(h.out)
	h.out = nil
	return err
}

// takeOut returns an output buffer: the current response's, or a pooled
// one. A response keeps its buffer across its reuses, so a request costs
// no pool operation for it.
func (h *hconn) takeOut() []byte {
	if w := h.w; w != nil && w.obuf != nil {
		b := w.obuf
		w.obuf = nil
		return b[:0]
	}
	return getBuf()
}

func (h *hconn) giveOut(b []byte) {
	if w := h.w; w != nil && w.obuf == nil && cap(b) == 4096 {
		w.obuf = b[:0]
		return
	}
	putBuf(b)
}

// send writes p to the connection, waiting while its output queue is full
// (OnDrained wakes it): a handler that writes faster than its client reads
// blocks here.
func (h *hconn) send(p []byte) error {
	if h.werr != nil {
		return h.werr
	}
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

func (sh *srvHandler) OnDrained(c *uringrt.CallbackConn) {
	h, _ := c.Value().(*hconn)
	if h == nil {
		return
	}
	h.mu.Lock()
	h.drains.Add(1)
	h.signal()
	h.mu.Unlock()
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
	if partial && !dead {
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
	sh.s.track(h, false)
	if rep {
		h.setState(http.StateClosed)
	}
}

// MayBlock: the callbacks never block (handlers run on goroutines).
func (sh *srvHandler) MayBlock() bool { return false }
