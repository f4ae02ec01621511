package uringhttp

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

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
	phase  atomic.Int32  // for the timeouts
	drains atomic.Uint32 // OnDrained calls, so that a writer misses none
	scan   int32         // bytes at the start of the unfinished head searched for its end (mu)
	hj     *hijackConn   // set once hijacked (mu)

	rctx  *reqContext     // the context of the request in flight (mu)
	body  *body           // its body, or nil (mu)
	since atomic.Int64    // monotonic ns when the phase began (timeouts.go)
	reqAt atomic.Int64    // monotonic ns when the request in flight was read
	ctx   context.Context // connection context (ConnContext), lazily
	raddr string
	hc    *hijackConn // the connection as a net.Conn for hooks and Hijack (lazily)
	out   []byte      // response bytes not yet handed to the connection (serving goroutine only)
	w     *response   // the response being written (serving goroutine only)
	werr  error       // a write failed (serving goroutine only)
}

// deadline flags of a connection (hconn.dl)
const (
	dlWexp   uint32 = 1 << iota // WriteTimeout (or the handler's write deadline) passed: writes fail
	dlRexp                      // ReadTimeout (or the handler's read deadline) passed: body reads fail
	dlWown                      // the handler set a write deadline: WriteTimeout no longer applies to its request
	dlRown                      // the handler set a read deadline: ReadTimeout no longer applies to its request
	dlTimer                     // the connection's timeout timer is armed (timeouts.go)
	dlCut400                    // ReadHeaderTimeout now would answer 400, as net/http (the partial head's last line)
	dlNL1                       // the partial head holds a line end (its request line is whole)
	dlNL2                       // and a second one (a header line is whole)
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

// phases of a connection, for the timeouts
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
	inRecvMax   = 64 << 10 // what one receive may bring past the mark (a bundle of provided buffers)
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

// srvHandler is the callback handler of one Serve call.
type srvHandler struct {
	s    *Server
	tls  *tls.Config     // ServeTLS's, or nil (tls.go)
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
