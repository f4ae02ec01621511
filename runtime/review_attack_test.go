package uringrt

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// rvRecord writes one record: tag, seq and length in a fixed 17-byte
// header, then length bytes of seqBytes(length, seq), then '\n'.
func rvRecord(tag byte, seq, n int) []byte {
	b := make([]byte, 0, 17+n+1)
	b = append(b, tag)
	b = append(b, fmt.Sprintf("%08d%08d", seq, n)...)
	b = append(b, seqBytes(n, seq)...)
	return append(b, '\n')
}

// rvReadRecord reads one record written by rvRecord and checks its body.
func rvReadRecord(r *bufio.Reader) (tag byte, seq int, err error) {
	var hdr [17]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, 0, err
	}
	seq, err1 := strconv.Atoi(string(hdr[1:9]))
	n, err2 := strconv.Atoi(string(hdr[9:17]))
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("bad record header %q (bytes out of order or torn)", hdr)
	}
	body := make([]byte, n+1)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, 0, err
	}
	if !bytes.Equal(body[:n], seqBytes(n, seq)) || body[n] != '\n' {
		return 0, 0, fmt.Errorf("record %c%d (%d bytes): body torn or out of order", hdr[0], seq, n)
	}
	return hdr[0], seq, nil
}

// rvSize is a record size that mixes tiny, mid and large (larger than a
// socket takes at once) records.
func rvSize(seq int) int {
	switch {
	case seq%11 == 0:
		return 300 << 10
	case seq%5 == 0:
		return 40 << 10
	default:
		return seq % 200
	}
}

// TestReviewLoopSendMixedWriters: an off-loop goroutine AsyncWrites
// records (direct sends from its goroutine while the loop parks) while the
// loop's OnData writes its own records for the client's pings (sends from
// the loop, short sends and ring rests for the large ones). Each writer's
// records arrive whole, none torn by the other's, each in its order and
// none lost.
func TestReviewLoopSendMixedWriters(t *testing.T) {
	rt := newRT(t, Config{Loops: 1, MaxWriteBuffer: 64 << 20, MaxBufferedBytes: -1})
	opened := make(chan *CallbackConn, 1)
	var bseq int // loop only
	addr := serveCB(t, rt, HandlerFuncs{
		Open: func(c *CallbackConn) { opened <- c },
		Data: func(c *CallbackConn, d []byte) {
			for range d {
				c.Write(rvRecord('B', bseq, rvSize(bseq)))
				bseq++
			}
		},
	}).Addr().String()
	conn := dialStd(t, addr, 1)[0]
	conn.SetDeadline(time.Now().Add(60 * time.Second))
	cc := <-opened
	const nA, nB = 600, 300
	var wg sync.WaitGroup
	wg.Add(2)
	errc := make(chan error, 2)
	go func() { // off-loop writer
		defer wg.Done()
		for i := 0; i < nA; i++ {
			if _, err := cc.AsyncWrite(rvRecord('A', i, rvSize(i+3))); err != nil {
				errc <- fmt.Errorf("AsyncWrite %d: %v", i, err)
				return
			}
			if i%4 == 0 {
				time.Sleep(200 * time.Microsecond) // let the loop park
			}
		}
	}()
	go func() { // pings, one at a time
		defer wg.Done()
		for i := 0; i < nB; i++ {
			if _, err := conn.Write([]byte{'p'}); err != nil {
				errc <- err
				return
			}
			time.Sleep(300 * time.Microsecond)
		}
	}()
	r := bufio.NewReaderSize(conn, 64<<10)
	next := map[byte]int{}
	for next['A'] < nA || next['B'] < nB {
		tag, seq, err := rvReadRecord(r)
		if err != nil {
			t.Fatalf("after A %d, B %d: %v", next['A'], next['B'], err)
		}
		if tag != 'A' && tag != 'B' || seq != next[tag] {
			t.Fatalf("record %c%d, want %c%d next", tag, seq, tag, next[tag])
		}
		next[tag]++
	}
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	l := rt.loops[0]
	t.Logf("loop sends %d (rests %d), direct sends %d (rests %d)", l.stats.loopSent.Load(), l.stats.loopRest.Load(), l.stats.directSent.Load(), l.stats.directRest.Load())
}

