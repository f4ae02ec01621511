package uringhttp

import (
	"context"
	"crypto/tls"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"

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
	// connection's start (first request); a connection that passes it is
	// closed, as a slow
	// client (slowloris) is by net/http, and with net/http's bytes:
	// without an answer, or with 400 Bad Request when the bytes received
	// end in a partial line that net/http's reader, which returns it at
	// its deadline as a whole line, refuses as a request line or a header
	// line. For a later request it counts, as in net/http, from when 4
	// bytes of its head are there (IdleTimeout runs until then). The
	// timeout fires when due, on the connection's loop. 0 means
	// ReadTimeout.
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
	// Runtime is the uringrt runtime ListenAndServe listens on; nil means
	// the default runtime (uringrt.Default). Serve serves a listener on
	// the runtime that made it, so it may stay nil there; set, it must be
	// that runtime.
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
	// MaxQueuedOutput bounds the bytes of output a connection holds
	// queued beyond what the kernel has taken (its socket's send buffer):
	// a handler's Write (or a hijacked connection's) past it waits until
	// the client has read enough, as net/http's waits for its socket, so
	// a slow or non-reading client holds this much of the server's memory
	// at most and a handler takes as long as its client takes to read. 0
	// means DefaultMaxQueuedOutput (32 KiB). The runtime's own caps
	// (uringrt.Config.MaxWriteBuffer, MaxBufferedBytes) still apply when
	// smaller.
	MaxQueuedOutput int
	// TLSConfig is the TLS configuration of ServeTLS and ListenAndServeTLS
	// (cloned; nil means an empty one), as http.Server's.
	TLSConfig *tls.Config
	// TLSNextProto, as http.Server's, maps an ALPN protocol to the
	// function that takes over a TLS connection that negotiated it (on a
	// goroutine of its own; the connection is closed when it returns).
	// When nil, ServeTLS serves "h2" with golang.org/x/net/http2; a non-nil
	// map, even empty, turns HTTP/2 off.
	TLSNextProto map[string]func(*http.Server, *tls.Conn, http.Handler)

	offLoop           atomic.Int32  // requests still to send to the goroutines after a slow handler on the loop
	slowOnLoop        time.Duration // a handler's run that counts as slow (0: slowOnLoop; tests set it)
	inShutdown        atomic.Bool
	disableKeepAlives atomic.Bool
	mu                sync.Mutex
	listeners         map[net.Listener]struct{}
	conns             map[*hconn]struct{}
	serving           sync.WaitGroup
	workers           workerPool
	onShutdown        []func() // RegisterOnShutdown's (mu)

	h2once               sync.Once
	h2hs                 atomic.Pointer[http.Server] // what HTTP/2 connections see (tls.go)
	h2srv                *http2.Server
	testHookFailInFlight func(*hconn) // tests: between a failed pipelined request's end and its error answer
}

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
