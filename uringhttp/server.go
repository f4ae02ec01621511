package uringhttp

import (
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	uringrt "github.com/uringrt/uringrt/runtime"
)

// Server serves HTTP/1.1 on the callback API of a uringrt runtime (Linux
// 6.0+ for multishot receives; Go's net on a runtime that fell back to it).
// Its fields mean what http.Server's of the same name mean. A Server must
// not be copied after first use, and serves no longer once Shutdown or
// Close was called.
type Server struct {
	// Addr is the TCP address ListenAndServe listens on (":http" when empty).
	Addr string
	// Handler answers requests; nil means http.DefaultServeMux.
	Handler http.Handler
	// ReadHeaderTimeout bounds the reading of a request's head, from the
	// connection's start (first request) or the request's first byte
	// (later ones); a connection that passes it is closed, as a slow
	// client (slowloris) is by net/http: with 400 Bad Request when part of
	// a head came, without an answer when nothing did. 0 means ReadTimeout.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds the reading of a whole request, body included:
	// past it, Body reads fail with a timeout error. 0 means none.
	ReadTimeout time.Duration
	// WriteTimeout bounds the writing of a response, from the end of the
	// request's head: past it, writes fail and the connection is closed
	// after the handler returns. 0 means none.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle that long between
	// requests; 0 means ReadTimeout, and both 0 none.
	IdleTimeout time.Duration
	// DeferAccept, when positive, makes ListenAndServe's listener defer
	// accepts (TCP_DEFER_ACCEPT, in whole seconds rounded up; Linux 2.6.32
	// or later): a connection reaches the server, and ConnState's StateNew,
	// with its first request bytes, so the server is woken once per
	// connection instead of twice (on loopback a `Connection: close`
	// client pays for both wake-ups). A client that connects and sends
	// nothing reaches the server only about DeferAccept later; and one that
	// is still unaccepted when Shutdown or Close closes the listener is
	// dropped by the kernel without a FIN or RST: it learns of it (a reset)
	// only when it sends. Zero, the default, accepts at the handshake, as
	// net/http does. Serve does not use it (its listener is the caller's).
	DeferAccept time.Duration
	// MaxHeaderBytes bounds a request's head in bytes (plus 4096, as
	// net/http's reader allows); larger heads get 431. 0 means
	// http.DefaultMaxHeaderBytes (1 MiB).
	MaxHeaderBytes int
	// ErrorLog receives the server's errors (a handler's panic, a second
	// WriteHeader); nil means the log package's standard logger.
	ErrorLog *log.Logger
	// ConnState is called when a connection changes state (http.ConnState).
	// StateNew and StateClosed are reported from the connection's loop, so
	// the function must not block.
	ConnState func(net.Conn, http.ConnState)
	// BaseContext returns the base context of the requests of a listener;
	// nil means context.Background().
	BaseContext func(net.Listener) context.Context
	// ConnContext derives a connection's context from the base context.
	ConnContext func(ctx context.Context, c net.Conn) context.Context
	// Runtime is the uringrt runtime of the listeners Serve gets and that
	// ListenAndServe listens on; nil means the default runtime
	// (uringrt.Default).
	Runtime *uringrt.Runtime
	// OffLoopHandlers, when true, runs every handler on the server's
	// goroutines. By default a handler runs on the event loop that read its
	// request, between the loop's batches, and its answer leaves with the
	// loop's next submission; a handler that waits for its request's body,
	// for its client to read, or hijacks its connection first hands the
	// loop to a new goroutine, and one that has not returned after one to
	// two milliseconds (it blocks, or works long) loses the loop that way
	// too, holding up the loop's other connections until then. After a
	// handler whose whole run (on the loop and after it) took over half a
	// millisecond, the server sends its next 256 requests, on every loop,
	// to its goroutines. Set it when most handlers block (a database call
	// on every request). It needs what uringrt.CallbackConn.RunOnLoop
	// needs (the default loops, amd64 or arm64); elsewhere handlers run on
	// the goroutines.
	OffLoopHandlers bool

	offLoop           atomic.Int32  // requests still to send to the goroutines after a slow handler on the loop
	slowOnLoop        time.Duration // a handler's run that counts as slow (0: slowOnLoop; tests set it)
	inShutdown        atomic.Bool
	disableKeepAlives atomic.Bool
	mu                sync.Mutex
	listeners         map[net.Listener]struct{}
	conns             map[*hconn]struct{}
	serving           sync.WaitGroup
	sweepOnce         sync.Once
	sweepStop         chan struct{}
	sweepOn           atomic.Bool
	clock             atomic.Int64 // coarse monotonic ns, kept by the sweep
	workers           workerPool
	onShutdown        []func() // RegisterOnShutdown's (mu)
}

