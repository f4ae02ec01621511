package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uringrt/uringrt/examples/resp/internal/proto"
	"github.com/uringrt/uringrt/runtime"
)

// testLimits are small limits, so the tests reach them with little data.
var testLimits = limits{maxBulk: 1 << 20, maxRequest: 2 << 20, maxPending: 8 << 20, pubsubLimit: 256 << 10}

// startServer serves a server with lim on a loopback port for the test.
func startServer(t testing.TB, loops int, lim limits) (*server, string) {
	t.Helper()
	rt, ln, srv, err := start("127.0.0.1:0", uringrt.Config{Loops: loops}, lim)
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

func dial(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(60 * time.Second))
	return c
}

// cmd encodes args as a RESP array request.
func cmd(args ...string) string {
	b := proto.AppendArray(nil, len(args))
	for _, a := range args {
		b = proto.AppendBulkString(b, a)
	}
	return string(b)
}

// readReplies reads n replies (each a whole RESP value) from r.
func readReplies(t testing.TB, r *bufio.Reader, n int) string {
	t.Helper()
	var b strings.Builder
	for i := 0; i < n; i++ {
		if err := readValue(r, &b); err != nil {
			t.Fatalf("reply %d of %d: %v (got %q)", i+1, n, err, b.String())
		}
	}
	return b.String()
}

// readValue copies one RESP value from r to b.
func readValue(r *bufio.Reader, b *strings.Builder) error {
	line, err := r.ReadString('\n')
	b.WriteString(line)
	if err != nil {
		return err
	}
	if len(line) < 3 {
		return errors.New("short line")
	}
	n, ok := parseInt([]byte(strings.TrimSuffix(line[1:], "\r\n")))
	switch line[0] {
	case '$':
		if ok && n >= 0 {
			buf := make([]byte, n+2)
			if _, err := io.ReadFull(r, buf); err != nil {
				return err
			}
			b.Write(buf)
		}
	case '*':
		for i := int64(0); ok && i < n; i++ {
			if err := readValue(r, b); err != nil {
				return err
			}
		}
	}
	return nil
}

// loadCommands reads a table of requests and replies (see the file's head).
func loadCommands(t *testing.T, path string) []struct{ req, reply string } {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var tests []struct{ req, reply string }
	for i, line := range strings.Split(string(b), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		q1, err1 := strconv.QuotedPrefix(line)
		q2, err2 := strconv.QuotedPrefix(strings.TrimPrefix(line[len(q1):], " "))
		req, err3 := strconv.Unquote(q1)
		reply, err4 := strconv.Unquote(q2)
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			t.Fatalf("%s:%d: %v", path, i+1, err)
		}
		tests = append(tests, struct{ req, reply string }{req, reply})
	}
	if len(tests) == 0 {
		t.Fatalf("%s: no requests", path)
	}
	return tests
}

// TestCommands runs the table of testdata/commands.txt (which
// bench/cmd/std-resp, the Go net twin, runs too) with one loop and two.
func TestCommands(t *testing.T) {
	for _, loops := range []int{1, 2} {
		_, addr := startServer(t, loops, testLimits)
		c := dial(t, addr)
		r := bufio.NewReader(c)
		tests := loadCommands(t, "testdata/commands.txt")
		for _, tt := range tests {
			if _, err := c.Write([]byte(tt.req)); err != nil {
				t.Fatal(err)
			}
			if got := readReplies(t, r, 1); got != tt.reply {
				t.Errorf("loops %d: %q: %q, want %q", loops, tt.req, got, tt.reply)
			}
		}
		// Quit: +OK, then the server closes.
		c.Write([]byte(cmd("QUIT") + cmd("PING")))
		if got := readReplies(t, r, 1); got != "+OK\r\n" {
			t.Errorf("QUIT: %q", got)
		}
		if b, err := r.ReadByte(); err != io.EOF {
			t.Errorf("after QUIT: %q, %v; want EOF", b, err)
		}
	}
}

// TestExpiry: a key set with PX is gone once its time passed.
func TestExpiry(t *testing.T) {
	_, addr := startServer(t, 1, testLimits)
	c := dial(t, addr)
	r := bufio.NewReader(c)
	c.Write([]byte(cmd("SET", "k", "v", "PX", "1") + cmd("SET", "keep", "v", "EX", "1000")))
	readReplies(t, r, 2)
	time.Sleep(20 * time.Millisecond) // past the 1 ms; no upper bound is asserted
	c.Write([]byte(cmd("GET", "k") + cmd("EXISTS", "k", "keep")))
	if got := readReplies(t, r, 2); got != "$-1\r\n:1\r\n" {
		t.Fatalf("%q", got)
	}
}

