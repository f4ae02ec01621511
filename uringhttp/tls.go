package uringhttp

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/http2"

	uringrt "github.com/uringrt/uringrt/runtime"
)

// HTTPS. ServeTLS serves each connection of its listener with TLS on the
// callback API (uringrt.CallbackConn.StartTLS): the handshake runs on a
// goroutine of its own once the client's whole ClientHello arrived, within
// the TLS handshake timeout; after it an HTTP/1.1 connection (ALPN
// "http/1.1", or none) is served on the loops as a plain one, its records
// decrypted and sealed there, and an idle one holds no goroutine and no
// record buffer. ALPN "h2" hands the connection's *tls.Conn to
// golang.org/x/net/http2's server, as net/http does (a goroutine per
// connection and per stream, as there); another protocol to TLSNextProto.

// ServeTLS serves HTTPS on ln, a listener of s.Runtime, as http.Server's
// ServeTLS: s.TLSConfig (cloned; nil means an empty one) with the key pair
// of certFile and keyFile (PEM), which must be given unless the config has
// Certificates, GetCertificate or GetConfigForClient. HTTP/2 is offered
// ("h2" added to NextProtos, then "http/1.1") unless s.TLSNextProto is
// non-nil or GODEBUG has http2server=0, as net/http. A handshake is bounded
// by the smallest of ReadHeaderTimeout, ReadTimeout and WriteTimeout that
// is set (none: no bound, as net/http); a failed one is logged to ErrorLog
// ("http: TLS handshake error from ...") and a plaintext HTTP request is
// answered 400 in the clear. Requests carry r.TLS. It returns what Serve
// returns, or the error of loading the key pair.
func (s *Server) ServeTLS(ln net.Listener, certFile, keyFile string) error {
	cfg := s.TLSConfig.Clone()
	if cfg == nil {
		cfg = &tls.Config{}
	}
	if s.h2Enabled() {
		if !slices.Contains(cfg.NextProtos, "h2") {
			cfg.NextProtos = append(cfg.NextProtos, "h2")
		}
	}
	if !slices.Contains(cfg.NextProtos, "http/1.1") {
		cfg.NextProtos = append(cfg.NextProtos, "http/1.1")
	}
	hasCert := len(cfg.Certificates) > 0 || cfg.GetCertificate != nil || cfg.GetConfigForClient != nil
	if !hasCert || certFile != "" || keyFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return s.serve(ln, cfg)
}

