// Command resp is a RESP2 (Redis protocol) server on uringrt's callback
// API: PING, ECHO, SET (EX, PX, NX, XX, KEEPTTL, GET), GET, DEL, EXISTS, INCR,
// MGET, MSET, CONFIG GET, SUBSCRIBE, UNSUBSCRIBE and PUBLISH (plus QUIT,
// SELECT 0, DBSIZE, FLUSHALL, COMMAND), enough for redis-benchmark and
// redis-cli. The key space lives in memory, owned by the loops.
//
//	go build ./examples/resp && ./resp -addr 127.0.0.1:6380 -loops 1
//	redis-cli -p 6380 set k v
//
// Each OnData runs every complete request it got and answers them all
// with one write (one per 256 KiB of replies), so a pipelined batch costs
// one send. Replies are made as fast as the client reads them: while more
// than 4 MiB of its replies wait to be sent, its next requests (and the
// rest of a big MGET reply) wait too, so a pipeline of big replies reaches
// a client that reads, in full, at bounded memory; a client whose replies
// wait and that reads none of them for -write-timeout is disconnected. A
// connection whose request is an HTTP request line, a POST or a Host:
// header line is closed with no reply, as Redis does (a browser made to
// send a request to the server runs nothing). A request split
// across reads is kept and completed by the next ones; its size is
// bounded (-max-bulk, -max-request, and -max-pending for all connections
// together): over a bound the client gets a RESP error and is
// disconnected, as Redis does on a protocol error. A subscriber whose
// unsent messages pass -pubsub-limit bytes is disconnected (Redis's
// client-output-buffer-limit for pubsub clients): its queued messages are
// sent if it reads within a second, else dropped with the connection, so
// one that never reads holds at most that much while the others keep their
// rate (all subscribers together hold at most their number times the
// limit). Requests are RESP arrays of bulk strings or inline lines of
// words, quoted as redis-cli and Redis quote them.
//
// It exits 0 on SIGINT or SIGTERM after closing every connection.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/uringrt/uringrt/examples/resp/internal/proto"
	"github.com/uringrt/uringrt/runtime"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6380", "listen `address`")
	loops := flag.Int("loops", 1, "event loops (io_uring rings)")
	backend := flag.String("backend", "auto", "auto (io_uring, else Go's net), uring or std")
	maxBulk := flag.Int("max-bulk", proto.DefaultMaxBulk, "longest bulk string a request may hold, `bytes`")
	maxReq := flag.Int("max-request", proto.DefaultMaxRequest, "most `bytes` of one request")
	maxPending := flag.Int64("max-pending", 1<<30, "most `bytes` of partial requests held for all connections together")
	psLimit := flag.Int("pubsub-limit", 8<<20, "most unsent `bytes` queued for a subscriber before it is disconnected")
	writeTimeout := flag.Duration("write-timeout", 10*time.Second, "disconnect a client whose replies wait (over 4 MiB queued, or after QUIT) and that reads none of them for this long (0: never)")
	locked := flag.Bool("locked", false, "each loop on a locked OS thread sleeping in io_uring_enter (uringrt Config.LockedLoops) instead of parked in Go's netpoller: batches better at peak load")
	dedicated := flag.Bool("dedicated", false, "with -locked: each loop keeps its P while it waits for completions (uringrt Config.DedicatedLoops), for a process that is mostly this server")
	flag.Parse()
	if *loops < 1 {
		log.Fatal("resp: -loops must be at least 1")
	}
	b, err := uringrt.ParseBackend(*backend)
	if err != nil {
		log.Fatal("resp: ", err)
	}
	lim := limits{maxBulk: *maxBulk, maxRequest: max(*maxReq, *maxBulk+64),
		maxPending: *maxPending, pubsubLimit: *psLimit, writeTimeout: *writeTimeout}
	rt, ln, srv, err := start(*addr, uringrt.Config{Loops: *loops, Backend: b, LockedLoops: *locked, DedicatedLoops: *dedicated}, lim)
	if err != nil {
		log.Fatal("resp: ", err)
	}
	fmt.Fprintf(os.Stderr, "resp: serving RESP2 on %s (%d loops, backend %v)\n", ln.Addr(), *loops, rt.Backend())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- rt.Serve(ln, srv) }()
	select {
	case <-ctx.Done():
	case err := <-done:
		if err != nil {
			log.Fatal("resp: ", err)
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ln.Close()
	rt.Shutdown(sctx)
}
