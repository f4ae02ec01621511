package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startTwin serves a twin with writeTimeout on a loopback port for the
// test; ended receives once per connection whose serve returned.
func startTwin(t *testing.T, writeTimeout time.Duration) (addr string, ended chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := newServer(64)
	s.writeTimeout = writeTimeout
	ended = make(chan struct{}, 64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				s.serve(c)
				ended <- struct{}{}
			}()
		}
	}()
	return ln.Addr().String(), ended
}

func dialTwin(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(60 * time.Second))
	return c
}

// req encodes args as a RESP array request.
func req(args ...string) string {
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	return b.String()
}

// readLine reads one reply line, or a bulk reply whole.
func readReply(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("reply: %v (got %q)", err, line)
	}
	if line[0] != '$' || line == "$-1\r\n" {
		return line
	}
	n, _ := strconv.Atoi(strings.TrimSuffix(line[1:], "\r\n"))
	b := make([]byte, n+2)
	if _, err := io.ReadFull(r, b); err != nil {
		t.Fatalf("bulk reply: %v", err)
	}
	return line + string(b)
}

// TestBigRepliesReachReader: the twin, as examples/resp, delivers 200
// pipelined GETs of a 1 MiB value and a 200-key MGET of it in full to a
// client that reads.
func TestBigRepliesReachReader(t *testing.T) {
	addr, _ := startTwin(t, 10*time.Second)
	c := dialTwin(t, addr)
	r := bufio.NewReaderSize(c, 64<<10)
	val := strings.Repeat("v", 1<<20)
	c.Write([]byte(req("SET", "big", val)))
	if got := readReply(t, r); got != "+OK\r\n" {
		t.Fatalf("SET: %q", got)
	}
	const n = 200
	keys := strings.Split(strings.Repeat("big ", n-1)+"big", " ")
	c.Write([]byte(strings.Repeat(req("GET", "big"), n) + req(append([]string{"MGET"}, keys...)...) + req("PING")))
	bulk := "$" + strconv.Itoa(len(val)) + "\r\n" + val + "\r\n"
	for i := range n {
		if got := readReply(t, r); got != bulk {
			t.Fatalf("GET reply %d: %d bytes", i+1, len(got))
		}
	}
	if got := readReply(t, r); got != "*200\r\n" {
		t.Fatalf("MGET header %q", got)
	}
	for i := range n {
		if got := readReply(t, r); got != bulk {
			t.Fatalf("MGET value %d: %d bytes", i+1, len(got))
		}
	}
	if got := readReply(t, r); got != "+PONG\r\n" {
		t.Fatalf("PING: %q", got)
	}
}

// TestNonReaderDisconnected: a client that pipelines 200 GETs of a 1 MiB
// value and reads nothing is disconnected after the write timeout. Before,
// its goroutine blocked in a write for as long as the client stayed.
func TestNonReaderDisconnected(t *testing.T) {
	addr, ended := startTwin(t, 300*time.Millisecond)
	c := dialTwin(t, addr)
	c.(*net.TCPConn).SetReadBuffer(16 << 10)
	r := bufio.NewReader(c)
	c.Write([]byte(req("SET", "big", strings.Repeat("v", 1<<20))))
	if got := readReply(t, r); got != "+OK\r\n" {
		t.Fatalf("SET: %q", got)
	}
	c.Write([]byte(strings.Repeat(req("GET", "big"), 200)))
	select {
	case <-ended:
	case <-time.After(30 * time.Second): // a hang, not a timing bound
		t.Fatal("a client that reads nothing is still served after 30 s (write timeout 300 ms)")
	}
}

// TestCrossProtocol: as examples/resp, an HTTP request line, a POST or a
// Host: line closes the connection with no reply, and the RESP command in
// the body never runs.
func TestCrossProtocol(t *testing.T) {
	addr, _ := startTwin(t, 10*time.Second)
	body := req("SET", "pwned", "1")
	for _, rq := range []string{
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body,
		"post /x HTTP/1.0\r\n" + body,
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + body,
		"PUT /k HTTP/1.1\r\n" + body,
		"Host: x\r\n" + body,
		"PING\r\nHost: x\r\n" + body,
	} {
		c := dialTwin(t, addr)
		c.Write([]byte(rq))
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		got, err := io.ReadAll(c)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("%.30q: connection left open (got %q)", rq, got)
		}
		if strings.HasPrefix(rq, "PING") {
			if string(got) != "+PONG\r\n" {
				t.Errorf("%.30q: got %q, want the PING's reply only", rq, got)
			}
		} else if len(got) != 0 {
			t.Errorf("%.30q: got %q, want no reply", rq, got)
		}
	}
	c := dialTwin(t, addr)
	r := bufio.NewReader(c)
	c.Write([]byte(req("GET", "pwned") + "SET k HTTP/1.1\r\nGET k\r\nGET k HTTP/1.1\r\n"))
	for _, want := range []string{"$-1\r\n", "+OK\r\n", "$8\r\nHTTP/1.1\r\n"} {
		if got := readReply(t, r); got != want {
			t.Fatalf("after the attempts: %q, want %q", got, want)
		}
	}
	if got, err := io.ReadAll(c); len(got) != 0 || err != nil {
		t.Fatalf("GET k HTTP/1.1 (an HTTP request line): %q, %v; want a close", got, err)
	}
}