// TestPipelineSplitEverywhere: a pipeline written in two parts, split at
// every byte offset, gets every reply, in order.
func TestPipelineSplitEverywhere(t *testing.T) {
	_, addr := startServer(t, 1, testLimits)
	req := cmd("SET", "key", "0123456789") + "PING\r\n" + cmd("GET", "key") + cmd("INCR", "n")
	c := dial(t, addr)
	c.(*net.TCPConn).SetNoDelay(true)
	r := bufio.NewReader(c)
	for cut := 0; cut <= len(req); cut++ {
		c.Write([]byte(req[:cut]))
		c.Write([]byte(req[cut:]))
		got := readReplies(t, r, 4)
		want := "+OK\r\n+PONG\r\n$10\r\n0123456789\r\n:"
		if !strings.HasPrefix(got, want) {
			t.Fatalf("cut %d: %q", cut, got)
		}
	}
}

// TestProtocolErrors: malformed requests and requests over the limits get
// a RESP error and the connection is closed; the server keeps serving.
func TestProtocolErrors(t *testing.T) {
	srv, addr := startServer(t, 1, testLimits)
	tests := []struct {
		name, req, reply string
		more             int // bytes of filler sent after req, never a whole request
	}{
		{"512 MiB bulk", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$536870912\r\n", "-ERR Protocol error: invalid bulk length\r\n", 0},
		{"huge array", "*9999999999\r\n", "-ERR Protocol error: invalid multibulk length\r\n", 0},
		{"not a bulk", "*2\r\n:1\r\n", "-ERR Protocol error: expected '$', got ':'\r\n", 0},
		{"bad bulk end", "*1\r\n$1\r\nab\r\n", "-ERR Protocol error: line not terminated by CRLF\r\n", 0},
		// An array that never ends: elements keep coming; the request
		// passes maxRequest and is refused.
		{"unterminated array", "*1000000\r\n", "-ERR Protocol error: request too big\r\n", testLimits.maxRequest + 1<<20},
		// An inline line that never ends.
		{"endless inline", "GET ", "-ERR Protocol error: too big inline request\r\n", 1 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, addr)
			go func() {
				c.Write([]byte(tt.req))
				filler := bytes.Repeat([]byte("$1\r\nx\r\n"), 1<<12)
				if tt.req[0] != '*' {
					filler = bytes.Repeat([]byte("x"), len(filler))
				}
				for sent := 0; sent < tt.more; sent += len(filler) {
					if _, err := c.Write(filler); err != nil {
						return // the server closed: expected
					}
				}
			}()
			got, _ := io.ReadAll(c)
			if string(got) != tt.reply {
				t.Fatalf("%q, want %q then EOF", got, tt.reply)
			}
		})
	}
	c := dial(t, addr)
	c.Write([]byte(cmd("PING")))
	if got := readReplies(t, bufio.NewReader(c), 1); got != "+PONG\r\n" {
		t.Fatalf("after the errors: %q", got)
	}
	c.Close()
	waitPending(t, srv, 0)
}