// TestReviewLoopSendBackpressure: a client that sends requests but does
// not read (its socket and then the server's fill) and then reads: every
// 64 KiB reply the server's Write accepted arrives whole and in order, the
// connection's queue never passes MaxWriteBuffer, and the graceful close
// that follows the client's FIN sends all of it (OnClose nil, once).
func TestReviewLoopSendBackpressure(t *testing.T) {
	const mwb = 1 << 20
	rt := newRT(t, Config{Loops: 1, MaxWriteBuffer: mwb})
	var mu sync.Mutex
	var ok []int
	var full, maxOut int
	closes := make(chan error, 4)
	seq := 0
	addr := serveCB(t, rt, HandlerFuncs{
		Data: func(c *CallbackConn, d []byte) {
			for range d {
				_, err := c.Write(rvRecord('R', seq, 64<<10-18))
				mu.Lock()
				if err == nil {
					ok = append(ok, seq)
				} else if errors.Is(err, ErrWriteBufferFull) {
					full++
				} else {
					t.Errorf("Write: %v", err)
				}
				if o := c.OutboundBuffered(); o > maxOut {
					maxOut = o
				}
				mu.Unlock()
				seq++
			}
		},
		ReadEOF: func(c *CallbackConn) { c.Close() },
		Close:   func(c *CallbackConn, err error) { closes <- err },
	}).Addr().String()
	conn := dialStd(t, addr, 1)[0]
	conn.(*net.TCPConn).SetReadBuffer(64 << 10)
	// Phase 1: requests, no reads, until the server stops reading (our
	// writes block) or 400 are sent.
	sent := 0
	for ; sent < 400; sent++ {
		conn.SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
		if _, err := conn.Write([]byte{'q'}); err != nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	conn.SetWriteDeadline(time.Time{})
	conn.(*net.TCPConn).CloseWrite()
	conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	r := bufio.NewReaderSize(conn, 64<<10)
	var got []int
	for {
		_, s, err := rvReadRecord(r)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after %d replies: %v", len(got), err)
		}
		got = append(got, s)
	}
	wantCleanOnClose(t, closes)
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(got) != fmt.Sprint(ok) {
		t.Fatalf("received %d replies, the server's Write accepted %d (%d refused): not the same sequence", len(got), len(ok), full)
	}
	if maxOut > mwb {
		t.Fatalf("OutboundBuffered reached %d, MaxWriteBuffer %d", maxOut, mwb)
	}
	select {
	case err := <-closes:
		t.Fatalf("a second OnClose (%v)", err)
	case <-time.After(200 * time.Millisecond):
	}
	t.Logf("client sent %d requests; %d replies accepted, %d refused; max queued %d", sent, len(ok), full, maxOut)
}

