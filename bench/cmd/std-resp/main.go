// Command std-resp is the Go net twin of examples/resp: the same RESP2
// commands and store semantics (PING, ECHO, SET with EX/PX/NX/XX/KEEPTTL,
// GET, DEL, EXISTS, INCR, MGET, MSET, CONFIG GET, SUBSCRIBE, UNSUBSCRIBE,
// PUBLISH, QUIT, SELECT 0, DBSIZE, FLUSHALL, COMMAND), written the way a Go
// user writes a server on Go's net: a goroutine per connection reading
// through a bufio.Reader and answering through a bufio.Writer flushed when
// no more input is buffered (so a pipelined batch is answered with one
// write), a map under a sync.RWMutex, and for each subscriber a buffered
// channel of messages drained by a writer goroutine; a publisher that
// finds a subscriber's channel full (-pubsub-queue messages) disconnects
// it, so one that never reads is cut off while the others keep their rate.
//
//	std-resp -addr 127.0.0.1:6381
//
// As examples/resp does, it disconnects a client that reads none of its
// replies for -write-timeout (a write deadline on each write to it), and
// closes with no reply a connection whose request is an HTTP request line,
// a POST or a Host: header line (cross-protocol scripting, as Redis does).
//
// It is the baseline of scripts/bench-resp.sh. It exits 0 on SIGINT or
// SIGTERM.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	maxBulk   = 64 << 20 // longest bulk string, bytes (as examples/resp)
	maxArgs   = 1 << 20  // most elements of a request array
	maxInline = 64 << 10 // longest inline command line, bytes
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6381", "listen `address`")
	queue := flag.Int("pubsub-queue", 8192, "messages queued for a subscriber before it is disconnected")
	writeTimeout := flag.Duration("write-timeout", 10*time.Second, "disconnect a client that reads none of its replies for this long (0: never)")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal("std-resp: ", err)
	}
	fmt.Fprintf(os.Stderr, "std-resp: serving RESP2 on %s (Go net)\n", ln.Addr())
	s := newServer(*queue)
	s.writeTimeout = *writeTimeout
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); ln.Close() }()
	go s.sweepLoop(ctx)
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			log.Print("std-resp: ", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		go s.serve(c)
	}
}

type entry struct {
	val    []byte
	expire int64 // Unix ns; 0: never
}

type server struct {
	mu   sync.RWMutex
	data map[string]*entry

	psMu  sync.RWMutex
	chans map[string]map[*conn]struct{}
	queue int

	writeTimeout time.Duration // see timedWriter
	crossLogged  atomic.Int64  // when a cross-protocol attempt was last logged (Unix ns)
}

func newServer(queue int) *server {
	return &server{data: map[string]*entry{}, chans: map[string]map[*conn]struct{}{}, queue: queue}
}

// conn is one client. Its goroutine reads requests and writes replies;
// once it subscribes, a writer goroutine also writes its messages, so w
// is shared under wmu.
type conn struct {
	nc   net.Conn
	r    *bufio.Reader
	wmu  sync.Mutex
	w    *bufio.Writer
	args [][]byte
	buf  []byte // the arguments' bytes
	num  []byte // scratch for numbers

	subs    map[string]bool
	msgs    chan []byte // messages for the writer goroutine
	dropped sync.Once
	done    chan struct{}
}

var errProto = errors.New("protocol error")

func (s *server) serve(nc net.Conn) {
	c := &conn{nc: nc, r: bufio.NewReader(nc), w: bufio.NewWriter(timedWriter{nc, s.writeTimeout}), done: make(chan struct{})}
	defer func() {
		close(c.done)
		s.unsubscribeAll(c, nil)
		nc.Close()
	}()
	for {
		args, err := c.readRequest()
		if err != nil {
			if pe, ok := err.(*protoError); ok {
				c.wmu.Lock()
				c.w.WriteString("-ERR Protocol error: " + pe.msg + "\r\n")
				c.w.Flush()
				c.wmu.Unlock()
			}
			return
		}
		if len(args) == 0 {
			continue
		}
		if s.crossProtocol(c, args) {
			c.wmu.Lock()
			c.w.Flush() // the replies before it
			c.wmu.Unlock()
			return
		}
		c.wmu.Lock()
		quit := s.exec(c, args)
		if c.r.Buffered() == 0 || quit {
			c.w.Flush()
		}
		c.wmu.Unlock()
		if quit {
			return
		}
	}
}