// waitPending waits until the server holds want bytes of partial requests.
func waitPending(t *testing.T, srv *server, want int64) {
	t.Helper()
	for i := 0; srv.pending.Load() != want; i++ {
		if i == 1000 {
			t.Fatalf("%d bytes of partial requests held, want %d", srv.pending.Load(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPendingBound: connections that each hold a partial request under the
// per-request bound are refused, once together they pass maxPending, with
// an error and a close; the requests held before complete.
func TestPendingBound(t *testing.T) {
	lim := testLimits
	lim.maxPending = 3 << 20
	srv, addr := startServer(t, 1, lim)
	val := strings.Repeat("v", 900<<10) // under maxBulk
	partial := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$" + strconv.Itoa(len(val)) + "\r\n" + val[:len(val)-10]
	var held []net.Conn
	refused := 0
	for i := 0; i < 8; i++ {
		c := dial(t, addr)
		before := srv.pending.Load()
		c.Write([]byte(partial))
		// Held (the server's count grew by the partial request) or
		// refused (an error, then EOF); nothing else.
		r := bufio.NewReader(c)
		for {
			if srv.pending.Load()-before >= int64(len(partial)) {
				held = append(held, c)
				break
			}
			c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
			line, err := r.ReadString('\n')
			if line == "-ERR server is out of memory for partial requests\r\n" {
				refused++
				break
			}
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				t.Fatalf("connection %d: %q, %v", i, line, err)
			}
		}
		if p := srv.pending.Load(); p > lim.maxPending+int64(len(partial)) {
			t.Fatalf("%d bytes held, over the bound %d", p, lim.maxPending)
		}
	}
	if len(held) == 0 || refused == 0 {
		t.Fatalf("%d connections held, %d refused; want some of each", len(held), refused)
	}
	for _, c := range held {
		c.SetReadDeadline(time.Now().Add(60 * time.Second))
		c.Write([]byte(val[len(val)-10:] + "\r\n"))
		if got := readReplies(t, bufio.NewReader(c), 1); got != "+OK\r\n" {
			t.Fatalf("held request: %q", got)
		}
	}
	waitPending(t, srv, 0)
}

// TestExecNoAllocs: GET and SET of an existing key (what redis-benchmark
// sends: SET and GET of key:__rand_int__) allocate nothing, on the
// unlocked store of one loop and the sharded one of several.
func TestExecNoAllocs(t *testing.T) {
	set := [][]byte{[]byte("SET"), []byte("key:__rand_int__"), []byte("xxx")}
	get := [][]byte{[]byte("GET"), []byte("key:__rand_int__")}
	for _, shared := range []bool{false, true} {
		s := newServer(shared, testLimits)
		cl := &client{}
		out := s.exec(cl, set, nil)
		allocs := testing.AllocsPerRun(1000, func() {
			out = s.exec(cl, set, out[:0])
			out = s.exec(cl, get, out)
		})
		if allocs != 0 || string(out) != "+OK\r\n$3\r\nxxx\r\n" {
			t.Fatalf("shared %v: %v allocations, replies %q", shared, allocs, out)
		}
	}
}

// TestActiveExpiry: keys that expire and are never read again are deleted
// by the sweep (DBSIZE counts them until then), which stops once no key
// has a TTL.
func TestActiveExpiry(t *testing.T) {
	for _, loops := range []int{1, 2} {
		srv, addr := startServer(t, loops, testLimits)
		c := dial(t, addr)
		r := bufio.NewReader(c)
		var req strings.Builder
		for i := 0; i < 50; i++ {
			req.WriteString(cmd("SET", "k"+strconv.Itoa(i), "v", "PX", "1"))
		}
		req.WriteString(cmd("SET", "stays", "v"))
		c.Write([]byte(req.String()))
		readReplies(t, r, 51)
		for i := 0; ; i++ {
			c.Write([]byte(cmd("DBSIZE")))
			if got := readReplies(t, r, 1); got == ":1\r\n" {
				break
			} else if i == 1000 {
				t.Fatalf("loops %d: DBSIZE %q after 10 s: the expired keys were not swept", loops, got)
			}
			time.Sleep(10 * time.Millisecond)
		}
		for i := 0; srv.sweeping.Load(); i++ {
			if i == 1000 {
				t.Fatalf("loops %d: the sweep still runs with no key to expire", loops)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// BenchmarkPipeline: what the server does for one read of redis-benchmark
// -P 16 (16 GETs, or 16 SETs), without the runtime: parse, run, reply.
func BenchmarkPipeline(b *testing.B) {
	for _, name := range []string{"GET", "SET"} {
		b.Run(name, func(b *testing.B) {
			var in []byte
			for i := 0; i < 16; i++ {
				if name == "GET" {
					in = append(in, cmd("GET", "key:__rand_int__")...)
				} else {
					in = append(in, cmd("SET", "key:__rand_int__", "xxx")...)
				}
			}
			s := newServer(false, testLimits)
			cl := &client{}
			s.exec(cl, [][]byte{[]byte("SET"), []byte("key:__rand_int__"), []byte("xxx")}, nil)
			var out []byte
			for b.Loop() {
				out, _ = s.runAll(cl, in, out[:0])
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*16), "ns/req")
		})
	}
}