var clockBase = time.Now()

func monoNow() int64 { return int64(time.Since(clockBase)) }

func (s *Server) logf(format string, args ...any) {
	if s.ErrorLog != nil {
		s.ErrorLog.Printf(format, args...)
	} else {
		log.Printf(format, args...)
	}
}

func (s *Server) maxHeaderBytes() int {
	if s.MaxHeaderBytes > 0 {
		return s.MaxHeaderBytes
	}
	return http.DefaultMaxHeaderBytes
}

func (s *Server) shuttingDown() bool { return s.inShutdown.Load() }

// SetKeepAlivesEnabled turns keep-alive on or off, as http.Server's does.
func (s *Server) SetKeepAlivesEnabled(v bool) {
	s.disableKeepAlives.Store(!v)
	if !v {
		s.closeIdle()
	}
}

func (s *Server) runtime() (*uringrt.Runtime, error) {
	if s.Runtime != nil {
		return s.Runtime, nil
	}
	return uringrt.Default()
}

// ListenAndServe listens on s.Addr (":http" when empty) with s.Runtime and
// serves; its listener defers accepts when s.DeferAccept is set. It returns http.ErrServerClosed
// after Shutdown or Close, the error of listening, or uringrt.Default's
// when s.Runtime is nil and no runtime can start.
func (s *Server) ListenAndServe() error {
	if s.shuttingDown() {
		return http.ErrServerClosed
	}
	addr := s.Addr
	if addr == "" {
		addr = ":http"
	}
	rt, err := s.runtime()
	if err != nil {
		return err
	}
	lc := &uringrt.ListenConfig{Runtime: rt, DeferAccept: s.DeferAccept}
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return err
	}
	return s.Serve(ln)
}

// Serve serves HTTP on ln, a listener of s.Runtime (uringrt.Listen for the
// default runtime, rt.Listen otherwise): connections are read on the
// runtime's loops and requests handed to handlers on goroutines. ln is
// the caller's and is used as it is (it may carry other protocols than
// HTTP): Serve sets no socket option on it, so its accepts are deferred
// only if it was made so (a uringrt.ListenConfig with DeferAccept set).
// It blocks
// until the listener is closed and returns http.ErrServerClosed after
// Shutdown or Close (called before Serve, too: ln is then closed), or the
// error that ended serving: at once for a listener that is not
// s.Runtime's (a net.Listen listener: serve that with net/http) or that
// is served already.
func (s *Server) Serve(ln net.Listener) error {
	if s.shuttingDown() {
		ln.Close()
		return http.ErrServerClosed
	}
	rt, err := s.runtime()
	if err != nil {
		return err
	}
	base := context.Background()
	if s.BaseContext != nil {
		base = s.BaseContext(ln)
		if base == nil {
			panic("BaseContext returned a nil context")
		}
	}
	sh := &srvHandler{s: s, ctx: context.WithValue(base, http.ServerContextKey, s.netHTTPView())}
	s.mu.Lock()
	if s.shuttingDown() {
		// Shutdown or Close began since the check above (BaseContext
		// ran meanwhile); they close the listeners they find under mu,
		// and ln is not among them.
		s.mu.Unlock()
		ln.Close()
		return http.ErrServerClosed
	}
	if s.listeners == nil {
		s.listeners = make(map[net.Listener]struct{})
	}
	s.listeners[ln] = struct{}{}
	s.serving.Add(1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
		s.serving.Done()
	}()
	s.startSweep()
	err = rt.Serve(ln, sh)
	if s.shuttingDown() {
		return http.ErrServerClosed
	}
	if err == nil {
		err = net.ErrClosed
	}
	return err
}

// track adds or removes a connection (its OnOpen and OnClose).
func (s *Server) track(h *hconn, add bool) {
	s.mu.Lock()
	if add {
		if s.conns == nil {
			s.conns = make(map[*hconn]struct{})
		}
		s.conns[h] = struct{}{}
	} else {
		delete(s.conns, h)
	}
	s.mu.Unlock()
}

