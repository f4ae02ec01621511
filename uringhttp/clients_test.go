package uringhttp_test

// Real clients nobody here wrote, against uringhttp: curl, wrk, h2load
// (--h1), ab and Go's http.Client. A missing client skips its test with a
// message, or fails it when URINGHTTP_REQUIRE_CLIENTS=1 (CI installs them).

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	uringrt "github.com/uringrt/uringrt/runtime"
	"github.com/uringrt/uringrt/uringhttp"
)

// testServer is a uringhttp server on its own runtime, counting the
// connections it accepted (ConnState StateNew).
type testServer struct {
	addr  string
	srv   *uringhttp.Server
	conns atomic.Int64
}

func (s *testServer) url(path string) string { return "http://" + s.addr + path }

// startUring serves h with uringhttp on 127.0.0.1; cfg, if not nil, sets
// more fields before Serve. The server and its runtime close at cleanup.
func startUring(tb testing.TB, h http.Handler, cfg func(*uringhttp.Server)) *testServer {
	tb.Helper()
	rt, ln := listenRT(tb, uringrt.BackendUring)
	ts := &testServer{addr: ln.Addr().String()}
	ts.srv = &uringhttp.Server{Handler: h, Runtime: rt, ErrorLog: log.New(io.Discard, "", 0)}
	ts.srv.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateNew {
			ts.conns.Add(1)
		}
	}
	if cfg != nil {
		cfg(ts.srv)
	}
	serveUntilCleanup(tb, ts.srv, rt, "Serve", func() error { return ts.srv.Serve(ln) })
	return ts
}

// listenRT makes a runtime of two loops on backend and a listener of it
// on a loopback port; the caller closes the runtime.
func listenRT(tb testing.TB, backend uringrt.Backend) (*uringrt.Runtime, net.Listener) {
	tb.Helper()
	rt, err := uringrt.New(uringrt.Config{Loops: 2, Backend: backend})
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		rt.Close()
		tb.Fatal(err)
	}
	return rt, ln
}

// serveUntilCleanup runs serve (srv's method name: Serve or ServeTLS) in
// a goroutine; at cleanup it shuts srv down (Close after 5 s), fails tb
// unless serve returned http.ErrServerClosed within 10 s, and closes rt.
func serveUntilCleanup(tb testing.TB, srv *uringhttp.Server, rt *uringrt.Runtime, name string, serve func() error) {
	done := make(chan error, 1)
	go func() { done <- serve() }()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			tb.Logf("Shutdown: %v", err)
			srv.Close()
		}
		select {
		case err := <-done:
			if err != nil && err != http.ErrServerClosed {
				tb.Errorf("%s returned %v, want http.ErrServerClosed", name, err)
			}
		case <-time.After(10 * time.Second):
			tb.Errorf("%s did not return after Shutdown", name)
		}
		rt.Close()
	})
}

// clientHandler serves the client tests: /hello (13 bytes), /sha (the
// request body's length and SHA-256), /4k.
func clientHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/sha":
			hsh := sha256.New()
			n, err := io.Copy(hsh, r.Body)
			fmt.Fprintf(w, "%d %x %v te=%q", n, hsh.Sum(nil), err, r.TransferEncoding)
		case "/4k":
			w.Write(bytes.Repeat([]byte("z"), 4096))
		case "/proto":
			fmt.Fprintf(w, "%s close=%v", r.Proto, r.Close)
		default:
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "Hello, World!")
		}
	})
}

// needTool returns the path of a client, or skips (fails under
// URINGHTTP_REQUIRE_CLIENTS=1) when it is not installed.
func needTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		msg := fmt.Sprintf("%s not installed (apt-get install %s)", name, pkg)
		if os.Getenv("URINGHTTP_REQUIRE_CLIENTS") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// runTool runs a client with a bound on its time and returns its output.
func runTool(t *testing.T, limit time.Duration, name string, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstdout: %s\nstderr: %s", name, strings.Join(args, " "), err, o.String(), e.String())
	}
	return o.String(), e.String()
}

