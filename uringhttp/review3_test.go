package uringhttp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	uringrt "github.com/uringrt/uringrt/runtime"
)

// Tests from a third attack review of handlers on the loop: each failed
// before its fix.

// oneLoopListener returns a one-loop runtime and a listener of it on a
// loopback port; the runtime is closed when the test ends.
func oneLoopListener(t testing.TB) (*uringrt.Runtime, net.Listener) {
	t.Helper()
	rt, err := uringrt.New(uringrt.Config{Loops: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	ln, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return rt, ln
}

// stateLog records the ConnState transitions of each connection.
type stateLog struct {
	mu sync.Mutex
	m  map[net.Conn][]http.ConnState
}

// add is a Server.ConnState hook.
func (l *stateLog) add(c net.Conn, st http.ConnState) {
	l.mu.Lock()
	if l.m == nil {
		l.m = make(map[net.Conn][]http.ConnState)
	}
	l.m[c] = append(l.m[c], st)
	l.mu.Unlock()
}

// checkClosedLast waits (up to 10 s) until every connection seen has
// reported StateClosed (one reset before its accept is never seen), then
// fails t unless each reported it once and last.
func (l *stateLog) checkClosedLast(t *testing.T, label string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l.mu.Lock()
		done := 0
		for _, sts := range l.m {
			if slices.Contains(sts, http.StateClosed) {
				done++
			}
		}
		seen := len(l.m)
		l.mu.Unlock()
		if done == seen && seen > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // a late state would show now
	l.mu.Lock()
	defer l.mu.Unlock()
	bad := 0
	for _, sts := range l.m {
		closed := 0
		for _, st := range sts {
			if st == http.StateClosed {
				closed++
			}
		}
		if closed != 1 || sts[len(sts)-1] != http.StateClosed {
			if bad < 3 {
				t.Logf("%s: states %v", label, sts)
			}
			bad++
		}
	}
	if len(l.m) == 0 || bad > 0 {
		t.Errorf("%s: %d connections seen, %d of them without StateClosed once and last", label, len(l.m), bad)
	}
}

// getPath sends a GET for path on c and returns the body and the time to
// the whole response.
func getPath(t *testing.T, c net.Conn, br *bufio.Reader, path string) (string, time.Duration) {
	t.Helper()
	t0 := time.Now()
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return string(b), time.Since(t0)
}

// TestGoexitInHandler: a handler that ends its goroutine with
// runtime.Goexit (t.FailNow in a test handler does): as net/http, its
// connection is closed, the server goes on serving, and Shutdown is not
// kept waiting for it. Before: the client hung and Shutdown ran out of
// time, on the loop and off it.
func TestGoexitInHandler(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/exit" {
			runtime.Goexit()
		}
		io.WriteString(w, "ok")
	})
	for _, off := range []bool{false, true} {
		s := &Server{OffLoopHandlers: off, Handler: h}
		addr := serve(t, s)
		c := dialT(t, addr)
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, "GET /exit HTTP/1.1\r\nHost: x\r\n\r\n")
		if b, err := io.ReadAll(c); err != nil || len(b) != 0 {
			t.Errorf("off=%v: the connection of a handler that called Goexit: %q, %v; want closed with nothing sent", off, b, err)
		}
		c2 := dialT(t, addr)
		c2.SetDeadline(time.Now().Add(5 * time.Second))
		if body, _ := getPath(t, c2, bufio.NewReader(c2), "/ok"); body != "ok" {
			t.Errorf("off=%v: next request: %q", off, body)
		}
		c2.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("off=%v: Shutdown: %v", off, err)
		}
		cancel()
	}
}

// TestConnStateClosedLast: clients that send a request and reset the
// connection at once. StateClosed is reported once, last, after the
// request's StateActive, as net/http does. Before: OnClose reported it
// before the request's StateActive, which followed it.
func TestConnStateClosedLast(t *testing.T) {
	for _, off := range []bool{false, true} {
		var log stateLog
		s := &Server{OffLoopHandlers: off, ConnState: log.add, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "ok")
		})}
		addr := serve(t, s)
		const n = 200
		for i := 0; i < n; i++ {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			c.(*net.TCPConn).SetLinger(0)
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			c.Close()
		}
		log.checkClosedLast(t, fmt.Sprintf("off=%v", off))
	}
}

