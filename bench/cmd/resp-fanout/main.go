// Command resp-fanout is the pub/sub load of scripts/bench-resp.sh, for any
// RESP2 server (redis-server, examples/resp, bench/cmd/std-resp): -subs
// subscribers on one channel, one publisher sending -msgs messages of
// -size bytes in pipelined batches, and -stalled more subscribers that
// never read. Every reading subscriber checks that it gets every message,
// in order; the publisher stays at most -window messages ahead of the
// slowest reading subscriber, so a server that keeps up never has to
// drop anyone. It prints one line of key=value results:
//
//	deliveries      messages received by reading subscribers (subs x msgs)
//	seconds         from the first PUBLISH to the last delivery
//	deliveries_s    deliveries per second
//	server_us       the server's CPU time (utime+stime of -pid, read from
//	                /proc just before the first PUBLISH and after the last
//	                delivery) per delivery, in microseconds; 0 without -pid
//	server_hwm_kb   the server's peak resident set (VmHWM), KiB
//	stalled_closed  stalled subscribers the server had disconnected by the end
//	ok              true when every reading subscriber got every message in
//	                order within -timeout
//
//	resp-fanout -addr 127.0.0.1:6380 -subs 1000 -msgs 2000 -size 64 -pid $PID
//
// It exits 1 when ok is false.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6380", "server `address`")
	subs := flag.Int("subs", 1000, "reading subscribers")
	stalled := flag.Int("stalled", 0, "subscribers that never read")
	msgs := flag.Int("msgs", 2000, "messages to publish")
	size := flag.Int("size", 64, "message payload `bytes` (at least 20)")
	batch := flag.Int("batch", 16, "PUBLISH requests per write")
	window := flag.Int("window", 256, "most messages published ahead of the slowest reading subscriber")
	pid := flag.Int("pid", 0, "server `PID` whose CPU time and peak RSS to report")
	timeout := flag.Duration("timeout", 120*time.Second, "give up after this long")
	channel := flag.String("channel", "fanout", "channel name")
	flag.Parse()
	if *size < 20 || *subs < 1 || *msgs < 1 || *batch < 1 || *window < *batch {
		fmt.Fprintln(os.Stderr, "resp-fanout: want -size >= 20, -subs, -msgs, -batch >= 1 and -window >= -batch")
		os.Exit(2)
	}
	raiseNofile()
	r, err := run(config{addr: *addr, subs: *subs, stalled: *stalled, msgs: *msgs, size: *size,
		batch: *batch, window: *window, pid: *pid, timeout: *timeout, channel: *channel})
	if err != nil {
		fmt.Fprintln(os.Stderr, "resp-fanout:", err)
	}
	fmt.Printf("subs=%d stalled=%d msgs=%d size=%d deliveries=%d seconds=%.3f deliveries_s=%.0f server_us=%.4f server_hwm_kb=%d stalled_closed=%d ok=%v\n",
		*subs, *stalled, *msgs, *size, r.deliveries, r.seconds, float64(r.deliveries)/max(r.seconds, 1e-9),
		r.serverUS, r.hwmKB, r.stalledClosed, err == nil)
	if err != nil {
		os.Exit(1)
	}
}

type config struct {
	addr                                     string
	subs, stalled, msgs, size, batch, window int
	pid                                      int
	timeout                                  time.Duration
	channel                                  string
}

type result struct {
	deliveries    int64
	seconds       float64
	serverUS      float64
	hwmKB         int64
	stalledClosed int
}