// timedWriter writes to a client's connection under the write timeout d
// (0: none): a write that makes no progress for d fails and closes the
// connection (its reader then ends the client), so a client that reads
// none of its replies is disconnected.
type timedWriter struct {
	nc net.Conn
	d  time.Duration
}

func (w timedWriter) Write(p []byte) (int, error) {
	if w.d <= 0 {
		return w.nc.Write(p)
	}
	done := 0
	for {
		w.nc.SetWriteDeadline(time.Now().Add(w.d))
		n, err := w.nc.Write(p[done:])
		done += n
		if err == nil {
			return done, nil
		}
		if n > 0 && errors.Is(err, os.ErrDeadlineExceeded) {
			continue // it read some: progress
		}
		w.nc.Close()
		return done, err
	}
}

// crossProtocol reports whether args are what an HTTP request makes of
// the inline syntax: a request line (GET / HTTP/1.1, any method), or, as
// Redis treats them, POST or a Host: header line. The connection is then
// closed with no reply, so a browser made to send a request to the server
// (cross-protocol scripting) runs nothing, its body included; the attempt
// is logged at most once a minute, as Redis logs it.
func (s *server) crossProtocol(c *conn, args [][]byte) bool {
	cross := strings.EqualFold(string(args[0]), "post") || strings.EqualFold(string(args[0]), "host:")
	if !cross && len(args) == 3 && strings.HasPrefix(string(args[2]), "HTTP/") {
		switch strings.ToUpper(string(args[0])) {
		case "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH":
			cross = true
		}
	}
	if cross {
		if t := now(); t-s.crossLogged.Load() > int64(time.Minute) {
			s.crossLogged.Store(t)
			log.Printf("std-resp: possible security attack: a client sent an HTTP request (%.20q); connection from %v closed", args[0], c.nc.RemoteAddr())
		}
	}
	return cross
}

type protoError struct{ msg string }

func (e *protoError) Error() string { return "Protocol error: " + e.msg }

// readRequest reads one request: an array of bulk strings, or an inline
// line of words.
func (c *conn) readRequest() ([][]byte, error) {
	line, err := c.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, &protoError{"too big inline request"}
	}
	if err != nil {
		return nil, err
	}
	c.args = c.args[:0]
	c.buf = c.buf[:0]
	if line[0] != '*' {
		if len(line) > maxInline {
			return nil, &protoError{"too big inline request"}
		}
		c.buf = append(c.buf, line...)
		for _, f := range strings.Fields(string(c.buf)) {
			c.args = append(c.args, []byte(f))
		}
		return c.args, nil
	}
	n, err := strconv.Atoi(strings.TrimRight(string(line[1:]), "\r\n"))
	if err != nil || n > maxArgs {
		return nil, &protoError{"invalid multibulk length"}
	}
	type span struct{ s, e int }
	spans := make([]span, 0, 8)
	for i := 0; i < n; i++ {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			if err == bufio.ErrBufferFull {
				return nil, &protoError{"invalid bulk length"}
			}
			return nil, err
		}
		if line[0] != '$' {
			return nil, &protoError{fmt.Sprintf("expected '$', got '%c'", line[0])}
		}
		l, err := strconv.Atoi(strings.TrimRight(string(line[1:]), "\r\n"))
		if err != nil || l < 0 || l > maxBulk {
			return nil, &protoError{"invalid bulk length"}
		}
		start := len(c.buf)
		if cap(c.buf)-start < l+2 {
			nb := make([]byte, start, 2*cap(c.buf)+l+2)
			copy(nb, c.buf)
			c.buf = nb
		}
		c.buf = c.buf[:start+l+2]
		if _, err := io.ReadFull(c.r, c.buf[start:]); err != nil {
			return nil, err
		}
		if c.buf[start+l] != '\r' || c.buf[start+l+1] != '\n' {
			return nil, &protoError{"line not terminated by CRLF"}
		}
		spans = append(spans, span{start, start + l})
	}
	for _, sp := range spans {
		c.args = append(c.args, c.buf[sp.s:sp.e:sp.e])
	}
	if cap(c.buf) > 1<<20 && n <= 3 {
		defer func() { c.buf = nil }()
	}
	return c.args, nil
}

// Replies, written to c.w (c.wmu held).

