package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uringrt/uringrt/examples/resp/internal/proto"
	"github.com/uringrt/uringrt/runtime"
)

// startServerBackend is startServer on the given backend.
func startServerBackend(t testing.TB, b uringrt.Backend, lim limits) (*server, string) {
	t.Helper()
	rt, ln, srv, err := start("127.0.0.1:0", uringrt.Config{Loops: 1, Backend: b}, lim)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { rt.Serve(ln, srv); close(done) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ln.Close()
		rt.Shutdown(ctx)
		<-done
	})
	return srv, ln.Addr().String()
}

// maxQueued samples, every millisecond until stop is called, the most
// output bytes queued for any of srv's clients.
func maxQueued(srv *server) (stop func() int) {
	var most atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			srv.mu.Lock()
			for cl := range srv.conns {
				if q := int64(cl.c.OutboundBuffered()); q > most.Load() {
					most.Store(q)
				}
			}
			srv.mu.Unlock()
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	})
	return func() int {
		close(done)
		wg.Wait()
		return int(most.Load())
	}
}

// queueBound is the most output the server may queue for a client: the
// pacing mark, then one batch of replies and one value over it.
func queueBound(lim limits) int { return paceHigh + flushAt + lim.maxBulk + 64 }

// setBig stores a value of lim.maxBulk bytes under "big" through c.
func setBig(t *testing.T, c net.Conn, r *bufio.Reader, lim limits) string {
	t.Helper()
	val := strings.Repeat("v", lim.maxBulk)
	c.Write([]byte(cmd("SET", "big", val)))
	if got := readReplies(t, r, 1); got != "+OK\r\n" {
		t.Fatalf("SET: %q", got)
	}
	return val
}

// TestBigRepliesReachReader: a client that reads gets every reply of 200
// pipelined GETs of a 1 MiB value and of a 200-key MGET of it (200 MiB
// each, 20 times the connection's cap on queued output), in full and in
// order, while the server queues at most about paceHigh for it, on both
// backends. Before, the replies of one read were all made at once: past
// Config.MaxWriteBuffer (10 MiB here) the client was cut off (as
// redis-benchmark -d 1000000 -P 100 saw: "Server closed the connection").
func TestBigRepliesReachReader(t *testing.T) {
	const n = 200
	keys := strings.Split(strings.Repeat("big ", n-1)+"big", " ")
	for _, b := range []uringrt.Backend{uringrt.BackendUring, uringrt.BackendStd} {
		t.Run(b.String(), func(t *testing.T) {
			srv, addr := startServerBackend(t, b, testLimits)
			c := dial(t, addr)
			r := bufio.NewReaderSize(c, 64<<10)
			val := setBig(t, c, r, testLimits)
			stop := maxQueued(srv)
			// Both batches in one write, then a PING: the MGET waits
			// behind the GETs, the PING behind the MGET.
			c.Write([]byte(strings.Repeat(cmd("GET", "big"), n) + cmd(append([]string{"MGET"}, keys...)...) + cmd("PING")))
			bulk := "$" + strconv.Itoa(len(val)) + "\r\n" + val + "\r\n"
			for i := range n {
				if got := readReplies(t, r, 1); got != bulk {
					t.Fatalf("GET reply %d of %d: %d bytes, want %d", i+1, n, len(got), len(bulk))
				}
			}
			line, err := r.ReadString('\n')
			if err != nil || line != "*"+strconv.Itoa(n)+"\r\n" {
				t.Fatalf("MGET reply header %q, %v", line, err)
			}
			for i := range n {
				if got := readReplies(t, r, 1); got != bulk {
					t.Fatalf("MGET value %d of %d: %d bytes, want %d", i+1, n, len(got), len(bulk))
				}
			}
			if got := readReplies(t, r, 1); got != "+PONG\r\n" {
				t.Fatalf("PING after the MGET: %q", got)
			}
			if most := stop(); most > queueBound(testLimits) {
				t.Errorf("%d bytes queued for the client, over %d", most, queueBound(testLimits))
			}
		})
	}
}