// Shutdown stops accepting, closes idle connections, and waits for the
// requests in flight to be answered and their connections to close, as
// http.Server's does; hijacked connections are not waited for. If ctx ends
// first it returns ctx.Err() (the connections left are not closed: Close
// does that); otherwise the first error closing a listener returned, or
// nil.
func (s *Server) Shutdown(ctx context.Context) error {
	s.inShutdown.Store(true)
	s.mu.Lock()
	for _, f := range s.onShutdown {
		go f()
	}
	s.mu.Unlock()
	lnerr := s.closeListeners()
	s.serving.Wait()
	interval := time.Millisecond
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		if s.closeIdle() {
			s.stopSweep()
			s.workers.shutdown()
			return lnerr
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			interval = min(2*interval, 100*time.Millisecond)
			t.Reset(interval)
		}
	}
}

// RegisterOnShutdown registers f to be called, on a goroutine of its own,
// when Shutdown starts, as http.Server's does: a handler that holds its
// connection (a stream, a hijacked WebSocket) learns there to end it,
// since Shutdown does not wait for hijacked connections nor cancel the
// requests in flight. Close does not call f.
func (s *Server) RegisterOnShutdown(f func()) {
	s.mu.Lock()
	s.onShutdown = append(s.onShutdown, f)
	s.mu.Unlock()
}

// Close closes the listeners and every connection at once (hijacked ones
// excepted); requests in flight see their context cancelled, and their
// writes fail with net.ErrClosed. It returns the first error closing a
// listener returned, or nil.
func (s *Server) Close() error {
	s.inShutdown.Store(true)
	err := s.closeListeners()
	s.serving.Wait()
	s.mu.Lock()
	conns := make([]*hconn, 0, len(s.conns))
	for h := range s.conns {
		conns = append(conns, h)
	}
	s.mu.Unlock()
	for _, h := range conns {
		h.mu.Lock()
		hj, rctx := h.hj != nil, h.rctx
		if !hj {
			// With the context read under the same lock: a request
			// starting now sees killed and cancels its own (serveOne).
			h.killed = true
		}
		h.mu.Unlock()
		if hj {
			continue
		}
		if rctx != nil {
			rctx.cancel(context.Canceled)
		}
		// As net/http closes the socket under its handlers: the output
		// still queued is dropped when the client does not take it
		// (without this a Close waits the runtime's CloseTimeout for it),
		// and a handler blocked in Write for room gets net.ErrClosed now.
		h.c.SetWriteTimeout(closeDropAfter)
		h.c.Close()
		h.mu.Lock()
		h.signal()
		h.mu.Unlock()
	}
	s.stopSweep()
	s.workers.shutdown()
	return err
}

// closeDropAfter is how long Server.Close lets a connection's queued
// output wait for a client that takes none of it before it is dropped.
const closeDropAfter = 20 * time.Millisecond

func (s *Server) closeListeners() error {
	s.mu.Lock()
	lns := make([]net.Listener, 0, len(s.listeners))
	for ln := range s.listeners {
		lns = append(lns, ln)
	}
	s.mu.Unlock()
	var err error
	for _, ln := range lns {
		if cerr := ln.Close(); cerr != nil && err == nil && !errors.Is(cerr, net.ErrClosed) {
			err = cerr
		}
	}
	return err
}

// closeIdle closes the idle connections and reports whether none is left
// (hijacked ones aside).
func (s *Server) closeIdle() bool {
	s.mu.Lock()
	conns := make([]*hconn, 0, len(s.conns))
	for h := range s.conns {
		conns = append(conns, h)
	}
	s.mu.Unlock()
	quiet := true
	now := monoNow()
	for _, h := range conns {
		h.mu.Lock()
		hj, busy, closed := h.hj != nil, h.busy, h.closed
		h.mu.Unlock()
		if hj || closed {
			continue
		}
		ph := h.phase.Load()
		idle := !busy && (ph == phaseIdle || ph == phaseNew && now-h.since.Load() > int64(5*time.Second) || h.shut.Load())
		if !idle {
			quiet = false
			continue
		}
		if !h.shut.Swap(true) {
			h.mu.Lock()
			h.dead = true
			h.mu.Unlock()
			h.c.Close()
		}
		quiet = false // until its OnClose
	}
	return quiet
}

// The timeout sweep: one goroutine per server checks every connection's
// phase stamps every quarter of the shortest timeout (at least 5 ms, at
// most 1 s). A request pays two atomic stores of a coarse clock; no timer
// is armed per request or per connection.

