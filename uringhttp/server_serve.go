package uringhttp

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"time"

	uringrt "github.com/uringrt/uringrt/runtime"
)

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

// Serve serves HTTP on ln, a uringrt listener (uringrt.Listen, a
// Runtime's Listen, a uringrt.ListenConfig), on the runtime that made it
// (s.Runtime may be left nil; when set it must be that runtime):
// connections are read on the runtime's loops and requests handed to
// handlers on goroutines. ln is
// the caller's and is used as it is (it may carry other protocols than
// HTTP): Serve sets no socket option on it, so its accepts are deferred
// only if it was made so (a uringrt.ListenConfig with DeferAccept set).
// It blocks
// until the listener is closed and returns http.ErrServerClosed after
// Shutdown or Close (called before Serve, too: ln is then closed), or the
// error that ended serving: at once for a listener that is not a uringrt
// listener (a net.Listen listener: serve that with net/http), one of
// another runtime than a non-nil s.Runtime, or one served already; the
// error says which and what to do.
func (s *Server) Serve(ln net.Listener) error { return s.serve(ln, nil) }

// serve is Serve, with TLS under cfg when not nil (ServeTLS).
func (s *Server) serve(ln net.Listener, cfg *tls.Config) error {
	if s.shuttingDown() {
		ln.Close()
		return http.ErrServerClosed
	}
	rt, err := s.serveRuntime(ln)
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
	sh := &srvHandler{s: s, ctx: context.WithValue(base, http.ServerContextKey, s.netHTTPView()), tls: cfg}
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
// http.Server's does; hijacked connections are not waited for, taken-over
// ones are (TakeOverShutdowner). If ctx ends
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
	s.shutdownH2() // tls.go: GOAWAY to the HTTP/2 connections
	interval := time.Millisecond
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		if s.closeIdle() {
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
// excepted, taken-over ones included); requests in flight see their context cancelled, and their
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
		hj, rctx := h.hj != nil && h.hj.tk == nil, h.rctx
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
		// As net/http's StateIdle: between requests, the next head
		// begun or not (net/http's connection turns active once a whole
		// head is read); a new connection after 5 s. Decided under mu, so
		// that a head the loop completes meanwhile is served or dropped,
		// never both.
		h.mu.Lock()
		if h.hj != nil && h.hj.tk == nil || h.closed {
			h.mu.Unlock()
			continue
		}
		if h.hj != nil { // taken over (a websocket): its handler says goodbye
			h.mu.Unlock()
			if h.takeoverShutdown() {
				quiet = false // until its OnClose
			}
			continue
		}
		ph := h.phase.Load()
		idle := !h.busy && (ph == phaseIdle || ph == phaseHead || ph == phaseNew && now-h.since.Load() > int64(5*time.Second) || h.shut.Load())
		if !idle {
			h.mu.Unlock()
			quiet = false
			continue
		}
		closing := !h.shut.Swap(true)
		if closing {
			h.dead = true
		}
		h.mu.Unlock()
		if closing {
			h.c.Close()
		}
		quiet = false // until its OnClose
	}
	return quiet
}
