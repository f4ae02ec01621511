package uringhttp

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	uringrt "github.com/uringrt/uringrt/runtime"
)

// serve starts s (its Runtime a fresh one-loop runtime) and returns the
// address; the cleanup shuts it down.
func serve(t testing.TB, s *Server) string {
	t.Helper()
	rt, err := uringrt.New(uringrt.Config{Loops: 1})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Runtime = rt
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; err != http.ErrServerClosed {
			t.Errorf("Serve returned %v", err)
		}
		rt.Close()
	})
	return ln.Addr().String()
}

func TestClientKeepAlive(t *testing.T) {
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "%s %s", r.Method, r.URL.Path)
	})})
	var dials atomic.Int32
	tr := &http.Transport{DialContext: func(ctx context.Context, n, a string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, n, a)
	}}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	for i := 0; i < 50; i++ {
		var resp *http.Response
		var err error
		if i%2 == 0 {
			resp, err = c.Get("http://" + addr + "/g")
		} else {
			resp, err = c.Post("http://"+addr+"/p", "text/plain", strings.NewReader(strings.Repeat("x", i*100)))
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := "GET /g"
		if i%2 == 1 {
			want = "POST /p"
		}
		if string(b) != want {
			t.Fatalf("request %d: %q, want %q", i, b, want)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("%d dials for 50 requests, want 1 (keep-alive)", n)
	}
}

func TestPipelinedInOrder(t *testing.T) {
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "5") {
			time.Sleep(20 * time.Millisecond)
		}
		io.WriteString(w, r.URL.Path)
	})})
	c := dialT(t, addr)
	var sb strings.Builder
	const n = 30
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, "GET /%d HTTP/1.1\r\nHost: x\r\n\r\n", i)
	}
	io.WriteString(c, sb.String())
	br := bufio.NewReader(c)
	for i := 0; i < n; i++ {
		resp := readRespT(t, br)
		b, _ := io.ReadAll(resp.Body)
		if want := fmt.Sprintf("/%d", i); string(b) != want {
			t.Fatalf("response %d: %q, want %q", i, b, want)
		}
	}
}

// A handler that blocks holds its own connection only.
func TestBlockingHandlerDoesNotStall(t *testing.T) {
	release := make(chan struct{})
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			<-release
		}
		io.WriteString(w, "ok")
	})})
	defer close(release)
	for i := 0; i < 4; i++ {
		c := dialT(t, addr)
		io.WriteString(c, "GET /block HTTP/1.1\r\nHost: x\r\n\r\n")
	}
	c := &http.Client{Timeout: 5 * time.Second}
	for i := 0; i < 20; i++ {
		resp, err := c.Get("http://" + addr + "/fast")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
}

// dialT connects to addr, failing t if it cannot; the connection is
// closed when t ends.
func dialT(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readRespT reads one response from br, failing t if it cannot.
func readRespT(t testing.TB, br *bufio.Reader) *http.Response {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// heapPeak samples the Go heap in use until stop is closed.
func heapPeak(stop chan struct{}) func() uint64 {
	var peak atomic.Uint64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() uint64 { wg.Wait(); return peak.Load() }
}

// An upload to a slow handler is read as the handler reads it: the
// server's memory stays bounded whatever the body's size.
func TestUploadBackpressure(t *testing.T) {
	const size = 256 << 20
	got := make(chan string, 1)
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		buf := make([]byte, 32<<10)
		n := 0
		for {
			m, err := r.Body.Read(buf)
			h.Write(buf[:m])
			n += m
			if n%(16<<20) < m {
				time.Sleep(5 * time.Millisecond) // slow reader
			}
			if err != nil {
				break
			}
		}
		got <- fmt.Sprintf("%x %d", h.Sum(nil), n)
	})})
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	stop := make(chan struct{})
	peak := heapPeak(stop)
	pr, pw := io.Pipe()
	want := sha256.New()
	go func() {
		chunk := make([]byte, 1<<20)
		for i := range chunk {
			chunk[i] = byte(i * 7)
		}
		for i := 0; i < size/len(chunk); i++ {
			want.Write(chunk)
			pw.Write(chunk)
		}
		pw.Close()
	}()
	req, _ := http.NewRequest("POST", "http://"+addr+"/up", pr)
	req.ContentLength = size
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	close(stop)
	if s, w := <-got, fmt.Sprintf("%x %d", want.Sum(nil), size); s != w {
		t.Fatalf("handler read %s, want %s", s, w)
	}
	// The client's pipe and chunk are in the same heap; 256 MiB passed.
	if p := peak(); p > base+48<<20 {
		t.Errorf("heap peaked at %d MiB over %d MiB before a %d MiB upload", (p-base)>>20, base>>20, size>>20)
	}
}