func (s *Server) sweepPeriod() time.Duration {
	d := time.Duration(0)
	for _, t := range []time.Duration{s.ReadHeaderTimeout, s.ReadTimeout, s.WriteTimeout, s.IdleTimeout} {
		if t > 0 && (d == 0 || t < d) {
			d = t
		}
	}
	if d == 0 {
		return 0
	}
	return min(max(d/4, 5*time.Millisecond), time.Second)
}

func (s *Server) sweeping() bool { return s.sweepOn.Load() }

func (s *Server) coarseNow() int64 { return s.clock.Load() }

func (s *Server) startSweep() {
	p := s.sweepPeriod()
	if p == 0 {
		return
	}
	s.sweepOnce.Do(func() {
		s.clock.Store(monoNow())
		s.sweepOn.Store(true)
		s.sweepStop = make(chan struct{})
		go s.sweep(p, s.sweepStop)
	})
}

func (s *Server) stopSweep() {
	s.mu.Lock()
	if s.sweepStop != nil {
		close(s.sweepStop)
		s.sweepStop = nil
	}
	s.mu.Unlock()
}

func (s *Server) sweep(p time.Duration, stop chan struct{}) {
	t := time.NewTicker(p)
	defer t.Stop()
	var conns []*hconn
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		now := monoNow()
		s.clock.Store(now)
		conns = conns[:0]
		s.mu.Lock()
		for h := range s.conns {
			conns = append(conns, h)
		}
		s.mu.Unlock()
		for _, h := range conns {
			// Stamps are taken from the coarse clock, up to p behind the
			// real time: a timeout counts from the stamp plus p, so that
			// it never fires early.
			s.check(h, now-int64(p))
		}
		clear(conns)
	}
}

// check applies the timeouts to one connection.
func (s *Server) check(h *hconn, now int64) {
	since := now - h.since.Load()
	rht := s.ReadHeaderTimeout
	if rht <= 0 {
		rht = s.ReadTimeout
	}
	idle := s.IdleTimeout
	if idle <= 0 {
		idle = s.ReadTimeout
	}
	switch h.phase.Load() {
	case phaseNew, phaseHead:
		if rht > 0 && since > int64(rht) {
			h.timeoutClose()
		}
	case phaseIdle:
		if idle > 0 && since > int64(idle) {
			h.timeoutClose()
		}
	case phaseActive:
		at := now - h.reqAt.Load()
		if s.ReadTimeout > 0 && at > int64(s.ReadTimeout) && !h.dlIs(dlRexp|dlRown) {
			h.dlSet(dlRexp, true)
			h.mu.Lock()
			h.wakeAll()
			h.mu.Unlock()
		}
		if s.WriteTimeout > 0 && at > int64(s.WriteTimeout) && !h.dlIs(dlWexp|dlWown) {
			h.dlSet(dlWexp, true)
			h.mu.Lock()
			h.wakeAll()
			h.mu.Unlock()
		}
	}
}

// timeoutClose closes a connection whose head or idle time ran out,
// without an answer (as net/http: a read timeout is not answered).
func (h *hconn) timeoutClose() {
	h.mu.Lock()
	if h.busy || h.hj != nil || h.dead {
		h.mu.Unlock()
		return
	}
	h.dead = true
	partial := h.buffered()+int(h.kept) > 0
	h.mu.Unlock()
	if partial {
		// net/http answers a head cut by its deadline with 400.
		h.errorReply(protoError("timeout"), true)
		return
	}
	h.c.Close()
}

// netHTTPView returns an *http.Server carrying s's settings, the value of
// http.ServerContextKey in request contexts, as net/http puts its own
// server there: middleware that reads the server's Addr or timeouts
// through that key (by asserting *http.Server) works unchanged. It is a
// snapshot taken when Serve starts; it does not serve.
func (s *Server) netHTTPView() *http.Server {
	return &http.Server{
		Addr:              s.Addr,
		Handler:           s.Handler,
		ReadHeaderTimeout: s.ReadHeaderTimeout,
		ReadTimeout:       s.ReadTimeout,
		WriteTimeout:      s.WriteTimeout,
		IdleTimeout:       s.IdleTimeout,
		MaxHeaderBytes:    s.MaxHeaderBytes,
		ErrorLog:          s.ErrorLog,
		ConnState:         s.ConnState,
		BaseContext:       s.BaseContext,
		ConnContext:       s.ConnContext,
	}
}