// TestReviewLoopSendCloseTimeout: OnData writes 8 MiB and closes; the
// client never reads. The loop's send takes what the socket holds, the
// ring waits for the rest; past CloseTimeout the connection is reset and
// OnClose runs once, with ErrCloseTimeout.
func TestReviewLoopSendCloseTimeout(t *testing.T) {
	rt := newRT(t, Config{Loops: 1, MaxWriteBuffer: 16 << 20, CloseTimeout: 300 * time.Millisecond})
	var calls atomic.Int32
	closes := make(chan error, 4)
	addr := serveCB(t, rt, HandlerFuncs{
		Data:  func(c *CallbackConn, d []byte) { c.Write(seqBytes(8<<20, 1)); c.Close() },
		Close: func(c *CallbackConn, err error) { calls.Add(1); closes <- err },
	}).Addr().String()
	conn := dialStd(t, addr, 1)[0]
	if _, err := conn.Write([]byte("go")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-closes:
		if !errors.Is(err, ErrCloseTimeout) {
			t.Fatalf("OnClose: %v, want ErrCloseTimeout", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no OnClose 15 s after a Close with CloseTimeout 300ms")
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := io.Copy(io.Discard, conn)
	if err == nil || n >= 8<<20 {
		t.Fatalf("client read %d bytes, %v: want fewer than 8 MiB and a reset", n, err)
	}
	time.Sleep(200 * time.Millisecond)
	if c := calls.Load(); c != 1 {
		t.Fatalf("OnClose called %d times", c)
	}
}

// TestReviewLoopSendPeerReset: clients that reset their connection (RST)
// while the server's 4 MiB reply is part sent by the loop and part in a
// ring send: each connection's OnClose runs once, with an error, and the
// server keeps serving.
func TestReviewLoopSendPeerReset(t *testing.T) {
	rt := newRT(t, Config{Loops: 1, MaxWriteBuffer: 8 << 20})
	var mu sync.Mutex
	errs := map[*CallbackConn][]error{}
	addr := serveCB(t, rt, HandlerFuncs{
		Data: func(c *CallbackConn, d []byte) {
			if d[0] == 'e' {
				c.Write(d)
				return
			}
			c.Write(seqBytes(4<<20, 2))
		},
		Close: func(c *CallbackConn, err error) { mu.Lock(); errs[c] = append(errs[c], err); mu.Unlock() },
	}).Addr().String()
	const n = 20
	for i := 0; i < n; i++ {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		c.Write([]byte("g"))
		buf := make([]byte, 1+i*1000)
		io.ReadFull(c, buf)
		c.(*net.TCPConn).SetLinger(0)
		c.Close()
	}
	if !relWaitFor(15*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(errs) == n }) {
		mu.Lock()
		t.Fatalf("OnClose for %d of %d reset connections", len(errs), n)
	}
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	for _, es := range errs {
		if len(es) != 1 || es[0] == nil {
			t.Errorf("OnClose calls: %v, want one with an error", es)
		}
	}
	mu.Unlock()
	echoOnce(t, rt, addr, "e still serving")
}

// TestReviewLoopSendManyChunks: OnData queues a 256 KiB request as 128
// separate 2 KiB WriteNoCopy pieces (lent buffers, or copies), more than
// one sendmsg(2) covers (maxSendIov), then a trailer; every round's echo
// and trailer come back whole and in order.
func TestReviewLoopSendManyChunks(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	const size = 256 << 10
	var have int // loop only
	addr := serveCB(t, rt, HandlerFuncs{
		Data: func(c *CallbackConn, d []byte) {
			for len(d) > 0 {
				k := min(len(d), 2<<10)
				c.WriteNoCopy(d[:k])
				d = d[k:]
				if have += k; have == size {
					c.Write([]byte("END\n"))
					have = 0
				}
			}
		},
	}).Addr().String()
	conn := dialStd(t, addr, 1)[0]
	conn.SetDeadline(time.Now().Add(60 * time.Second))
	for round := 0; round < 20; round++ {
		body := seqBytes(size, round)
		go conn.Write(body)
		got := make([]byte, size+4)
		if _, err := io.ReadFull(conn, got); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if !bytes.Equal(got[:size], body) || string(got[size:]) != "END\n" {
			t.Fatalf("round %d: echo out of order", round)
		}
	}
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestReviewAcceptRehomeBurst: 2,000 connections from 16 dialers while
// Serve's multishot accept is made to look armed from another thread every
// millisecond (a re-home at its next completion): each connection is
// opened once, echoed and closed once; none is lost or doubled.
func TestReviewAcceptRehomeBurst(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	l := rt.loops[0]
	if l.gw == nil {
		t.Skip("locked loop: it never moves between threads")
	}
	var opens, closes atomic.Int32
	nl := serveCB(t, rt, HandlerFuncs{
		Open:  func(c *CallbackConn) { opens.Add(1) },
		Data:  func(c *CallbackConn, d []byte) { c.Write(d) },
		Close: func(c *CallbackConn, err error) { closes.Add(1) },
	})
	ln := nl.(*listener)
	addr := nl.Addr().String()
	stop := make(chan struct{})
	hopDone := make(chan int)
	go func() {
		hops := 0
		for {
			select {
			case <-stop:
				hopDone <- hops
				return
			case <-time.After(time.Millisecond):
			}
			onLoop(l, func() { ln.acceptOp.tid = -1 })
			hops++
		}
	}()
	rehomes0 := 0
	onLoop(l, func() { rehomes0 = l.rehomes })
	const total, dialers = 2000, 16
	var wg sync.WaitGroup
	var failed atomic.Int32
	for d := 0; d < dialers; d++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < total/dialers; i++ {
				c, err := net.DialTimeout("tcp", addr, 10*time.Second)
				if err != nil {
					failed.Add(1)
					continue
				}
				c.SetDeadline(time.Now().Add(10 * time.Second))
				b := []byte{'x'}
				if _, err := c.Write(b); err != nil {
					failed.Add(1)
				} else if _, err := io.ReadFull(c, b); err != nil {
					failed.Add(1)
				}
				c.Close()
			}
		}()
	}
	wg.Wait()
	close(stop)
	hops := <-hopDone
	if f := failed.Load(); f != 0 {
		t.Fatalf("%d of %d connections failed", f, total)
	}
	if !relWaitFor(10*time.Second, func() bool { return closes.Load() == total }) {
		t.Fatalf("opens %d, closes %d of %d", opens.Load(), closes.Load(), total)
	}
	if o := opens.Load(); o != total {
		t.Fatalf("opens %d of %d", o, total)
	}
	var rehomes int
	onLoop(l, func() { rehomes = l.rehomes })
	t.Logf("%d thread hops forced, %d re-homes", hops, rehomes-rehomes0)
	if rehomes == rehomes0 {
		t.Fatal("no re-home happened")
	}
}

// TestReviewAcceptRehomeClose: a listener closed just as its multishot
// accept is being re-homed (cancel on its way), with a connection in its
// queue: Serve returns, and no descriptor is leaked (the listener, the
// queued connection), 30 times over.
func TestReviewAcceptRehomeClose(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	l := rt.loops[0]
	if l.gw == nil {
		t.Skip("locked loop: it never moves between threads")
	}
	warm, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	warm.Close()
	fd0 := openFDs(t)
	for i := 0; i < 30; i++ {
		nl, err := rt.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- rt.Serve(nl, HandlerFuncs{Data: func(c *CallbackConn, d []byte) { c.Write(d) }}) }()
		ln := nl.(*listener)
		if !relWaitFor(5*time.Second, func() bool { var a bool; onLoop(l, func() { a = ln.acceptOp.armed }); return a }) {
			t.Fatal("accept never armed")
		}
		onLoop(l, func() { ln.acceptOp.tid = -1 })
		c, err := net.DialTimeout("tcp", nl.Addr().String(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			time.Sleep(time.Millisecond)
		}
		nl.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: Serve did not return after Close", i)
		}
		c.Close()
	}
	if !relWaitFor(5*time.Second, func() bool { return openFDs(t) <= fd0 }) {
		t.Fatalf("open descriptors %d, %d before 30 listeners", openFDs(t), fd0)
	}
}

