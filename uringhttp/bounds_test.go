package uringhttp

// What one connection may hold of the server's output: a client that reads
// slowly or not at all, a hijacked connection that never reads, a client
// that pipelines requests without reading their answers. Each is measured
// by the queue the handler leaves behind after each of its writes
// (uringrt.CallbackConn.OutboundBuffered, the bytes the kernel has not
// taken), which is exact and does not depend on timing: the socket's own
// buffers are the kernel's and are not counted.

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// queueProbe records the largest output queue a handler saw after a write.
type queueProbe struct {
	max   atomic.Int64
	wrote atomic.Int64
}

func (q *queueProbe) note(h *hconn, n int) {
	q.wrote.Add(int64(n))
	if b := int64(h.c.OutboundBuffered()); b > q.max.Load() {
		q.max.Store(b)
	}
}

// writeEach writes msg to w count times, noting h's queue after each
// write, and stops at the first error.
func (q *queueProbe) writeEach(h *hconn, w io.Writer, msg []byte, count int) {
	for i := 0; i < count; i++ {
		if _, err := w.Write(msg); err != nil {
			return
		}
		q.note(h, len(msg))
	}
}

// stalled waits until the handler's writes stop advancing (the client
// reads nothing: the handler blocks once the kernel and the queue are
// full) or limit passes.
func (q *queueProbe) stalled(limit time.Duration) {
	end := time.Now().Add(limit)
	last, still := int64(-1), 0
	for time.Now().Before(end) && still < 5 {
		time.Sleep(100 * time.Millisecond)
		if n := q.wrote.Load(); n == last {
			still++
		} else {
			last, still = n, 0
		}
	}
}

// TestNonReadingClientQueueBounded: a 64 MiB download to a client that
// reads nothing leaves at most the server's per-connection bound queued
// (MaxQueuedOutput's default) after each Write, where the whole runtime
// queue (4 MiB) filled before.
func TestNonReadingClientQueueBounded(t *testing.T) {
	var q queueProbe
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q.writeEach(w.(*response).h, w, make([]byte, 32<<10), (64<<20)/(32<<10))
	})})
	c := dialT(t, addr)
	io.WriteString(c, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
	q.stalled(15 * time.Second)
	c.Close()
	t.Logf("the handler wrote %d KiB before it blocked; largest queue after a write: %d bytes", q.wrote.Load()>>10, q.max.Load())
	if m := q.max.Load(); m > DefaultMaxQueuedOutput {
		t.Fatalf("a non-reading client's connection queued %d bytes after a write, want <= %d", m, DefaultMaxQueuedOutput)
	}
	if q.wrote.Load() >= 64<<20 {
		t.Fatal("the handler wrote all 64 MiB to a client that reads nothing")
	}
}

// TestHijackedWriteQueueBounded: a hijacked connection whose peer never
// reads: 1 MiB writes block as a socket's do once a small queue is full.
func TestHijackedWriteQueueBounded(t *testing.T) {
	var q queueProbe
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.(*response).h
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		q.writeEach(h, conn, make([]byte, 1<<20), 256)
	})})
	c := dialT(t, addr)
	io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: x\r\n\r\n")
	q.stalled(15 * time.Second)
	c.Close()
	t.Logf("hijacked: %d MiB written before Write blocked; largest queue after a write: %d bytes", q.wrote.Load()>>20, q.max.Load())
	if m := q.max.Load(); m > DefaultMaxQueuedOutput {
		t.Fatalf("a hijacked connection queued %d bytes after a write, want <= %d", m, DefaultMaxQueuedOutput)
	}
}

// TestPipelinedFloodQueueBounded: a client pipelines requests and reads
// no answer: the answers queue no more than the bound (the handlers block,
// the connection's input fills and its reading pauses), however many
// requests it sends.
func TestPipelinedFloodQueueBounded(t *testing.T) {
	var q queueProbe
	var served atomic.Int64
	body := strings.Repeat("p", 16<<10)
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		io.WriteString(w, body)
		w.(http.Flusher).Flush()
		q.note(w.(*response).h, len(body))
	})})
	c := dialT(t, addr)
	const n = 20000
	reqs := strings.Repeat("GET /p HTTP/1.1\r\nHost: x\r\n\r\n", 1000)
	sent := make(chan int, 1)
	go func() {
		i := 0
		for ; i < n/1000; i++ {
			c.SetWriteDeadline(time.Now().Add(3 * time.Second))
			if _, err := io.WriteString(c, reqs); err != nil {
				break
			}
		}
		sent <- i * 1000
	}()
	q.stalled(20 * time.Second)
	got := <-sent
	c.Close()
	t.Logf("%d requests sent, %d answered while the client read nothing; largest queue after an answer: %d bytes", got, served.Load(), q.max.Load())
	if m := q.max.Load(); m > DefaultMaxQueuedOutput {
		t.Fatalf("pipelined answers queued %d bytes on a client that reads none, want <= %d", m, DefaultMaxQueuedOutput)
	}
}

// TestShutdownClosesPartialSecondHead: after one request, a connection
// that sent part of a second head is idle for Shutdown, as in net/http:
// it is closed at once, without an answer.
func TestShutdownClosesPartialSecondHead(t *testing.T) {
	srv := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hi") })}
	addr := serve(t, srv)
	var conns []net.Conn
	for i := 0; i < 5; i++ {
		c := dialT(t, addr)
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		br := bufio.NewReader(c)
		resp := readRespT(t, br)
		io.Copy(io.Discard, resp.Body)
		io.WriteString(c, "GET / HTTP/1.1\r\nHos")
		conns = append(conns, c)
	}
	time.Sleep(100 * time.Millisecond) // the partial heads reached the server
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with 5 connections holding part of a second head: %v after %v (net/http closes them as idle)", err, time.Since(start))
	}
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, err := io.ReadAll(c)
		if len(b) > 0 || err != nil {
			t.Errorf("a partial second head closed by Shutdown got %q, %v; want nothing and EOF", b, err)
		}
	}
}

// TestUploadInputBounded: an upload to a slow handler holds one input
// buffer of the documented size at most (inHighWater unread, when reading
// pauses, and what the last receive brought).
func TestUploadInputBounded(t *testing.T) {
	var most atomic.Int64
	done := make(chan int64, 1)
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.(*response).h
		buf := make([]byte, 64<<10)
		var n int64
		for {
			k, err := io.ReadFull(r.Body, buf)
			n += int64(k)
			h.mu.Lock()
			if c := int64(cap(h.in)); c > most.Load() {
				most.Store(c)
			}
			h.mu.Unlock()
			if err != nil {
				break
			}
			time.Sleep(time.Millisecond)
		}
		done <- n
	})})
	c := dialT(t, addr)
	const size = 16 << 20
	io.WriteString(c, "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 16777216\r\n\r\n")
	chunk := make([]byte, 1<<20)
	for sent := 0; sent < size; sent += len(chunk) {
		c.SetWriteDeadline(time.Now().Add(20 * time.Second))
		if _, err := c.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if n := <-done; n != size {
		t.Fatalf("the handler read %d bytes, want %d", n, size)
	}
	t.Logf("largest input buffer: %d bytes", most.Load())
	if m := most.Load(); m > inHighWater+inRecvMax {
		t.Fatalf("an upload's input buffer reached %d bytes, want <= %d", m, inHighWater+inRecvMax)
	}
}