// frame is the message frame a subscriber receives for message seq.
func frame(channel string, payload []byte) []byte {
	return fmt.Appendf(nil, "*3\r\n$7\r\nmessage\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(channel), channel, len(payload), payload)
}

// payload writes message seq's payload: 20 digits, then 'x's.
func payload(dst []byte, seq int) {
	for i := range dst {
		dst[i] = 'x'
	}
	s := strconv.AppendInt(nil, int64(seq), 10)
	for i := 0; i < 20; i++ {
		dst[i] = '0'
	}
	copy(dst[20-len(s):20], s)
}

func subscribe(addr, channel string) (net.Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	req := fmt.Sprintf("*2\r\n$9\r\nSUBSCRIBE\r\n$%d\r\n%s\r\n", len(channel), channel)
	want := fmt.Sprintf("*3\r\n$9\r\nsubscribe\r\n$%d\r\n%s\r\n:1\r\n", len(channel), channel)
	if _, err := c.Write([]byte(req)); err != nil {
		c.Close()
		return nil, err
	}
	got := make([]byte, len(want))
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != want {
		c.Close()
		return nil, fmt.Errorf("SUBSCRIBE: %q, %v", got, err)
	}
	c.SetReadDeadline(time.Time{})
	return c, nil
}

func run(cfg config) (result, error) {
	var res result
	var readers, stalled []net.Conn
	defer func() {
		for _, c := range append(readers, stalled...) {
			c.Close()
		}
	}()
	for i := 0; i < cfg.stalled; i++ {
		c, err := subscribe(cfg.addr, cfg.channel)
		if err != nil {
			return res, err
		}
		stalled = append(stalled, c)
	}
	for i := 0; i < cfg.subs; i++ {
		c, err := subscribe(cfg.addr, cfg.channel)
		if err != nil {
			return res, fmt.Errorf("subscriber %d: %w", i, err)
		}
		readers = append(readers, c)
	}
	pub, err := net.Dial("tcp", cfg.addr)
	if err != nil {
		return res, err
	}
	defer pub.Close()

	// Progress: got[i] is subscriber i's messages received; a reader
	// pokes progress after each read so that a waiting publisher looks.
	got := make([]atomic.Int64, cfg.subs)
	progress := make(chan struct{}, 1)
	errc := make(chan error, cfg.subs+2)
	var wg sync.WaitGroup
	head := frame(cfg.channel, make([]byte, cfg.size))
	prefix := head[:len(head)-cfg.size-2] // the bytes before the payload
	for i, c := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := readMessages(c, prefix, cfg, &got[i], progress); err != nil {
				errc <- fmt.Errorf("subscriber %d: %w", i, err)
				c.Close()
			}
		}()
	}
	minGot := func() int64 {
		m := int64(cfg.msgs)
		for i := range got {
			m = min(m, got[i].Load())
		}
		return m
	}

	// PUBLISH replies: integers, read (and counted) by their own goroutine.
	var replies atomic.Int64
	go func() {
		br := bufio.NewReaderSize(pub, 64<<10)
		for n := 0; n < cfg.msgs; n++ {
			line, err := br.ReadSlice('\n')
			if err != nil || len(line) < 3 || line[0] != ':' {
				errc <- fmt.Errorf("PUBLISH reply %d: %q, %v", n, line, err)
				return
			}
			replies.Add(1)
		}
	}()

	deadline := time.Now().Add(cfg.timeout)
	t0 := cpuTicks(cfg.pid)
	start := time.Now()
	pubHead := fmt.Sprintf("*3\r\n$7\r\nPUBLISH\r\n$%d\r\n%s\r\n$%d\r\n", len(cfg.channel), cfg.channel, cfg.size)
	req := make([]byte, 0, cfg.batch*(len(pubHead)+cfg.size+2))
	p := make([]byte, cfg.size)
	failed := func() error {
		select {
		case err := <-errc:
			return err
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timeout after %v: slowest subscriber at %d of %d messages", cfg.timeout, minGot(), cfg.msgs)
		}
		return nil
	}
	var low int64
	for sent := 0; sent < cfg.msgs; {
		// low is a lower bound of the slowest subscriber's count: it is
		// looked up again (a pass over every subscriber) only when it
		// would hold the publisher back.
		for {
			ahead := int64(sent + cfg.batch)
			if ahead-low > int64(cfg.window) {
				low = minGot()
			}
			if ahead-low <= int64(cfg.window) && int64(sent)-replies.Load() <= int64(cfg.window) {
				break
			}
			if err := failed(); err != nil {
				return res, err
			}
			select {
			case <-progress:
			case <-time.After(time.Millisecond):
			}
		}
		req = req[:0]
		for k := 0; k < cfg.batch && sent < cfg.msgs; k++ {
			payload(p, sent)
			req = append(req, pubHead...)
			req = append(req, p...)
			req = append(req, '\r', '\n')
			sent++
		}
		if _, err := pub.Write(req); err != nil {
			return res, err
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case err := <-errc:
			return res, err
		case <-time.After(time.Until(deadline)):
			return res, fmt.Errorf("timeout after %v: slowest subscriber at %d of %d messages", cfg.timeout, minGot(), cfg.msgs)
		}
	}
	res.seconds = time.Since(start).Seconds()
	t1 := cpuTicks(cfg.pid)
	res.deliveries = int64(cfg.subs) * int64(cfg.msgs)
	if cfg.pid > 0 {
		res.serverUS = float64(t1-t0) * 1e6 / float64(clkTck) / float64(res.deliveries)
		res.hwmKB = hwm(cfg.pid)
	}
	for _, c := range stalled {
		if closedByPeer(c) {
			res.stalledClosed++
		}
	}
	select {
	case err := <-errc:
		return res, err
	default:
	}
	return res, nil
}