// TestReviewDeferAcceptValues: DeferAccept 0 and negative leave
// TCP_DEFER_ACCEPT off; a positive one works on an IPv6 listener (a silent
// client is not accepted, its first byte is).
func TestReviewDeferAcceptValues(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	for _, d := range []time.Duration{0, -time.Second, -1} {
		lc := &ListenConfig{Runtime: rt, DeferAccept: d}
		ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("DeferAccept %v: %v", d, err)
		}
		if v := deferAcceptOf(t, ln); v != 0 {
			t.Errorf("DeferAccept %v: TCP_DEFER_ACCEPT %d, want 0", d, v)
		}
		ln.Close()
	}
	lc := &ListenConfig{Runtime: rt, DeferAccept: time.Millisecond}
	ln, err := lc.Listen(context.Background(), "tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	defer ln.Close()
	if v := deferAcceptOf(t, ln); v <= 0 {
		t.Fatalf("IPv6, DeferAccept 1ms: TCP_DEFER_ACCEPT %d, want > 0 (1 ms rounds up to 1 s)", v)
	}
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	c, err := net.Dial("tcp6", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case s := <-accepted:
		if s != nil {
			s.Close()
		}
		t.Fatal("a silent IPv6 client was accepted at once")
	case <-time.After(300 * time.Millisecond):
	}
	c.Write([]byte("y"))
	select {
	case s := <-accepted:
		if s == nil {
			t.Fatal("Accept failed")
		}
		s.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("not accepted after its first byte")
	}
}

// TestReviewLoopSendMixedSlowReader: TestReviewLoopSendMixedWriters on two
// connections at once (a flush of two: both sent from the loop) whose
// client reads slowly from a small receive buffer, so that loop sends are
// short or find the socket full and direct sends leave rests: each
// writer's records still arrive whole, in order, none lost.
func TestReviewLoopSendMixedSlowReader(t *testing.T) {
	rt := newRT(t, Config{Loops: 1, MaxWriteBuffer: 64 << 20, MaxBufferedBytes: -1})
	opened := make(chan *CallbackConn, 2)
	addr := serveCB(t, rt, HandlerFuncs{
		Open: func(c *CallbackConn) { c.SetValue(new(int)); opened <- c },
		Data: func(c *CallbackConn, d []byte) {
			bseq := c.Value().(*int)
			for range d {
				c.Write(rvRecord('B', *bseq, rvSize(*bseq)))
				*bseq++
			}
		},
	}).Addr().String()
	l := rt.loops[0]
	// Whether a loop send meets a full socket depends on the scheduling
	// of the client's reads: the exchange runs again (each run checked
	// whole) until one did, at most 4 times (one run in eight misses it
	// under -race and load).
	for run := 0; run < 4 && l.stats.loopRest.Load() == 0; run++ {
		mixedSlowReaderRun(t, addr, opened)
	}
	t.Logf("loop sends %d (rests %d), direct sends %d (rests %d)", l.stats.loopSent.Load(), l.stats.loopRest.Load(), l.stats.directSent.Load(), l.stats.directRest.Load())
	if l.stats.loopRest.Load() == 0 {
		t.Error("no loop send left a rest in 4 runs: the slow reader did not reach the path under attack")
	}
}