func (c *conn) simple(s string) { c.w.WriteString("+" + s + "\r\n") }
func (c *conn) err(s string)    { c.w.WriteString("-" + s + "\r\n") }
func (c *conn) null()           { c.w.WriteString("$-1\r\n") }

func (c *conn) int(n int64) {
	c.w.WriteByte(':')
	c.num = strconv.AppendInt(c.num[:0], n, 10)
	c.w.Write(c.num)
	c.w.WriteString("\r\n")
}

func (c *conn) bulk(b []byte) {
	c.w.WriteByte('$')
	c.num = strconv.AppendInt(c.num[:0], int64(len(b)), 10)
	c.w.Write(c.num)
	c.w.WriteString("\r\n")
	c.w.Write(b)
	c.w.WriteString("\r\n")
}

func (c *conn) array(n int) {
	c.w.WriteByte('*')
	c.num = strconv.AppendInt(c.num[:0], int64(n), 10)
	c.w.Write(c.num)
	c.w.WriteString("\r\n")
}

func now() int64 { return time.Now().UnixNano() }

// live returns the entry of key unless it expired (s.mu held).
func (s *server) live(key []byte) *entry {
	e := s.data[string(key)]
	if e != nil && e.expire != 0 && e.expire <= now() {
		return nil
	}
	return e
}

// setLocked stores a copy of val (s.mu held for writing).
func (s *server) setLocked(key, val []byte, expire int64) {
	e := s.data[string(key)]
	if e == nil {
		e = &entry{}
		s.data[string(key)] = e
	}
	e.val = append(e.val[:0], val...)
	e.expire = expire
}

