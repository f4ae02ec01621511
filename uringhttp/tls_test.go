package uringhttp_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uringrt/uringrt/internal/testcert"
	uringrt "github.com/uringrt/uringrt/runtime"
	"github.com/uringrt/uringrt/uringhttp"
)

// tlsServer is a uringhttp HTTPS server (ServeTLS) on its own runtime.
type tlsServer struct {
	addr, cert, key string
	pool            *x509.CertPool
	srv             *uringhttp.Server
	log             *bytes.Buffer
}

func (s *tlsServer) url(path string) string { return "https://" + s.addr + path }

func startTLS(tb testing.TB, backend uringrt.Backend, h http.Handler, cfg func(*uringhttp.Server)) *tlsServer {
	tb.Helper()
	rt, ln := listenRT(tb, backend)
	ts := &tlsServer{addr: ln.Addr().String(), log: new(bytes.Buffer)}
	var cert tls.Certificate
	cert, ts.pool = testcert.New(tb)
	ts.cert, ts.key = testcert.WriteFiles(tb, tb.TempDir(), cert)
	ts.srv = &uringhttp.Server{Handler: h, Runtime: rt, ErrorLog: log.New(&lockedWriter{w: ts.log}, "", 0)}
	if cfg != nil {
		cfg(ts.srv)
	}
	serveUntilCleanup(tb, ts.srv, rt, "ServeTLS", func() error { return ts.srv.ServeTLS(ln, ts.cert, ts.key) })
	return ts
}

// tlsHandler answers with the request's protocol and TLS state.
func tlsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			fmt.Fprintf(w, "%s no-tls", r.Proto)
			return
		}
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s tls=%x alpn=%q sni=%q body=%d", r.Proto, r.TLS.Version, r.TLS.NegotiatedProtocol, r.TLS.ServerName, len(body))
	})
}

func tlsClient(pool *x509.CertPool, h2 bool) *http.Client {
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: h2}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
	}
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

var backends = []struct {
	name string
	b    uringrt.Backend
}{{"uring", uringrt.BackendUring}, {"std", uringrt.BackendStd}}

// TestServeTLSGoClient: Go's http.Client over HTTP/1.1 and HTTP/2 gets
// its answers with r.TLS set, keep-alive and uploads included.
func TestServeTLSGoClient(t *testing.T) {
	for _, be := range backends {
		for _, h2 := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/h2=%v", be.name, h2), func(t *testing.T) {
				ts := startTLS(t, be.b, tlsHandler(), nil)
				cl := tlsClient(ts.pool, h2)
				defer cl.CloseIdleConnections()
				proto, alpn := "HTTP/1.1", "http/1.1"
				if h2 {
					proto, alpn = "HTTP/2.0", "h2"
				}
				for i, size := range []int{0, 10, 100000, 0} {
					resp, err := cl.Post(ts.url("/x"), "text/plain", strings.NewReader(strings.Repeat("b", size)))
					if err != nil {
						t.Fatalf("request %d: %v", i, err)
					}
					got, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					want := fmt.Sprintf("%s tls=304 alpn=%q sni=\"\" body=%d", proto, alpn, size)
					if string(got) != want || resp.Proto != proto {
						t.Fatalf("request %d: %s %q, want %q", i, resp.Proto, got, want)
					}
				}
			})
		}
	}
}

// TestServeTLSPlainHTTP: a plaintext request to the HTTPS server gets
// net/http's 400 in the clear, and the error is logged as net/http logs it.
func TestServeTLSPlainHTTP(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			ts := startTLS(t, be.b, tlsHandler(), nil)
			c, err := net.Dial("tcp", ts.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			c.SetReadDeadline(time.Now().Add(20 * time.Second))
			got, _ := io.ReadAll(c)
			const want = "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
			if string(got) != want {
				t.Fatalf("answer %q", got)
			}
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(ts.logged(), "http: TLS handshake error from 127.0.0.1") && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if !strings.Contains(ts.logged(), "client sent an HTTP request to an HTTPS server") {
				t.Fatalf("log: %q", ts.logged())
			}
		})
	}
}

// TestServeTLSNextProto: a TLSNextProto entry gets the *tls.Conn of its
// protocol; a non-nil map turns HTTP/2 off.
func TestServeTLSNextProto(t *testing.T) {
	ts := startTLS(t, uringrt.BackendUring, tlsHandler(), func(s *uringhttp.Server) {
		s.TLSConfig = &tls.Config{NextProtos: []string{"x-echo"}}
		s.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){
			"x-echo": func(_ *http.Server, c *tls.Conn, _ http.Handler) {
				io.Copy(c, c)
			},
		}
	})
	c, err := tls.Dial("tcp", ts.addr, &tls.Config{RootCAs: ts.pool, NextProtos: []string{"h2", "x-echo"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if p := c.ConnectionState().NegotiatedProtocol; p != "x-echo" {
		t.Fatalf("ALPN %q", p)
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	io.WriteString(c, "ping")
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("%q %v", buf, err)
	}
}

// TestServeTLSErrors: ServeTLS's errors are http.Server's: a missing key
// pair, and ErrServerClosed after Shutdown.
func TestServeTLSErrors(t *testing.T) {
	rt, err := uringrt.New(uringrt.Config{Loops: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ln, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s := &uringhttp.Server{Runtime: rt}
	_, want := tls.LoadX509KeyPair("/nonexistent/cert", "/nonexistent/key")
	if err := s.ServeTLS(ln, "/nonexistent/cert", "/nonexistent/key"); err == nil || err.Error() != want.Error() {
		t.Fatalf("ServeTLS: %v, want %v", err, want)
	}
	s.Shutdown(context.Background())
	if err := s.ListenAndServeTLS("", ""); err != http.ErrServerClosed {
		t.Fatalf("ListenAndServeTLS after Shutdown: %v", err)
	}
}

func (s *tlsServer) logged() string {
	lw := s.srv.ErrorLog.Writer().(*lockedWriter)
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return s.log.String()
}

// lockedWriter is an io.Writer safe for the server's goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