func mixedSlowReaderRun(t *testing.T, addr string, opened chan *CallbackConn) {
	const nA, nB = 300, 150
	conns := dialStd(t, addr, 2)
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for _, conn := range conns {
		conn.(*net.TCPConn).SetReadBuffer(16 << 10)
		conn.SetDeadline(time.Now().Add(90 * time.Second))
		cc := <-opened
		wg.Add(3)
		go func() { // off-loop writer
			defer wg.Done()
			for i := 0; i < nA; i++ {
				if _, err := cc.AsyncWrite(rvRecord('A', i, rvSize(i+3))); err != nil {
					errc <- fmt.Errorf("AsyncWrite %d: %v", i, err)
					return
				}
				if i%3 == 0 {
					time.Sleep(300 * time.Microsecond)
				}
			}
		}()
		go func() { // pings
			defer wg.Done()
			for i := 0; i < nB; i++ {
				if _, err := conn.Write([]byte{'p'}); err != nil {
					errc <- err
					return
				}
				time.Sleep(500 * time.Microsecond)
			}
		}()
		go func() { // slow reader
			defer wg.Done()
			r := bufio.NewReaderSize(conn, 4<<10)
			next := map[byte]int{}
			for k := 0; next['A'] < nA || next['B'] < nB; k++ {
				if k%16 == 0 {
					time.Sleep(3 * time.Millisecond)
				}
				tag, seq, err := rvReadRecord(r)
				if err != nil {
					errc <- fmt.Errorf("after A %d, B %d: %v", next['A'], next['B'], err)
					return
				}
				if tag != 'A' && tag != 'B' || seq != next[tag] {
					errc <- fmt.Errorf("record %c%d, want %c%d next", tag, seq, tag, next[tag])
					return
				}
				next[tag]++
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	for _, conn := range conns {
		conn.Close()
	}
}

// TestReviewLoopSendDrainedOnce: a producer that writes 256 KiB per ping
// with a 64 KiB low-water mark, to a client that reads in bursts. OnDrained
// comes only when due (the queue had passed the mark, and is now at or
// under it) and once per episode, and the last episode's comes once the
// client has read everything.
func TestReviewLoopSendDrainedOnce(t *testing.T) {
	const low = 64 << 10
	rt := newRT(t, Config{Loops: 1, MaxWriteBuffer: 16 << 20})
	var mu sync.Mutex
	var due bool
	var drains, bad int
	seq := 0
	addr := serveCB(t, rt, HandlerFuncs{
		Open: func(c *CallbackConn) { c.SetLowWater(low) },
		Data: func(c *CallbackConn, d []byte) {
			for range d {
				c.Write(rvRecord('D', seq, 256<<10))
				seq++
			}
			mu.Lock()
			if c.OutboundBuffered() > low {
				due = true
			}
			mu.Unlock()
		},
		Drained: func(c *CallbackConn) {
			mu.Lock()
			defer mu.Unlock()
			if !due || c.OutboundBuffered() > low {
				bad++
			}
			due = false
			drains++
		},
	}).Addr().String()
	conn := dialStd(t, addr, 1)[0]
	conn.(*net.TCPConn).SetReadBuffer(32 << 10)
	conn.SetDeadline(time.Now().Add(60 * time.Second))
	r := bufio.NewReaderSize(conn, 4<<10)
	const n = 60
	got := 0
	for i := 0; i < n; i++ {
		conn.Write([]byte{'p'})
		if i%3 == 2 { // read in bursts
			for ; got <= i; got++ {
				if _, s, err := rvReadRecord(r); err != nil || s != got {
					t.Fatalf("record %d: seq %d, %v", got, s, err)
				}
			}
		}
	}
	if !relWaitFor(10*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return !due }) {
		t.Fatal("the last episode's OnDrained never came")
	}
	mu.Lock()
	defer mu.Unlock()
	if bad > 0 {
		t.Fatalf("%d of %d OnDrained calls not due", bad, drains)
	}
	t.Logf("%d OnDrained calls for %d writes", drains, n)
}

// TestReviewLoopSendStreamEcho: two connections each send 16 MiB through
// an echo that lends what it read (WriteNoCopy: stream mode's buffers,
// sent by the loop's send(2) or a ring send) while their readers stall now
// and then (short sends, pauses); every byte comes back in order.
func TestReviewLoopSendStreamEcho(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	addr := serveCB(t, rt, HandlerFuncs{Data: func(c *CallbackConn, d []byte) { c.WriteNoCopy(d) }}).Addr().String()
	const size = 16 << 20
	conns := dialStd(t, addr, 2)
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for k, conn := range conns {
		conn.SetDeadline(time.Now().Add(90 * time.Second))
		body := seqBytes(size, k)
		wg.Add(2)
		go func() {
			defer wg.Done()
			for off := 0; off < size; off += 100 << 10 {
				if _, err := conn.Write(body[off:min(off+100<<10, size)]); err != nil {
					errc <- err
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			got := make([]byte, size)
			for off, i := 0, 0; off < size; i++ {
				if i%40 == 0 {
					time.Sleep(5 * time.Millisecond)
				}
				m, err := conn.Read(got[off:min(off+(1+i%7)*8<<10, size)])
				if err != nil {
					errc <- fmt.Errorf("conn %d after %d bytes: %v", k, off, err)
					return
				}
				off += m
			}
			if !bytes.Equal(got, body) {
				errc <- fmt.Errorf("conn %d: echo differs", k)
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	l := rt.loops[0]
	t.Logf("loop sends %d (rests %d), lent bufs %d, stream enters %d", l.stats.loopSent.Load(), l.stats.loopRest.Load(), l.stats.lentBufs.Load(), l.stats.streamEnters.Load())
}

// TestReviewAcceptRehomeEMFILE: Serve's accept, armed (as it looks) from
// another thread, meets EMFILE on its next completion: the re-home's
// cancel and the EMFILE backoff together still serve the pending
// connection once descriptors are free, and new ones after it, with the
// accept armed again from the loop's thread.
func TestReviewAcceptRehomeEMFILE(t *testing.T) {
	hog := limitFDs(t)
	buf := new(lockedBuffer)
	rt := newRT(t, Config{Loops: 1, Logger: slogTo(buf)})
	l := rt.loops[0]
	if l.gw == nil {
		t.Skip("locked loop: it never moves between threads")
	}
	nl, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- rt.Serve(nl, EchoHandler{}) }()
	defer func() {
		nl.Close()
		select {
		case <-served:
		case <-time.After(5 * time.Second):
			t.Error("Serve did not return after Close")
		}
	}()
	ln := nl.(*listener)
	fds0 := countFDs(t)
	echoOnce(t, rt, nl.Addr().String(), "before")
	waitFDs(t, fds0)
	onLoop(l, func() { ln.acceptOp.tid = -1 })
	cs := rawClient(t)
	hog.fill()
	rawConnect(t, cs, nl.Addr())
	if !relWaitFor(5*time.Second, func() bool { return strings.Contains(buf.String(), "accept failed") }) {
		hog.release()
		t.Fatalf("no EMFILE logged:\n%s", buf.String())
	}
	time.Sleep(50 * time.Millisecond)
	hog.release()
	rawEcho(t, cs, "pending connection")
	echoOnce(t, rt, nl.Addr().String(), "new connection")
	var tid int32
	var armed bool
	onLoop(l, func() { tid, armed = ln.acceptOp.tid, ln.acceptOp.armed })
	if !armed || tid <= 0 {
		t.Fatalf("accept armed %v on thread %d after EMFILE and a re-home", armed, tid)
	}
}

// TestReviewDeferAcceptHuge: a DeferAccept far past what the kernel counts
// (its SYN-ACK retries cap it) still turns deferral on, as any positive
// value does: the longest Duration, and 2^31 s (past setsockopt's int).
func TestReviewDeferAcceptHuge(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	for _, d := range []time.Duration{time.Duration(math.MaxInt64), (1 << 31) * time.Second} {
		lc := &ListenConfig{Runtime: rt, DeferAccept: d}
		ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("DeferAccept %v: %v", d, err)
		}
		if v := deferAcceptOf(t, ln); v <= 0 {
			t.Errorf("DeferAccept %v: TCP_DEFER_ACCEPT %d, want > 0 (deferral on)", d, v)
		}
		ln.Close()
	}
}

// TestReviewLoopSendRuntimeBudget: three connections whose clients stop
// reading, each asking for 256 KiB replies (not echoes), under a 2 MiB
// MaxBufferedBytes: the queued and posted bytes of all of them never pass
// the cap (writes are refused instead), OnDrained follows a refusal once
// the clients read, and every accepted reply arrives whole and in order.
func TestReviewLoopSendRuntimeBudget(t *testing.T) {
	for _, max := range []int{0, loopSendMax} {
		t.Run(fmt.Sprintf("loopSends=%d", max), func(t *testing.T) {
			testLoopSendRuntimeBudget(t, max)
		})
	}
}

func testLoopSendRuntimeBudget(t *testing.T, loopSends int) {
	const budget = 2 << 20
	rt := newRT(t, Config{Loops: 1, MaxBufferedBytes: budget, MaxWriteBuffer: 4 << 20})
	onLoop(rt.loops[0], func() { rt.loops[0].loopSends = loopSends })
	type state struct {
		seq, refused, drained int
		ok                    []int
	}
	var mu sync.Mutex
	var maxHeld int
	var sts []*state
	addr := serveCB(t, rt, HandlerFuncs{
		Open: func(c *CallbackConn) {
			st := &state{}
			mu.Lock()
			sts = append(sts, st)
			mu.Unlock()
			c.SetValue(st)
			unix.SetsockoptInt(c.fd.fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 64<<10)
		},
		Data: func(c *CallbackConn, d []byte) {
			st := c.Value().(*state)
			for range d {
				_, err := c.Write(rvRecord('M', st.seq, 256<<10-18))
				mu.Lock()
				if err == nil {
					st.ok = append(st.ok, st.seq)
				} else {
					st.refused++
				}
				st.seq++
				mu.Unlock()
			}
			sum := 0
			for cc := range c.l.cbConns {
				sum += cc.OutboundBuffered()
			}
			mu.Lock()
			maxHeld = max(maxHeld, sum)
			mu.Unlock()
		},
		Drained: func(c *CallbackConn) { mu.Lock(); c.Value().(*state).drained++; mu.Unlock() },
	}).Addr().String()
	conns := dialStd(t, addr, 3)
	for _, conn := range conns {
		conn.(*net.TCPConn).SetReadBuffer(32 << 10)
		conn.SetDeadline(time.Now().Add(60 * time.Second))
	}
	for i := 0; i < 30; i++ {
		for _, conn := range conns {
			conn.Write([]byte{'p'})
		}
		time.Sleep(2 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	// The clients read now, all at once, until every ping was answered or
	// refused and every accepted reply arrived: a reply accepted late (a
	// connection reads its last pings once the others drained) is read too.
	var got [3][]int
	var gotMu sync.Mutex
	errc := make(chan error, 3)
	for k, conn := range conns {
		conn.SetReadDeadline(time.Now().Add(60 * time.Second))
		go func() {
			r := bufio.NewReaderSize(conn, 64<<10)
			for {
				_, s, err := rvReadRecord(r)
				if err != nil {
					errc <- fmt.Errorf("conn %d: %v", k, err)
					return
				}
				gotMu.Lock()
				got[k] = append(got[k], s)
				gotMu.Unlock()
			}
		}()
	}
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		gotMu.Lock()
		defer gotMu.Unlock()
		if len(sts) != 3 {
			return false
		}
		want, have := 0, 0
		for k, st := range sts {
			if st.seq != 30 || st.refused > 0 && st.drained == 0 {
				return false // pings still unread (a paused connection), or OnDrained due
			}
			want += len(st.ok)
			have += len(got[k])
		}
		return have == want
	}
	finished := relWaitFor(30*time.Second, done)
	for _, conn := range conns {
		conn.SetReadDeadline(time.Now()) // ends the readers
	}
	for range conns {
		if err := <-errc; !finished && !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Error(err)
		}
	}
	if !finished {
		t.Error("not every ping was answered or refused, with its replies read, within 30 s")
	}
	mu.Lock()
	defer mu.Unlock()
	// (The cap counts the queues' chunks; a write up to a big chunk is
	// checked, not reserved: allow one reply of overshoot.)
	if maxHeld > budget+256<<10 {
		t.Errorf("queued output of all connections reached %d, MaxBufferedBytes %d", maxHeld, budget)
	}
	refusedAny := false
	for _, st := range sts {
		if st.refused > 0 {
			refusedAny = true
			if st.drained == 0 {
				t.Errorf("a connection refused %d writes and never got OnDrained", st.refused)
			}
		}
		found := false
		for k := range got {
			if fmt.Sprint(got[k]) == fmt.Sprint(st.ok) {
				found = true
			}
		}
		if !found {
			t.Errorf("a connection's accepted replies %v did not arrive as such", st.ok)
		}
	}
	if !refusedAny {
		t.Error("no write was refused: the budget was never reached")
	}
	t.Logf("max queued %d of %d", maxHeld, budget)
}

// TestReviewDeferAcceptSilentAccepted: with DeferAccept 1 s, a client that
// connects and sends nothing is not dropped: Accept returns it after about
// a second (one SYN-ACK retransmission), with either backend, and it can
// then be written to.
func TestReviewDeferAcceptSilentAccepted(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{{"uring", Config{Loops: 1}}, {"std", Config{Backend: BackendStd}}} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newRT(t, tc.cfg)
			lc := &ListenConfig{Runtime: rt, DeferAccept: time.Second}
			ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			accepted := make(chan net.Conn, 1)
			go func() {
				c, err := ln.Accept()
				if err != nil {
					close(accepted)
					return
				}
				accepted <- c
			}()
			t0 := time.Now()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var s net.Conn
			select {
			case s = <-accepted:
			case <-time.After(15 * time.Second):
				t.Fatal("a silent client was not accepted in 15 s with DeferAccept 1 s")
			}
			if s == nil {
				t.Fatal("Accept failed")
			}
			defer s.Close()
			took := time.Since(t0)
			if took < 800*time.Millisecond {
				t.Fatalf("a silent client was accepted after %v: not deferred", took)
			}
			t.Logf("accepted after %v", took)
			s.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if _, err := s.Write([]byte("hello")); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			b := make([]byte, 5)
			if _, err := io.ReadFull(c, b); err != nil || string(b) != "hello" {
				t.Fatalf("client read %q, %v", b, err)
			}
		})
	}
}

// TestReviewLoopSendWriteTimeout: a connection with SetWriteTimeout whose
// peer stops reading while an 8 MiB reply is part sent by the loop, part
// waiting in a ring send: past the timeout without progress the
// connection is reset and OnClose runs once, with ErrWriteTimeout; a
// connection whose peer reads keeps going.
func TestReviewLoopSendWriteTimeout(t *testing.T) {
	rt := newRT(t, Config{Loops: 1, MaxWriteBuffer: 16 << 20})
	var calls atomic.Int32
	closes := make(chan error, 4)
	addr := serveCB(t, rt, HandlerFuncs{
		Open:  func(c *CallbackConn) { c.SetWriteTimeout(300 * time.Millisecond) },
		Data:  func(c *CallbackConn, d []byte) { c.Write(seqBytes(8<<20, int(d[0]))) },
		Close: func(c *CallbackConn, err error) { calls.Add(1); closes <- err },
	}).Addr().String()
	conns := dialStd(t, addr, 2)
	stalled, reader := conns[0], conns[1]
	stalled.Write([]byte{1})
	reader.Write([]byte{2})
	reader.SetReadDeadline(time.Now().Add(30 * time.Second))
	got := make([]byte, 8<<20)
	if _, err := io.ReadFull(reader, got); err != nil || !bytes.Equal(got, seqBytes(8<<20, 2)) {
		t.Fatalf("the reading peer: %v", err)
	}
	select {
	case err := <-closes:
		if !errors.Is(err, ErrWriteTimeout) {
			t.Fatalf("OnClose: %v, want ErrWriteTimeout", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no OnClose for the stalled peer")
	}
	time.Sleep(300 * time.Millisecond)
	if c := calls.Load(); c != 1 {
		t.Fatalf("OnClose called %d times, want once (the stalled peer)", c)
	}
}

// TestReviewAcceptRehomeCloseBurst: a listener closed in the middle of a
// burst of connections while its accept is re-homed every millisecond:
// Serve returns, every connection the server opened is closed (OnClose
// once each) and no descriptor is left behind.
func TestReviewAcceptRehomeCloseBurst(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	l := rt.loops[0]
	if l.gw == nil {
		t.Skip("locked loop: it never moves between threads")
	}
	warm, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	warm.Close()
	fd0 := openFDs(t)
	var opens, closes atomic.Int32
	nl, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- rt.Serve(nl, HandlerFuncs{
			Open:  func(c *CallbackConn) { opens.Add(1) },
			Data:  func(c *CallbackConn, d []byte) { c.Write(d) },
			Close: func(c *CallbackConn, err error) { closes.Add(1) },
		})
	}()
	ln := nl.(*listener)
	addr := nl.Addr().String()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			onLoop(l, func() {
				if ln.acceptOp.armed {
					ln.acceptOp.tid = -1
				}
			})
		}
	}()
	var dialed atomic.Int32
	for d := 0; d < 8; d++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				select {
				case <-stop:
					return
				default:
				}
				c, err := net.DialTimeout("tcp", addr, 2*time.Second)
				if err != nil {
					continue
				}
				dialed.Add(1)
				c.SetDeadline(time.Now().Add(2 * time.Second))
				c.Write([]byte{'x'})
				io.ReadFull(c, make([]byte, 1))
				c.Close()
			}
		}()
	}
	relWaitFor(5*time.Second, func() bool { return dialed.Load() >= 200 })
	nl.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after Close")
	}
	close(stop)
	wg.Wait()
	if !relWaitFor(10*time.Second, func() bool { return closes.Load() == opens.Load() && openFDs(t) <= fd0 }) {
		t.Fatalf("opens %d, closes %d; descriptors %d, %d before", opens.Load(), closes.Load(), openFDs(t), fd0)
	}
	t.Logf("%d dialed, %d opened", dialed.Load(), opens.Load())
}