// A handler writing faster than the client reads blocks in Write.
func TestResponseBackpressure(t *testing.T) {
	const size = 128 << 20
	var wrote atomic.Int64
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 64<<10)
		for n := 0; n < size; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			wrote.Add(int64(len(chunk)))
		}
	})})
	c := dialT(t, addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	time.Sleep(300 * time.Millisecond)
	// Not read at all: the handler must be stopped by the queue's cap
	// (4 MiB) plus the socket buffers, far below size.
	if n := wrote.Load(); n > 32<<20 {
		t.Fatalf("handler wrote %d MiB to a client that reads nothing", n>>20)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	if n != size || err != nil {
		t.Fatalf("read %d, %v; want %d", n, err, size)
	}
}

func TestReadHeaderTimeoutSlowloris(t *testing.T) {
	addr := serve(t, &Server{ReadHeaderTimeout: 200 * time.Millisecond, Handler: http.NotFoundHandler()})
	c := dialT(t, addr)
	start := time.Now()
	io.WriteString(c, "GET / HTTP/1.1\r\n")
	closed := make(chan struct{})
	go func() {
		buf := make([]byte, 1)
		c.Read(buf)
		close(closed)
	}()
	for i := 0; ; i++ {
		select {
		case <-closed:
			if d := time.Since(start); d < 200*time.Millisecond || d > 3*time.Second {
				t.Fatalf("closed after %v, want about 200ms", d)
			}
			return
		case <-time.After(20 * time.Millisecond):
			c.Write([]byte{'X'})
		}
	}
}

func TestIdleTimeout(t *testing.T) {
	addr := serve(t, &Server{IdleTimeout: 200 * time.Millisecond, Handler: http.NotFoundHandler()})
	c := dialT(t, addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	resp := readRespT(t, br)
	io.Copy(io.Discard, resp.Body)
	start := time.Now()
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("read a byte from an idle connection")
	}
	if d := time.Since(start); d < 150*time.Millisecond || d > 3*time.Second {
		t.Fatalf("idle connection closed after %v, want about 200ms", d)
	}
}

func TestContextCancelledWhenClientGoes(t *testing.T) {
	cancelled := make(chan error, 1)
	started := make(chan struct{})
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		select {
		case <-r.Context().Done():
			cancelled <- r.Context().Err()
		case <-time.After(5 * time.Second):
			cancelled <- nil
		}
	})})
	c := dialT(t, addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	<-started
	c.Close()
	if err := <-cancelled; err != context.Canceled {
		t.Fatalf("request context: %v, want context.Canceled", err)
	}
}

func TestShutdownWaitsForRequests(t *testing.T) {
	rt, ln := oneLoopListener(t)
	started := make(chan struct{})
	s := &Server{Runtime: rt, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		time.Sleep(300 * time.Millisecond)
		io.WriteString(w, "done")
	})}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	idle, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	body := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String())
		if err != nil {
			body <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body <- string(b)
	}()
	<-started
	start := time.Now()
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("Shutdown returned after %v, before the request in flight", d)
	}
	if b := <-body; b != "done" {
		t.Errorf("in-flight request got %q", b)
	}
	if err := <-served; err != http.ErrServerClosed {
		t.Errorf("Serve: %v", err)
	}
	idle.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := idle.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("idle connection after Shutdown: %v, want EOF", err)
	}
}

