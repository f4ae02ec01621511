package uringhttp

import (
	"context"
	"io"
	"net"
	"net/http"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uringrt/uringrt/runtime"
)

// reviewLAS starts s.ListenAndServe on 127.0.0.1:0 and returns its address
// and a func that waits for it to return.
func reviewLAS(t *testing.T, s *Server) (string, func() error) {
	t.Helper()
	lnc := make(chan net.Listener, 1)
	s.Addr = "127.0.0.1:0"
	s.BaseContext = func(ln net.Listener) context.Context { lnc <- ln; return context.Background() }
	done := make(chan error, 1)
	go func() { done <- s.ListenAndServe() }()
	select {
	case ln := <-lnc:
		return ln.Addr().String(), func() error {
			select {
			case err := <-done:
				return err
			case <-time.After(15 * time.Second):
				t.Fatal("ListenAndServe did not return")
				return nil
			}
		}
	case err := <-done:
		t.Fatalf("ListenAndServe: %v", err)
	}
	return "", nil
}

// TestReviewDeferAcceptSilentClient: with Server.DeferAccept (1 s), a client that connects and says nothing is accepted about a
// second later (StateNew then) and closed by ReadHeaderTimeout after that;
// an http.Client and curl are answered meanwhile; Shutdown with a silent
// client still in the kernel's queue returns promptly.
func TestReviewDeferAcceptSilentClient(t *testing.T) {
	rt, err := uringrt.New(uringrt.Config{Loops: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var news, closed atomic.Int32
	s := &Server{
		Runtime:           rt,
		DeferAccept:       time.Second,
		ReadHeaderTimeout: 500 * time.Millisecond,
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hi") }),
		ConnState: func(c net.Conn, st http.ConnState) {
			switch st {
			case http.StateNew:
				news.Add(1)
			case http.StateClosed:
				closed.Add(1)
			}
		},
	}
	addr, wait := reviewLAS(t, s)
	t0 := time.Now()
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	// Clients that speak are answered while the silent one waits.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for i := 0; i < 3; i++ {
		resp, err := hc.Get("http://" + addr + "/")
		if err != nil {
			t.Fatalf("http.Client: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "hi" {
			t.Fatalf("http.Client got %q", b)
		}
	}
	if p, err := exec.LookPath("curl"); err == nil {
		out, err := exec.Command(p, "-s", "-m", "10", "http://"+addr+"/").Output()
		if err != nil || string(out) != "hi" {
			t.Fatalf("curl: %q, %v", out, err)
		}
	}
	silent.SetReadDeadline(time.Now().Add(20 * time.Second))
	n, err := io.Copy(io.Discard, silent)
	took := time.Since(t0)
	if nerr, ok := err.(net.Error); ok && nerr.Timeout() {
		t.Fatalf("a silent client was not closed in 20 s (StateNew %d)", news.Load())
	}
	t.Logf("silent client ended after %v (%d bytes, %v); StateNew %d, StateClosed %d", took, n, err, news.Load(), closed.Load())
	if took < 900*time.Millisecond {
		t.Fatalf("a silent client was closed after %v: before the deferred accept (about 1 s) and ReadHeaderTimeout", took)
	}
	if news.Load() != 5 && news.Load() != 4 {
		t.Errorf("StateNew %d times, want 4 (3 http.Client, the silent client) or 5 with curl", news.Load())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := wait(); err != http.ErrServerClosed {
		t.Fatalf("ListenAndServe: %v", err)
	}
}

// TestReviewDeferAcceptShutdownSilent: a client that connected 100 ms
// before Shutdown and has sent nothing is accepted (Serve on rt.Listen, and
// ListenAndServe, which does not defer accepts by default), and Shutdown's
// close of the connection ends it (EOF), as net/http's does. (With
// Server.DeferAccept it would sit in the kernel as a half-open request that
// the listener's close drops without a FIN or RST, as its doc says.)
func TestReviewDeferAcceptShutdownSilent(t *testing.T) {
	for _, deferred := range []bool{false, true} {
		name := "rt.Listen"
		if deferred {
			name = "ListenAndServe"
		}
		t.Run(name, func(t *testing.T) {
			rt, err := uringrt.New(uringrt.Config{Loops: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			s := &Server{Runtime: rt, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}
			var addr string
			var wait func() error
			if deferred {
				addr, wait = reviewLAS(t, s)
			} else {
				ln, err := rt.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- s.Serve(ln) }()
				addr, wait = ln.Addr().String(), func() error { return <-done }
			}
			silent2, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer silent2.Close()
			time.Sleep(100 * time.Millisecond)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			st := time.Now()
			if err := s.Shutdown(ctx); err != nil {
				t.Fatalf("Shutdown: %v after %v", err, time.Since(st))
			}
			// (net/http's Shutdown waits up to 5 s for a new connection
			// to speak, and so does this one's.)
			t.Logf("Shutdown took %v", time.Since(st))
			if err := wait(); err != http.ErrServerClosed {
				t.Fatalf("Serve: %v", err)
			}
			silent2.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err = silent2.Read(make([]byte, 1))
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				// What it sees when it speaks.
				silent2.SetDeadline(time.Now().Add(5 * time.Second))
				_, werr := io.WriteString(silent2, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
				_, rerr := silent2.Read(make([]byte, 1))
				t.Fatalf("after Shutdown the silent client's connection stays open: a read waits 5 s for nothing; then its request: write %v, read %v", werr, rerr)
			}
			if err == nil {
				t.Fatal("the silent client read a byte after Shutdown")
			}
			t.Logf("the silent client's read after Shutdown: %v", err)
		})
	}
}