func TestCurlKeepAlive(t *testing.T) {
	curl := needTool(t, "curl", "curl")
	s := startUring(t, clientHandler(), nil)
	out, _ := runTool(t, 30*time.Second, curl, "-sS", "--max-time", "10", s.url("/hello"), s.url("/hello"), s.url("/4k"))
	if want := "Hello, World!Hello, World!" + strings.Repeat("z", 4096); out != want {
		t.Fatalf("curl got %q, want %q", out, want)
	}
	if n := s.conns.Load(); n != 1 {
		t.Fatalf("curl used %d connections for 3 requests, want 1 (keep-alive)", n)
	}
}

func TestCurlHTTP10(t *testing.T) {
	curl := needTool(t, "curl", "curl")
	s := startUring(t, clientHandler(), nil)
	out, _ := runTool(t, 30*time.Second, curl, "-sS", "-0", "-i", "--max-time", "10", s.url("/proto"), s.url("/proto"))
	if got := strings.Count(out, "HTTP/1.0 200 OK\r\n"); got != 2 {
		t.Fatalf("want 2 HTTP/1.0 200 responses, got:\n%s", out)
	}
	if got := strings.Count(out, "HTTP/1.0 close=true"); got != 2 {
		t.Fatalf("the handler did not see HTTP/1.0 with close: %s", out)
	}
	if n := s.conns.Load(); n != 2 {
		t.Fatalf("HTTP/1.0 without keep-alive: %d connections for 2 requests, want 2", n)
	}
}

func TestCurlChunkedUpload(t *testing.T) {
	curl := needTool(t, "curl", "curl")
	s := startUring(t, clientHandler(), nil)
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	f := filepath.Join(t.TempDir(), "up")
	if err := os.WriteFile(f, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, _ := runTool(t, 30*time.Second, curl, "-sS", "--max-time", "20", "-H", "Transfer-Encoding: chunked", "--data-binary", "@"+f, s.url("/sha"))
	want := fmt.Sprintf("%d %x <nil> te=[\"chunked\"]", len(data), sha256.Sum256(data))
	if out != want {
		t.Fatalf("chunked upload: got %q, want %q", out, want)
	}
	// And with Expect: 100-continue, which curl sends for large bodies.
	out, _ = runTool(t, 30*time.Second, curl, "-sS", "--max-time", "20", "-H", "Expect: 100-continue", "--data-binary", "@"+f, s.url("/sha"))
	if want := fmt.Sprintf("%d %x <nil> te=[]", len(data), sha256.Sum256(data)); out != want {
		t.Fatalf("upload with Expect: 100-continue: got %q, want %q", out, want)
	}
}

var wrkRequests = regexp.MustCompile(`(\d+) requests in`)

func TestWrkAll2xx(t *testing.T) {
	wrk := needTool(t, "wrk", "wrk")
	s := startUring(t, clientHandler(), nil)
	for _, path := range []string{"/hello", "/4k"} {
		out, _ := runTool(t, 30*time.Second, wrk, "-t1", "-c50", "-d2s", "--timeout", "5s", s.url(path))
		m := wrkRequests.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("wrk output: %s", out)
		}
		if n, _ := strconv.Atoi(m[1]); n < 100 {
			t.Errorf("wrk %s: only %d requests in 2 s:\n%s", path, n, out)
		}
		if strings.Contains(out, "Non-2xx") || strings.Contains(out, "Socket errors") {
			t.Errorf("wrk %s: errors or non-2xx answers:\n%s", path, out)
		}
	}
}

func TestH2loadH1(t *testing.T) {
	h2load := needTool(t, "h2load", "nghttp2-client")
	s := startUring(t, clientHandler(), nil)
	out, _ := runTool(t, 60*time.Second, h2load, "--h1", "-n", "4000", "-c", "20", "-m", "4", s.url("/hello"))
	if !strings.Contains(out, "requests: 4000 total, 4000 started, 4000 done, 4000 succeeded, 0 failed, 0 errored, 0 timeout") ||
		!strings.Contains(out, "status codes: 4000 2xx, 0 3xx, 0 4xx, 0 5xx") {
		t.Fatalf("h2load --h1 (pipelining 4 deep on 20 connections):\n%s", out)
	}
	if n := s.conns.Load(); n != 20 {
		t.Errorf("h2load's 20 clients made %d connections", n)
	}
}