func TestHijackEcho(t *testing.T) {
	addr := serve(t, &Server{ReadTimeout: 100 * time.Millisecond, WriteTimeout: 100 * time.Millisecond, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\n\r\n")
		for {
			line, err := brw.ReadString('\n')
			if err != nil {
				return
			}
			io.WriteString(c, strings.ToUpper(line))
		}
	})})
	c := dialT(t, addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\nfirst\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 101 {
		t.Fatal(resp, err)
	}
	for _, l := range []string{"first", "second", strings.Repeat("z", 200000), "after the server's timeouts"} {
		if strings.HasPrefix(l, "after") {
			time.Sleep(300 * time.Millisecond) // the server's timeouts do not apply to a hijacked connection
		}
		if l != "first" {
			io.WriteString(c, l+"\n")
		}
		got, err := br.ReadString('\n')
		if err != nil || got != strings.ToUpper(l)+"\n" {
			t.Fatalf("echo %.20q: %.20q, %v", l, got, err)
		}
	}
}

func TestExpectContinue(t *testing.T) {
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
	})})
	c := dialT(t, addr)
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil || line != "HTTP/1.1 100 Continue\r\n" {
		t.Fatalf("%q %v", line, err)
	}
	br.ReadString('\n')
	io.WriteString(c, "hello")
	resp := readRespT(t, br)
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "hello" {
		t.Fatalf("%q", b)
	}
}

func TestConnState(t *testing.T) {
	var mu sync.Mutex
	var states []http.ConnState
	var conn net.Conn
	closed := make(chan struct{})
	addr := serve(t, &Server{Handler: http.NotFoundHandler(), ConnState: func(c net.Conn, st http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		if conn == nil {
			conn = c
		} else if c != conn {
			t.Errorf("ConnState got another net.Conn for the same connection")
		}
		states = append(states, st)
		if st == http.StateClosed {
			close(closed)
		}
	}})
	c := dialT(t, addr)
	br := bufio.NewReader(c)
	for i := 0; i < 2; i++ {
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		resp := readRespT(t, br)
		io.Copy(io.Discard, resp.Body)
	}
	c.Close()
	<-closed
	mu.Lock()
	defer mu.Unlock()
	want := []http.ConnState{http.StateNew, http.StateActive, http.StateIdle, http.StateActive, http.StateIdle, http.StateClosed}
	if fmt.Sprint(states) != fmt.Sprint(want) {
		t.Errorf("states %v, want %v", states, want)
	}
}

func TestReadTimeoutBody(t *testing.T) {
	errc := make(chan error, 1)
	addr := serve(t, &Server{ReadTimeout: 200 * time.Millisecond, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		errc <- err
	})})
	c := dialT(t, addr)
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc")
	select {
	case err := <-errc:
		var ne net.Error
		if err == nil || !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("body read: %v, want a timeout", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("body read did not time out")
	}
}

func TestWriteTimeout(t *testing.T) {
	errc := make(chan error, 1)
	addr := serve(t, &Server{WriteTimeout: 200 * time.Millisecond, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(500 * time.Millisecond)
		w.Write([]byte("late"))
		errc <- http.NewResponseController(w).Flush()
	})})
	c := dialT(t, addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if err := <-errc; err == nil {
		t.Fatal("write after WriteTimeout succeeded")
	}
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	if n, err := c.Read(make([]byte, 100)); err != io.EOF {
		t.Fatalf("read %d, %v: want the connection closed without an answer", n, err)
	}
}

// After a POST, CRLFs before the next request are skipped, also when the
// next request's head comes in pieces.
func TestPostCRLFThenSplitHead(t *testing.T) {
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, r.Method)
	})})
	c := dialT(t, addr)
	br := bufio.NewReader(c)
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx")
	resp := readRespT(t, br)
	io.Copy(io.Discard, resp.Body)
	io.WriteString(c, "\r\nGET / HT")
	time.Sleep(50 * time.Millisecond)
	io.WriteString(c, "TP/1.1\r\nHost: x\r\n\r\n")
	resp = readRespT(t, br)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != "GET" {
		t.Fatalf("%d %q, want 200 GET", resp.StatusCode, b)
	}
}