// TestPacedMGETIsASnapshot: an MGET whose reply is paced answers the key
// space as it was when it ran: a SET of one of its keys by another client
// while the reply waits does not show, nor does it change the value being
// sent.
func TestPacedMGETIsASnapshot(t *testing.T) {
	_, addr := startServer(t, 1, testLimits)
	c := dial(t, addr)
	r := bufio.NewReaderSize(c, 64<<10)
	val := setBig(t, c, r, testLimits)
	const n = 40 // 40 MiB: paced well before the last key
	keys := strings.Split(strings.Repeat("big ", n-1)+"big", " ")
	c.Write([]byte(cmd(append([]string{"MGET"}, keys...)...)))
	// Not reading: the reply is paced. Another client overwrites the key.
	time.Sleep(100 * time.Millisecond)
	c2 := dial(t, addr)
	other := strings.Repeat("w", len(val))
	c2.Write([]byte(cmd("SET", "big", other)))
	if got := readReplies(t, bufio.NewReader(c2), 1); got != "+OK\r\n" {
		t.Fatalf("SET meanwhile: %q", got)
	}
	line, err := r.ReadString('\n')
	if err != nil || line != "*"+strconv.Itoa(n)+"\r\n" {
		t.Fatalf("MGET reply header %q, %v", line, err)
	}
	bulk := "$" + strconv.Itoa(len(val)) + "\r\n" + val + "\r\n"
	for i := range n {
		if got := readReplies(t, r, 1); got != bulk {
			t.Fatalf("MGET value %d of %d is not the value as the MGET ran (%.12q...)", i+1, n, got)
		}
	}
}

// TestNonReaderDisconnected: a client that pipelines 200 GETs of a 1 MiB
// value and reads nothing is held at about paceHigh of queued output and
// disconnected (OnClose, its memory released) after lim.writeTimeout
// without progress. Before, past the cap the server called Close, which
// waited for the output to drain: the connection stayed open, holding
// the cap's worth, for as long as the client stayed.
func TestNonReaderDisconnected(t *testing.T) {
	lim := testLimits
	lim.writeTimeout = 300 * time.Millisecond
	for _, b := range []uringrt.Backend{uringrt.BackendUring, uringrt.BackendStd} {
		t.Run(b.String(), func(t *testing.T) {
			srv, addr := startServerBackend(t, b, lim)
			c, err := relSmallDial(addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			r := bufio.NewReader(c)
			setBig(t, c, r, lim)
			stop := maxQueued(srv)
			c.Write([]byte(strings.Repeat(cmd("GET", "big"), 200)))
			deadline := time.Now().Add(30 * time.Second) // a hang, not a timing bound
			for {
				srv.mu.Lock()
				open := len(srv.conns)
				srv.mu.Unlock()
				if open == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("a client that reads nothing is still connected after 30 s (write timeout %v)", lim.writeTimeout)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if most := stop(); most > queueBound(lim) {
				t.Errorf("%d bytes queued for the client, over %d", most, queueBound(lim))
			}
			if p := srv.pending.Load(); p != 0 {
				t.Errorf("%d bytes of requests still held after the close", p)
			}
		})
	}
}

// relSmallDial dials addr with small socket buffers, so that a client
// that does not read stops the server's sends early.
func relSmallDial(addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	c.(*net.TCPConn).SetReadBuffer(16 << 10)
	return c, nil
}

// TestCrossProtocol: an HTTP request sent to the server (a browser made
// to POST to it, cross-protocol scripting) closes the connection at its
// first line with no reply, so a RESP command in its body never runs; as
// do a GET request line and a Host: header line. Inline commands that
// merely look alike run.
func TestCrossProtocol(t *testing.T) {
	for _, b := range []uringrt.Backend{uringrt.BackendUring, uringrt.BackendStd} {
		t.Run(b.String(), func(t *testing.T) {
			_, addr := startServerBackend(t, b, testLimits)
			body := cmd("SET", "pwned", "1")
			for _, req := range []string{
				"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body,
				"post /x HTTP/1.0\r\n" + body,
				"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + body,
				"PUT /k HTTP/1.1\r\n" + body,
				"Host: x\r\n" + body,
				"PING\r\nHost: x\r\n" + body,
			} {
				c := dial(t, addr)
				c.Write([]byte(req))
				c.SetReadDeadline(time.Now().Add(10 * time.Second))
				got, err := io.ReadAll(c)
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Fatalf("%.30q: connection left open (got %q)", req, got)
				}
				if strings.HasPrefix(req, "PING") {
					if string(got) != "+PONG\r\n" {
						t.Errorf("%.30q: got %q, want the PING's reply only", req, got)
					}
				} else if len(got) != 0 {
					t.Errorf("%.30q: got %q, want no reply", req, got)
				}
			}
			c := dial(t, addr)
			r := bufio.NewReader(c)
			c.Write([]byte(cmd("GET", "pwned") + "SET k HTTP/1.1\r\nGET k\r\nGET k HTTP/1.1\r\n"))
			want := string(proto.AppendNull(nil)) + "+OK\r\n$8\r\nHTTP/1.1\r\n"
			if got := readReplies(t, r, 3); got != want {
				t.Fatalf("after the attempts: %q, want %q", got, want)
			}
			if got, err := io.ReadAll(c); len(got) != 0 || err != nil {
				t.Fatalf("GET k HTTP/1.1 (an HTTP request line): %q, %v; want a close", got, err)
			}
		})
	}
}