func TestApacheBench(t *testing.T) {
	ab := needTool(t, "ab", "apache2-utils")
	s := startUring(t, clientHandler(), nil)
	for _, keep := range []bool{true, false} {
		args := []string{"-n", "2000", "-c", "20", "-s", "10"}
		if keep {
			args = append(args, "-k")
		}
		args = append(args, s.url("/hello"))
		out, _ := runTool(t, 60*time.Second, ab, args...)
		if !strings.Contains(out, "Complete requests:      2000") || !strings.Contains(out, "Failed requests:        0") ||
			strings.Contains(out, "Non-2xx responses") {
			t.Fatalf("ab %v:\n%s", args, out)
		}
		if keep && !strings.Contains(out, "Keep-Alive requests:    2000") {
			t.Errorf("ab -k: not every request kept alive:\n%s", out)
		}
	}
}

func TestHTTPClientKeepAliveReuse(t *testing.T) {
	s := startUring(t, clientHandler(), nil)
	tr := &http.Transport{MaxIdleConnsPerHost: 8}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	get := func(path string) string {
		resp, err := cl.Get(s.url(path))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
		}
		return string(b)
	}
	for i := 0; i < 200; i++ {
		if got := get("/hello"); got != "Hello, World!" {
			t.Fatalf("got %q", got)
		}
	}
	// The Transport returns a connection to its pool from its read loop,
	// racing the caller's next request, which may then dial: a few
	// connections, not one per request.
	if n := s.conns.Load(); n > 3 {
		t.Fatalf("200 sequential requests used %d connections, want 1 (at most 3)", n)
	}
	// POSTs with bodies (Content-Length and chunked) keep the connection too.
	for i := 0; i < 20; i++ {
		body := strings.Repeat("p", 1000*i)
		resp, err := cl.Post(s.url("/sha"), "text/plain", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf("%d %x <nil>", len(body), sha256.Sum256([]byte(body))); !strings.HasPrefix(string(b), want) {
			t.Fatalf("POST: %q, want %q", b, want)
		}
		resp, err = cl.Post(s.url("/sha"), "text/plain", io.MultiReader(strings.NewReader(body))) // no length: chunked
		if err != nil {
			t.Fatal(err)
		}
		b, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf("%d %x <nil> te=[\"chunked\"]", len(body), sha256.Sum256([]byte(body))); string(b) != want {
			t.Fatalf("chunked POST: %q, want %q", b, want)
		}
	}
	if n := s.conns.Load(); n > 5 {
		t.Fatalf("with 40 POSTs: %d connections in all, want 1 (at most 5)", n)
	}
	// 8 goroutines at once need at most 8 connections, however many requests.
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				resp, err := cl.Get(s.url("/4k"))
				if err != nil {
					t.Error(err)
					return
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if n != 4096 {
					t.Errorf("got %d bytes", n)
				}
			}
		}()
	}
	wg.Wait()
	if n := s.conns.Load(); n > 24 {
		t.Fatalf("8 concurrent clients making 800 requests used %d connections, want about 8 (at most 24)", n)
	}
}

// TestCurlExpectContinueUnreadBody: a client that sends Expect:
// 100-continue waits for 100 Continue or the final response before it
// sends the body; a handler that answers without reading the body must
// get its answer to the client at once (net/http sends it, with
// Connection: close), not after the client gives up waiting (curl's
// --expect100-timeout, 10 s here).
func TestCurlExpectContinueUnreadBody(t *testing.T) {
	curl := needTool(t, "curl", "curl")
	s := startUring(t, clientHandler(), nil)
	f := filepath.Join(t.TempDir(), "up")
	for _, size := range []int{1000, 1 << 20} { // under and over the 256 KiB a server discards
		if err := os.WriteFile(f, bytes.Repeat([]byte("e"), size), 0o600); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		out, _ := runTool(t, 30*time.Second, curl, "-sS", "--max-time", "25", "--expect100-timeout", "10", "-H", "Expect: 100-continue", "--data-binary", "@"+f, s.url("/hello"))
		took := time.Since(start)
		if out != "Hello, World!" {
			t.Fatalf("%d-byte body: got %q", size, out)
		}
		if took > 5*time.Second {
			t.Errorf("%d-byte body: the answer to a request whose body the handler ignored took %v: the server waited for a body the client was never told to send", size, took.Round(time.Millisecond))
		}
	}
}