// A read deadline a handler set ends with its request.
func TestResponseControllerDeadlineEndsWithRequest(t *testing.T) {
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if r.URL.Path == "/set" {
			rc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			io.WriteString(w, "set")
			return
		}
		b, err := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %v", b, err)
	})})
	c := dialT(t, addr)
	br := bufio.NewReader(c)
	io.WriteString(c, "GET /set HTTP/1.1\r\nHost: x\r\n\r\n")
	resp := readRespT(t, br)
	io.Copy(io.Discard, resp.Body)
	time.Sleep(100 * time.Millisecond)
	io.WriteString(c, "POST /read HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n")
	time.Sleep(20 * time.Millisecond)
	io.WriteString(c, "abc")
	resp = readRespT(t, br)
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "abc <nil>" {
		t.Fatalf("second request's body read: %q", b)
	}
}

// The server runs on a runtime that fell back to Go's net too.
func TestBackendStd(t *testing.T) {
	rt, err := uringrt.New(uringrt.Config{Backend: uringrt.BackendStd})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ln, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Runtime: rt, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %d", r.Method, len(b))
	})}
	go s.Serve(ln)
	defer s.Close()
	c := &http.Client{Transport: &http.Transport{}}
	for i := 0; i < 10; i++ {
		resp, err := c.Post("http://"+ln.Addr().String(), "x", strings.NewReader(strings.Repeat("y", i*50000)))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf("POST %d", i*50000); string(b) != want {
			t.Fatalf("%q, want %q", b, want)
		}
	}
}

// inlineStats sums the runtime's counts of handlers run on the loop.
func inlineStats(rt *uringrt.Runtime) (runs, takeovers uint64) {
	for _, l := range rt.Stats().Loops {
		runs += l.InlineRuns
		takeovers += l.InlineTakeovers
	}
	return runs, takeovers
}