// exec runs one request and writes its reply; it reports QUIT.
func (s *server) exec(c *conn, args [][]byte) (quit bool) {
	name := strings.ToLower(string(args[0]))
	if len(c.subs) > 0 {
		switch name {
		case "subscribe", "unsubscribe", "ping", "quit":
		default:
			c.err("ERR Can't execute '" + name + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
			return false
		}
	}
	arity := func(ok bool) bool {
		if !ok {
			c.err("ERR wrong number of arguments for '" + name + "' command")
		}
		return ok
	}
	switch name {
	case "get":
		if !arity(len(args) == 2) {
			return
		}
		s.mu.RLock()
		if e := s.live(args[1]); e != nil {
			c.bulk(e.val)
		} else {
			c.null()
		}
		s.mu.RUnlock()
	case "set":
		s.set(c, args)
	case "ping":
		if !arity(len(args) <= 2) {
			return
		}
		switch {
		case len(c.subs) > 0:
			c.array(2)
			c.bulk([]byte("pong"))
			if len(args) == 2 {
				c.bulk(args[1])
			} else {
				c.bulk(nil)
			}
		case len(args) == 2:
			c.bulk(args[1])
		default:
			c.simple("PONG")
		}
	case "echo":
		if arity(len(args) == 2) {
			c.bulk(args[1])
		}
	case "del", "exists":
		if !arity(len(args) >= 2) {
			return
		}
		n := 0
		s.mu.Lock()
		for _, k := range args[1:] {
			if s.live(k) != nil {
				n++
				if name == "del" {
					delete(s.data, string(k))
				}
			}
		}
		s.mu.Unlock()
		c.int(int64(n))
	case "incr":
		if !arity(len(args) == 2) {
			return
		}
		s.mu.Lock()
		e := s.live(args[1])
		var n int64
		var err error
		if e != nil {
			n, err = strconv.ParseInt(string(e.val), 10, 64)
		}
		switch {
		case err != nil:
			c.err("ERR value is not an integer or out of range")
		case n == 1<<63-1:
			c.err("ERR increment or decrement would overflow")
		case e == nil:
			s.setLocked(args[1], []byte("1"), 0)
			c.int(1)
		default:
			n++
			e.val = strconv.AppendInt(e.val[:0], n, 10)
			c.int(n)
		}
		s.mu.Unlock()
	case "mget":
		if !arity(len(args) >= 2) {
			return
		}
		c.array(len(args) - 1)
		s.mu.RLock()
		for _, k := range args[1:] {
			if e := s.live(k); e != nil {
				c.bulk(e.val)
			} else {
				c.null()
			}
		}
		s.mu.RUnlock()
	case "mset":
		if !arity(len(args) >= 3 && len(args)%2 == 1) {
			return
		}
		s.mu.Lock()
		for i := 1; i < len(args); i += 2 {
			s.setLocked(args[i], args[i+1], 0)
		}
		s.mu.Unlock()
		c.simple("OK")
	case "config":
		s.config(c, args)
	case "command":
		c.array(0)
	case "subscribe":
		if !arity(len(args) >= 2) {
			return
		}
		for _, ch := range args[1:] {
			s.subscribe(c, string(ch))
			c.subReply("subscribe", []byte(ch), len(c.subs))
		}
	case "unsubscribe":
		s.unsubscribeAll(c, args[1:])
	case "publish":
		if arity(len(args) == 3) {
			c.int(int64(s.publish(args[1], args[2])))
		}
	case "quit":
		c.simple("OK")
		return true
	case "select":
		if !arity(len(args) == 2) {
			return
		}
		if string(args[1]) != "0" {
			c.err("ERR DB index is out of range")
		} else {
			c.simple("OK")
		}
	case "dbsize":
		s.mu.RLock()
		n := len(s.data)
		s.mu.RUnlock()
		c.int(int64(n))
	case "flushall", "flushdb":
		s.mu.Lock()
		clear(s.data)
		s.mu.Unlock()
		c.simple("OK")
	case "client":
		if len(args) >= 2 && (strings.EqualFold(string(args[1]), "setname") || strings.EqualFold(string(args[1]), "setinfo")) {
			c.simple("OK")
		} else {
			c.err("ERR unknown subcommand or wrong number of arguments for 'client' command")
		}
	default:
		var b strings.Builder
		fmt.Fprintf(&b, "ERR unknown command '%s', with args beginning with: ", args[0])
		for _, a := range args[1:] {
			if b.Len() > 256 {
				break
			}
			fmt.Fprintf(&b, "'%s' ", a)
		}
		c.err(b.String())
	}
	return false
}

func (s *server) set(c *conn, args [][]byte) {
	if len(args) < 3 {
		c.err("ERR wrong number of arguments for 'set' command")
		return
	}
	var expire int64
	nx, xx, keep := false, false, false
	for i := 3; i < len(args); i++ {
		opt := strings.ToUpper(string(args[i]))
		switch {
		case opt == "NX" && !xx:
			nx = true
		case opt == "XX" && !nx:
			xx = true
		case opt == "KEEPTTL" && expire == 0:
			keep = true
		case (opt == "EX" || opt == "PX") && expire == 0 && !keep && i+1 < len(args):
			i++
			v, err := strconv.ParseInt(string(args[i]), 10, 64)
			if err != nil {
				c.err("ERR value is not an integer or out of range")
				return
			}
			unit := int64(time.Second)
			if opt == "PX" {
				unit = int64(time.Millisecond)
			}
			if v <= 0 || v > (1<<63-1)/unit {
				c.err("ERR invalid expire time in 'set' command")
				return
			}
			expire = now() + v*unit
		default:
			c.err("ERR syntax error")
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.live(args[1])
	if nx && e != nil || xx && e == nil {
		c.null()
		return
	}
	if keep && e != nil {
		expire = e.expire
	}
	s.setLocked(args[1], args[2], expire)
	c.simple("OK")
}

func (s *server) config(c *conn, args [][]byte) {
	if len(args) < 3 || !strings.EqualFold(string(args[1]), "get") {
		c.err("ERR unknown subcommand or wrong number of arguments for 'config' command")
		return
	}
	params := [][2]string{{"save", ""}, {"appendonly", "no"}, {"databases", "1"}, {"maxmemory", "0"},
		{"proto-max-bulk-len", strconv.Itoa(maxBulk)}}
	var found [][2]string
	for _, p := range params {
		for _, pat := range args[2:] {
			if ok, _ := path.Match(strings.ToLower(string(pat)), p[0]); ok {
				found = append(found, p)
				break
			}
		}
	}
	c.array(2 * len(found))
	for _, p := range found {
		c.bulk([]byte(p[0]))
		c.bulk([]byte(p[1]))
	}
}

// sweepLoop deletes expired keys every 100 ms.
func (s *server) sweepLoop(ctx context.Context) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n := now()
		s.mu.Lock()
		checked := 0
		for k, e := range s.data {
			if checked++; checked > 200 {
				break
			}
			if e.expire != 0 && e.expire <= n {
				delete(s.data, k)
			}
		}
		s.mu.Unlock()
	}
}