// TestHijackConcurrentWrites: two goroutines write to a hijacked
// connection at once (net.Conn allows it): every write arrives whole.
// Before: a data race on the connection's write error (-race).
func TestHijackConcurrentWrites(t *testing.T) {
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		var wg sync.WaitGroup
		for g := 0; g < 2; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				line := strings.Repeat(string(rune('a'+g)), 99) + "\n"
				for i := 0; i < 200; i++ {
					if _, err := io.WriteString(conn, line); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		conn.Close()
	})}
	addr := serve(t, s)
	c := dialT(t, addr)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	n := 0
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			break
		}
		if len(l) != 100 || strings.Count(l, l[:1]) != 99 {
			t.Fatalf("line torn: %q", l)
		}
		n++
	}
	if n != 400 {
		t.Fatalf("%d lines, want 400", n)
	}
}

// TestServeAfterShutdownClosesListener: Serve called after Shutdown
// returns ErrServerClosed and closes ln, as net/http's does; before, ln
// stayed open and its clients waited in the backlog.
func TestServeAfterShutdownClosesListener(t *testing.T) {
	rt, ln := oneLoopListener(t)
	s := &Server{Runtime: rt, Handler: http.NotFoundHandler()}
	s.Shutdown(context.Background())
	if err := s.Serve(ln); err != http.ErrServerClosed {
		t.Fatalf("Serve: %v", err)
	}
	if c, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		c.Close()
		t.Fatal("the listener accepts connections after Serve returned ErrServerClosed")
	}
}

// TestServeShutdownRace: a Serve that passed its first check before
// Shutdown began (BaseContext holds it there) returns ErrServerClosed and
// does not serve on; before, it registered its listener after Shutdown
// had closed the others and returned, and served forever.
func TestServeShutdownRace(t *testing.T) {
	rt, ln := oneLoopListener(t)
	defer ln.Close()
	entered, release := make(chan struct{}), make(chan struct{})
	s := &Server{Runtime: rt, Handler: http.NotFoundHandler(), BaseContext: func(net.Listener) context.Context {
		close(entered)
		<-release
		return context.Background()
	}}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	<-entered
	go func() { time.Sleep(100 * time.Millisecond); close(release) }()
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != http.ErrServerClosed {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve still serving 5 s after Shutdown returned")
	}
}

// TestManySleepersOneBatch: sixty handlers that sleep, arriving together
// on one loop, lose the loop once between them (the runtime runs those
// queued behind the first off the loop), so a request on another
// connection waits for one takeover, not sixty. Before: 132-141 ms, sixty
// takeovers of a millisecond or two each, one after the other.
func TestManySleepersOneBatch(t *testing.T) {
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/sleep" {
			time.Sleep(300 * time.Millisecond)
		}
		io.WriteString(w, r.URL.Path)
	})}
	addr := serve(t, s)
	fast := dialT(t, addr)
	fast.SetDeadline(time.Now().Add(10 * time.Second))
	fbr := bufio.NewReader(fast)
	getPath(t, fast, fbr, "/warm")
	conns := make([]net.Conn, 60)
	for i := range conns {
		conns[i] = dialT(t, addr)
	}
	time.Sleep(20 * time.Millisecond)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			io.WriteString(c, "GET /sleep HTTP/1.1\r\nHost: x\r\n\r\n")
		}()
	}
	close(start)
	wg.Wait()
	time.Sleep(500 * time.Microsecond)
	var worst time.Duration
	for i := 0; i < 20; i++ {
		_, d := getPath(t, fast, fbr, "/fast")
		worst = max(worst, d)
	}
	t.Logf("worst %v", worst)
	// Sixty takeovers one after the other take at least 60 ms.
	if worst > 40*time.Millisecond {
		t.Errorf("a fast request took %v behind sixty sleeping handlers", worst)
	}
	for i, c := range conns {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("sleeper %d: %v", i, err)
		}
		if b, _ := io.ReadAll(resp.Body); string(b) != "/sleep" {
			t.Fatalf("sleeper %d: %q", i, b)
		}
	}
}