// TestHandlersOnLoop: by default handlers run on the loop (keep-alive,
// the pipelined pair in one run,
// pipelined and Connection: close requests alike); a handler that sleeps
// there loses the loop to a takeover without holding up another
// connection, and sends the next requests to the server's goroutines;
// OffLoopHandlers runs none on the loop.
func TestHandlersOnLoop(t *testing.T) {
	for _, off := range []bool{false, true} {
		// Only the sleeper counts as slow (slowOnLoop): a thread
		// descheduled for half a millisecond under load would send
		// requests off the loop.
		s := &Server{OffLoopHandlers: off, slowOnLoop: 500 * time.Millisecond, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/sleep" {
				time.Sleep(time.Second)
			}
			io.WriteString(w, r.URL.Path)
		})}
		addr := serve(t, s)
		c := dialT(t, addr)
		c.SetDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		io.WriteString(c, "GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n")
		for _, want := range []string{"/a", "/b"} {
			resp := readRespT(t, br)
			if b, _ := io.ReadAll(resp.Body); string(b) != want {
				t.Fatalf("got %q, want %q", b, want)
			}
		}
		for i := 0; i < 20; i++ {
			io.WriteString(c, "GET /k HTTP/1.1\r\nHost: x\r\n\r\n")
			resp := readRespT(t, br)
			io.ReadAll(resp.Body)
		}
		cl := dialT(t, addr)
		io.WriteString(cl, "GET /close HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		if b, err := io.ReadAll(cl); err != nil || !strings.HasSuffix(string(b), "/close") {
			t.Fatalf("Connection: close: %q, %v", b, err)
		}
		runs, _ := inlineStats(s.Runtime)
		if off && runs != 0 || !off && runs < 22 {
			t.Fatalf("OffLoopHandlers %v: InlineRuns %d", off, runs)
		}
		if off {
			continue
		}
		// A sleeping handler on the loop of the only loop.
		sl := dialT(t, addr)
		io.WriteString(sl, "GET /sleep HTTP/1.1\r\nHost: x\r\n\r\n")
		time.Sleep(10 * time.Millisecond)
		t0 := time.Now()
		io.WriteString(c, "GET /k HTTP/1.1\r\nHost: x\r\n\r\n")
		io.ReadAll(readRespT(t, br).Body)
		if d := time.Since(t0); d > 500*time.Millisecond { // (behind the sleeper: about 1 s)
			t.Fatalf("a request took %v while another connection's handler slept on the loop", d)
		}
		slr0 := bufio.NewReader(sl)
		if resp := readRespT(t, slr0); resp.StatusCode != 200 {
			t.Fatalf("sleeper: %v", resp.Status)
		} else {
			io.ReadAll(resp.Body)
		}
		runs0, takeovers := inlineStats(s.Runtime)
		if takeovers < 1 {
			t.Fatalf("InlineTakeovers %d after a sleeping handler, want 1", takeovers)
		}
		// The next requests go to the server's goroutines (once the
		// sleeper's run has ended: its answer can come first).
		// On a loaded machine an earlier request can have been taken over
		// (the machine stalled it past the monitor's tick), so that the
		// sleeper, queued in the refusal window after it, ran on a worker
		// and set nothing: send it again, on the loop this time.
		slr := slr0
		for try := 0; ; try++ {
			for t1 := time.Now(); s.offLoop.Load() == 0 && time.Since(t1) < 3*time.Second; {
				time.Sleep(time.Millisecond)
			}
			if s.offLoop.Load() != 0 {
				break
			}
			if try == 3 {
				t.Fatal("no slow handler on the loop sent the next requests to the goroutines")
			}
			t.Logf("the sleeper ran off the loop (a takeover before it); again")
			io.WriteString(sl, "GET /sleep HTTP/1.1\r\nHost: x\r\n\r\n")
			if resp := readRespT(t, slr); resp.StatusCode != 200 {
				t.Fatalf("sleeper: %v", resp.Status)
			} else {
				io.ReadAll(resp.Body)
			}
		}
		runs0, _ = inlineStats(s.Runtime)
		for i := 0; i < 10; i++ {
			io.WriteString(c, "GET /k HTTP/1.1\r\nHost: x\r\n\r\n")
			io.ReadAll(readRespT(t, br).Body)
		}
		if runs, _ := inlineStats(s.Runtime); runs != runs0 {
			t.Fatalf("InlineRuns went from %d to %d right after a slow handler", runs0, runs)
		}
	}
}

// cancelWhenGone serves a handler that reads the request's body (want
// is what it must hold) and then waits for its context, and checks, n
// times, that a client sending req and closing its sending side at once
// gets that context cancelled.
func cancelWhenGone(t *testing.T, req, want string, n int) {
	got := make(chan string, 1)
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b, err := io.ReadAll(r.Body); err != nil || string(b) != want {
			got <- fmt.Sprintf("body %q, %v", b, err)
			return
		}
		select {
		case <-r.Context().Done():
			got <- "cancelled"
		case <-time.After(3 * time.Second):
			got <- "not cancelled"
		}
	})})
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		tc := c.(*net.TCPConn)
		tc.Write([]byte(req))
		tc.CloseWrite()
		if s := <-got; s != "cancelled" {
			t.Fatalf("connection %d: the handler's context was %s", i, s)
		}
		c.Close()
	}
}

// TestContextCancelledClientGoneFirst: a client that sends its request and
// at once closes its sending side (its FIN in the same batch as the
// request, before the handler starts) gets its request's context
// cancelled, as net/http does.
func TestContextCancelledClientGoneFirst(t *testing.T) {
	cancelWhenGone(t, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "", 10)
}

// TestContextCancelledBodyReadThenGone: a client that sends a request with
// its whole body and closes its sending side gets the request's context
// cancelled once the handler has read the body to its end, as net/http
// does.
func TestContextCancelledBodyReadThenGone(t *testing.T) {
	cancelWhenGone(t, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", "hello", 5)
}
