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
	"log"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
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

func now() int64 { return time.Now().UnixNano() }

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