// ListenAndServeTLS listens on s.Addr (":https" when empty) with
// s.Runtime and serves HTTPS (ServeTLS).
func (s *Server) ListenAndServeTLS(certFile, keyFile string) error {
	if s.shuttingDown() {
		return http.ErrServerClosed
	}
	addr := s.Addr
	if addr == "" {
		addr = ":https"
	}
	ln, err := s.listen(addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	return s.ServeTLS(ln, certFile, keyFile)
}

// h2Enabled reports whether ServeTLS offers HTTP/2: net/http's rule (no
// TLSNextProto of the user's, no GODEBUG http2server=0).
func (s *Server) h2Enabled() bool {
	if s.TLSNextProto != nil {
		return false
	}
	for _, kv := range strings.Split(os.Getenv("GODEBUG"), ",") {
		if strings.TrimSpace(kv) == "http2server=0" {
			return false
		}
	}
	return true
}

// tlsHandshakeTimeout is net/http's: the smallest positive of
// ReadHeaderTimeout, ReadTimeout and WriteTimeout.
func (s *Server) tlsHandshakeTimeout() time.Duration {
	var d time.Duration
	for _, v := range []time.Duration{s.ReadHeaderTimeout, s.ReadTimeout, s.WriteTimeout} {
		if v > 0 && (d == 0 || v < d) {
			d = v
		}
	}
	return d
}

// OnTLSHandshake ends a connection's handshake (uringrt.TLSHandshaker):
// a failure is logged (a plaintext HTTP request answered 400, as net/http
// does); ALPN h2 or a TLSNextProto protocol takes the connection off the
// loop.
func (sh *srvHandler) OnTLSHandshake(c *uringrt.CallbackConn, err error) {
	h, _ := c.Value().(*hconn)
	if h == nil {
		return
	}
	s := sh.s
	if err != nil {
		reason := err.Error()
		var re tls.RecordHeaderError
		if errors.As(err, &re) && looksLikeHTTP(re.RecordHeader) {
			c.Write([]byte("HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"))
			reason = "client sent an HTTP request to an HTTPS server"
		}
		s.logf("http: TLS handshake error from %s: %v", c.RemoteAddr(), reason)
		return
	}
	h.setPhase(phaseNew) // the head's timeout counts from here, as net/http's
	st, _ := c.TLSConnectionState()
	proto := st.NegotiatedProtocol
	if proto == "" || proto == "http/1.1" || proto == "http/1.0" {
		return
	}
	fn := s.nextProto(proto)
	if fn == nil {
		c.Close()
		return
	}
	tc, err := c.TLSConn()
	if err != nil {
		c.Close()
		return
	}
	h.mu.Lock()
	h.busy = true // (Shutdown waits for it, as for net/http's)
	h.mu.Unlock()
	h.setPhase(phaseHijacked)
	handler := s.Handler
	if handler == nil {
		handler = http.DefaultServeMux
	}
	view := s.h2View()
	go func() {
		fn(view, tc, handler)
		tc.Close()
		// StateClosed once, after the protocol's end: here when the
		// connection already closed, else by its OnClose.
		h.mu.Lock()
		h.busy = false
		rep := h.closed && !h.stDone
		if rep {
			h.stDone = true
		}
		h.mu.Unlock()
		if rep {
			h.setState(http.StateClosed)
		}
	}()
}

// nextProto returns the server for ALPN protocol proto: the user's
// TLSNextProto, else HTTP/2 for "h2".
func (s *Server) nextProto(proto string) func(*http.Server, *tls.Conn, http.Handler) {
	if s.TLSNextProto != nil {
		return s.TLSNextProto[proto]
	}
	if proto != "h2" || !s.h2Enabled() {
		return nil
	}
	return s.serveH2
}

// serveH2 serves HTTP/2 on tc with golang.org/x/net/http2 (the connection's
// goroutine).
func (s *Server) serveH2(hs *http.Server, tc *tls.Conn, handler http.Handler) {
	ctx := context.Background()
	if s.BaseContext != nil {
		ctx = s.BaseContext(nil)
	}
	ctx = context.WithValue(ctx, http.ServerContextKey, hs)
	if s.ConnContext != nil {
		ctx = s.ConnContext(ctx, tc)
	}
	s.h2srv.ServeConn(tc, &http2.ServeConnOpts{Context: ctx, BaseConfig: hs, Handler: handler})
}

// h2View is the http.Server the HTTP/2 connections see (their timeouts,
// ErrorLog, ConnState), made once: Shutdown shuts it down too, which sends
// its connections GOAWAY.
func (s *Server) h2View() *http.Server {
	s.h2once.Do(func() {
		hs := s.netHTTPView()
		s.h2srv = &http2.Server{}
		http2.ConfigureServer(hs, s.h2srv)
		s.h2hs.Store(hs)
	})
	return s.h2hs.Load()
}

// shutdownH2 sends GOAWAY to the HTTP/2 connections (Shutdown).
func (s *Server) shutdownH2() {
	if hs := s.h2hs.Load(); hs != nil {
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // (its own wait has nothing to wait for)
		hs.Shutdown(ctx)
	}
}

func looksLikeHTTP(hdr [5]byte) bool {
	switch string(hdr[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO":
		return true
	}
	return false
}

// startTLS makes a new connection of a ServeTLS listener a TLS one
// (OnOpen).
func (sh *srvHandler) startTLS(c *uringrt.CallbackConn) {
	if sh.tls != nil {
		c.StartTLS(sh.tls, sh.s.tlsHandshakeTimeout())
	}
}

// requestTLS sets req.TLS on a TLS connection's request.
func (h *hconn) requestTLS(req *http.Request) {
	if h.srv.tls == nil {
		return
	}
	if st, ok := h.c.TLSConnectionState(); ok {
		req.TLS = &st
	}
}

// listen listens on addr with s.Runtime (and s.DeferAccept).
func (s *Server) listen(addr string) (net.Listener, error) {
	rt, err := s.runtime()
	if err != nil {
		return nil, err
	}
	lc := &uringrt.ListenConfig{Runtime: rt, DeferAccept: s.DeferAccept}
	return lc.Listen(context.Background(), "tcp", addr)
}