// TestReviewLoopSendAsyncClose: an off-loop writer AsyncWrites records
// (direct sends while the loop parks) and then AsyncCloses, while the
// client's pings make OnData write records of its own (loop sends) and the
// client reads slowly: every record a write accepted arrives, whole and in
// its writer's order, then EOF; OnClose runs once, with nil.
func TestReviewLoopSendAsyncClose(t *testing.T) {
	for _, n := range []int{0, loopSendMax} {
		t.Run(fmt.Sprintf("loopSends=%d", n), func(t *testing.T) { testLoopSendAsyncClose(t, n) })
	}
}

func testLoopSendAsyncClose(t *testing.T, loopSends int) {
	rt := newRT(t, Config{Loops: 1, MaxWriteBuffer: 64 << 20, MaxBufferedBytes: -1})
	onLoop(rt.loops[0], func() { rt.loops[0].loopSends = loopSends })
	opened := make(chan *CallbackConn, 1)
	var bOK atomic.Int32 // B records accepted (loop only writes; read at the end)
	var calls atomic.Int32
	closes := make(chan error, 2)
	addr := serveCB(t, rt, HandlerFuncs{
		Open: func(c *CallbackConn) { opened <- c },
		Data: func(c *CallbackConn, d []byte) {
			for range d {
				n := int(bOK.Load())
				if _, err := c.Write(rvRecord('B', n, rvSize(n))); err == nil {
					bOK.Add(1)
				}
			}
		},
		Close: func(c *CallbackConn, err error) { calls.Add(1); closes <- err },
	}).Addr().String()
	conn := dialStd(t, addr, 1)[0]
	conn.(*net.TCPConn).SetReadBuffer(16 << 10)
	conn.SetDeadline(time.Now().Add(60 * time.Second))
	cc := <-opened
	const nA = 200
	go func() {
		for i := 0; i < nA; i++ {
			cc.AsyncWrite(rvRecord('A', i, rvSize(i+3)))
			if i%4 == 0 {
				time.Sleep(200 * time.Microsecond)
			}
		}
		cc.AsyncClose()
	}()
	go func() {
		for i := 0; i < 100; i++ {
			if _, err := conn.Write([]byte{'p'}); err != nil {
				return
			}
			time.Sleep(400 * time.Microsecond)
		}
	}()
	r := bufio.NewReaderSize(conn, 4<<10)
	next := map[byte]int{}
	for k := 0; ; k++ {
		if k%16 == 0 {
			time.Sleep(2 * time.Millisecond)
		}
		tag, seq, err := rvReadRecord(r)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after A %d, B %d: %v", next['A'], next['B'], err)
		}
		if tag != 'A' && tag != 'B' || seq != next[tag] {
			t.Fatalf("record %c%d, want %c%d next", tag, seq, tag, next[tag])
		}
		next[tag]++
	}
	wantCleanOnClose(t, closes)
	if next['A'] != nA || next['B'] != int(bOK.Load()) {
		t.Fatalf("received A %d of %d, B %d of %d accepted", next['A'], nA, next['B'], bOK.Load())
	}
	time.Sleep(200 * time.Millisecond)
	if c := calls.Load(); c != 1 {
		t.Fatalf("OnClose called %d times", c)
	}
}

// wantCleanOnClose waits up to 10 s for OnClose's error on closes and
// fails t unless it came, nil.
func wantCleanOnClose(t *testing.T, closes <-chan error) {
	t.Helper()
	select {
	case err := <-closes:
		if err != nil {
			t.Fatalf("OnClose: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no OnClose")
	}
}
