package uringrt

import (
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestOutQueueChunks: the output queue copies bytes in order across
// chunks, frees each chunk once sent, holds at most 1.5x its queued bytes
// plus one chunk, and holds nothing (and accounts nothing) when empty.
func TestOutQueueChunks(t *testing.T) {
	rt := &Runtime{cfg: Config{MaxBufferedBytes: -1}}
	l := &loop{rt: rt}
	var q outQueue
	var want []byte
	off := int64(0)
	for _, n := range []int{12, 3000, 70000, 1, 200000, 5} {
		p := make([]byte, n)
		relFillPattern(p, off)
		off += int64(n)
		q.write(l, p)
		want = append(want, p...)
		if q.held > q.n*3/2+outBigChunk {
			t.Fatalf("queue of %d bytes holds %d", q.n, q.held)
		}
	}
	if got := l.budget.held.Load(); got != int64(q.held) || rt.budget.held.Load() != got {
		t.Fatalf("accounted %d (runtime %d), queue holds %d", got, rt.budget.held.Load(), q.held)
	}
	var got []byte
	for q.n > 0 {
		b := q.next()
		m := min(len(b), 5000) // short sends too
		got = append(got, b[:m]...)
		q.sent(l, m)
	}
	if err := relCheckPattern(got, 0); err != nil || len(got) != len(want) {
		t.Fatalf("got %d bytes (want %d): %v", len(got), len(want), err)
	}
	if q.held != 0 || len(q.chunks) != 0 || l.budget.held.Load() != 0 || rt.budget.held.Load() != 0 {
		t.Fatalf("drained queue holds %d bytes in %d chunks; accounted %d", q.held, len(q.chunks), l.budget.held.Load())
	}
	if l.chunks.bytes > outPoolBytes {
		t.Fatalf("pool keeps %d bytes, cap %d", l.chunks.bytes, outPoolBytes)
	}
}

// slowReaders runs peers connections to addr that each write up to
// perPeer bytes (a pattern) without reading until their writes stall for
// stall, then (when drain) read back every byte they wrote and check it.
// It returns the bytes written in all and the connections, still open.
type slowReaders struct {
	conns   []net.Conn
	written []int64
}

func startSlowReaders(t *testing.T, addr string, peers, perPeer int, stall time.Duration) *slowReaders {
	t.Helper()
	s := &slowReaders{conns: make([]net.Conn, peers), written: make([]int64, peers)}
	payload := make([]byte, perPeer)
	relFillPattern(payload, 0)
	var wg sync.WaitGroup
	var werrs atomic.Int64
	for i := range s.conns {
		c, err := relSmallBufDialer.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		s.conns[i] = c
		t.Cleanup(func() { c.Close() })
	}
	for i, c := range s.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			off := 0
			for off < len(payload) {
				// Write while the server takes bytes; a write that
				// makes no progress for stall ends it.
				c.SetWriteDeadline(time.Now().Add(stall))
				n, err := c.Write(payload[off:min(off+256<<10, len(payload))])
				off += n
				if err != nil {
					if !errors.Is(err, os.ErrDeadlineExceeded) {
						werrs.Add(1)
					}
					if n == 0 {
						break
					}
				}
			}
			s.written[i] = int64(off)
		}()
	}
	wg.Wait()
	if werrs.Load() != 0 {
		t.Fatalf("%d peers' writes failed with other than a timeout", werrs.Load())
	}
	return s
}

// drain reads back, on every connection, the bytes it wrote, checking them.
func (s *slowReaders) drain(t *testing.T, d time.Duration) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(s.conns))
	deadline := time.Now().Add(d)
	for i, c := range s.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetReadDeadline(deadline)
			buf := make([]byte, 32<<10)
			var got int64
			for got < s.written[i] {
				n, err := c.Read(buf[:min(int64(len(buf)), s.written[i]-got)])
				if err := relCheckPattern(buf[:n], got); err != nil {
					errs <- err
					return
				}
				got += int64(n)
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("drain: %v", err)
	}
}

func (s *slowReaders) total() int64 {
	var n int64
	for _, w := range s.written {
		n += w
	}
	return n
}

// TestPauseOvershootBounded: a peer that writes without reading makes its
// connection's queue pass its pause mark; the pause then overshoots by at
// most one arm of the multishot recv (recvLimit) plus a buffer and a chunk,
// not by whatever the socket had received (before the byte limit: the
// loop's whole buffer ring, or the socket's receive queue).
func TestPauseOvershootBounded(t *testing.T) {
	const maxWB = 64 << 10
	rt := newRT(t, Config{Loops: 1, MaxWriteBuffer: maxWB})
	var maxQueued atomic.Int64
	ln := relServeCB(t, rt, echoMaxQueued(&maxQueued))
	s := startSlowReaders(t, ln.Addr().String(), 8, 16<<20, time.Second)
	bufSize := rt.Config().BufferSize
	if br := rt.loops[0].bufRing; br != nil {
		bufSize = int(br.Size()) // incremental rings use larger buffers
	}
	limit := int64(maxWB + recvLimit + bufSize + outBigChunk)
	t.Logf("8 peers wrote %d KiB; max queued per conn %d KiB (bound %d KiB)", s.total()>>10, maxQueued.Load()>>10, limit>>10)
	if !rt.recvLimitOn() {
		t.Skip("the kernel refused the multishot recv byte limit (6.17+)")
	}
	if maxQueued.Load() < maxWB/2 {
		t.Fatalf("no queue reached the pause mark, MaxWriteBuffer/2 (max %d): the test did not load the server", maxQueued.Load())
	}
	if maxQueued.Load() > limit {
		t.Errorf("a queue reached %d bytes, over MaxWriteBuffer %d + recvLimit + a buffer + a chunk = %d", maxQueued.Load(), maxWB, limit)
	}
	s.drain(t, time.Minute)
}

// TestThousandSlowReadersBudget is the memory budget's proof (issue 15):
// 1,000 peers each send up to 10 MiB to a callback echo server and do not
// read. The server's peak RSS growth stays within the runtime cap plus the
// stated overshoot (with the GC's headroom), each connection's queue
// within MaxWriteBuffer plus its overshoot; then the peers read back every
// byte (checked) and, the connections still open and idle, the queues hold
// nothing and RSS returns to the baseline. docs/RELIABILITY.md has the
// figures. Without -race (its shadow memory inflates RSS; CI runs it in its
// non-race step).
func TestThousandSlowReadersBudget(t *testing.T) {
	if raceBuild() {
		t.Skip("-race: RSS includes the race detector's shadow memory; run without -race (CI does)")
	}
	const peers, perPeer = 1000, 10 << 20
	const maxBuffered = 64 << 20
	raiseNOFILE(t, 2*peers+200)
	rt := newRT(t, Config{Loops: 2, MaxBufferedBytes: maxBuffered})
	cfg := rt.Config()
	var maxQueued atomic.Int64
	h := echoMaxQueued(&maxQueued)
	ln := relServeCB(t, rt, h)
	debug.FreeOSMemory()
	base := relRssBytes(t)
	resetPeakRSS(t)
	start := time.Now()
	s := startSlowReaders(t, ln.Addr().String(), peers, perPeer, 1500*time.Millisecond)
	peak := peakRSS(t)
	held := rt.budget.held.Load()
	sent := s.total()
	var pausesConn, pausesRT uint64
	for _, l := range rt.loops {
		pausesConn += l.budget.pauses[pauseConn].Load()
		pausesRT += l.budget.pauses[pauseRuntime].Load()
	}
	t.Logf("%d peers wrote %d MiB in %v; queues hold %d MiB (cap %d MiB); pauses conn %d runtime %d; max queued per conn %d KiB",
		peers, sent>>20, time.Since(start).Round(time.Millisecond), held>>20, maxBuffered>>20, pausesConn, pausesRT, maxQueued.Load()>>10)

	s.drain(t, 2*time.Minute)
	// Connections open and idle, queues empty: their chunks went back.
	if !relWaitFor(5*time.Second, func() bool { return rt.budget.held.Load() == 0 }) {
		t.Errorf("after the drain, queues still hold %d bytes", rt.budget.held.Load())
	}
	debug.FreeOSMemory()
	after := relRssBytes(t)
	// The stated overshoot (docs/RELIABILITY.md): what each connection's
	// multishot recv delivered after it paused, at most recvLimit (6.17+;
	// else its socket's receive queue, 6 MiB at most by default), plus one
	// recv buffer and one chunk.
	pauseOver := int64(recvLimit)
	if !rt.recvLimitOn() {
		pauseOver = 6 << 20
		t.Logf("no multishot recv byte limit (kernel before 6.17): a pause may overshoot by a socket receive queue")
	}
	overshoot := int64(peers) * (min(pauseOver, 64<<10) + int64(cfg.BufferSize) + outBigChunk)
	peakLimit := 2*(maxBuffered+overshoot) + 64<<20 // the GC's headroom (GOGC=100) over the live queues
	perConn := int64(cfg.MaxWriteBuffer) + pauseOver + int64(cfg.BufferSize) + outBigChunk
	afterLimit := int64(32<<20) + int64(peers)*4096
	t.Logf("RSS: baseline %d MiB, peak %d MiB (growth %d MiB, limit %d MiB), after drain %d MiB (growth %d MiB, limit %d MiB)",
		base>>20, peak>>20, (peak-base)>>20, peakLimit>>20, after>>20, (after-base)>>20, afterLimit>>20)
	if pausesRT == 0 {
		t.Errorf("the runtime cap never paused a connection: the test did not load the server")
	}
	if held > maxBuffered+overshoot {
		t.Errorf("queues held %d MiB, over the cap %d MiB plus overshoot %d MiB", held>>20, maxBuffered>>20, overshoot>>20)
	}
	if maxQueued.Load() > perConn {
		t.Errorf("a connection queued %d bytes, over the per-connection bound %d", maxQueued.Load(), perConn)
	}
	if peak-base > peakLimit {
		t.Errorf("peak RSS grew by %d MiB with %d slow readers, over %d MiB", (peak-base)>>20, peers, peakLimit>>20)
	}
	if after-base > afterLimit {
		t.Errorf("after the drain RSS is %d MiB over the baseline, over %d MiB", (after-base)>>20, afterLimit>>20)
	}
}

// TestOutQueueSendmsgSpansChunks: nextVec covers every queued chunk in one
// set of iovecs, and sent frees each chunk a (possibly short) sendmsg
// finished, with bytes written while it was in flight kept in order.
func TestOutQueueSendmsgSpansChunks(t *testing.T) {
	rt := &Runtime{cfg: Config{MaxBufferedBytes: -1}}
	l := &loop{rt: rt}
	var q outQueue
	off := int64(0)
	write := func(n int) {
		p := make([]byte, n)
		relFillPattern(p, off)
		off += int64(n)
		q.write(l, p)
	}
	for _, n := range []int{3000, 70000, 1, 200000} {
		write(n)
	}
	var got []byte
	var iov []unix.Iovec
	for round := 0; q.n > 0; round++ {
		var total int
		iov, total = q.nextVec(iov)
		if round == 0 && len(iov) < 2 {
			t.Fatalf("%d iovecs for %d bytes in %d chunks", len(iov), q.n, len(q.chunks))
		}
		// The kernel takes a prefix of the iovecs: 40,000 bytes at most.
		m := min(total, 40000)
		taken := 0
		for _, v := range iov {
			b := unsafe.Slice(v.Base, v.Len)
			k := min(len(b), m-taken)
			got = append(got, b[:k]...)
			taken += k
			if taken == m {
				break
			}
		}
		if short := q.sent(l, m); short != (m < total) {
			t.Fatalf("sent(%d of %d) reported short=%v", m, total, short)
		}
		if round == 1 {
			write(5000) // queued while the queue drains
		}
	}
	if err := relCheckPattern(got, 0); err != nil || int64(len(got)) != off {
		t.Fatalf("got %d bytes (want %d): %v", len(got), off, err)
	}
	if q.held != 0 || len(q.chunks) != 0 || l.budget.held.Load() != 0 {
		t.Fatalf("drained queue holds %d bytes in %d chunks; accounted %d", q.held, len(q.chunks), l.budget.held.Load())
	}
}

// TestOutQueueDiscardKeepsSendmsgChunks: a connection that fails while a
// sendmsg covering several chunks is in flight keeps every one of them
// until that send's CQE, since the kernel may still read any of them.
// Before, discard kept only the head chunk and returned the others to the
// loop's pool, where another connection's Write could fill one while the
// cancelled sendmsg was still reading it.
func TestOutQueueDiscardKeepsSendmsgChunks(t *testing.T) {
	rt := &Runtime{cfg: Config{MaxBufferedBytes: -1}}
	l := &loop{rt: rt}
	var q outQueue
	for _, n := range []int{3000, 20000, 20000, 500} {
		q.write(l, make([]byte, n))
	}
	chunks := len(q.chunks)
	if chunks < 3 {
		t.Fatalf("%d chunks for 43,500 bytes", chunks)
	}
	iov, total := q.nextVec(nil)
	q.write(l, make([]byte, 50000)) // queued while the sendmsg is in flight
	q.discard(l, true)
	if len(q.chunks) != len(iov) || q.n != total {
		t.Fatalf("after discard with a sendmsg of %d chunks (%d bytes) in flight: %d chunks kept, %d bytes queued",
			len(iov), total, len(q.chunks), q.n)
	}
	for i, c := range q.chunks {
		if &c.b[0] != iov[i].Base {
			t.Fatalf("kept chunk %d is not the one the sendmsg covers", i)
		}
	}
	q.sent(l, 0) // its CQE: ECANCELED
	q.release(l)
	if q.n != 0 || len(q.chunks) != 0 || q.held != 0 || l.budget.held.Load() != 0 {
		t.Fatalf("released queue: %d bytes, %d chunks, holds %d, accounted %d", q.n, len(q.chunks), q.held, l.budget.held.Load())
	}
}

// pauseCounter reports whether a loop paused a connection for its queue.
type pauseCounter struct{ l *loop }

func (p pauseCounter) Load() bool { return p.l.budget.pauses[pauseConn].Load() > 0 }

// TestSlowReadersPeakPerConn is issue 28 item 9's attack, in one process:
// 200 peers each write up to 10 MiB to an echo server and never read, on
// the net.Conn API (io.Copy) and on the callback API in turn; it logs the
// server's peak RSS growth per peer for each and checks the callback API's
// against 4x the net.Conn API's plus 64 KiB (the clients' own memory,
// goroutines and sockets, is in both). Without -race (the race detector's
// shadow memory); URINGRT_SLOW_READERS=1 runs it (CI's non-race line).
func TestSlowReadersPeakPerConn(t *testing.T) {
	if os.Getenv("URINGRT_SLOW_READERS") == "" || raceBuild() {
		t.Skip("URINGRT_SLOW_READERS=1, without -race")
	}
	const peers, perPeer = 200, 10 << 20
	payload := make([]byte, perPeer)
	relFillPattern(payload, 0)
	per := map[string]int64{}
	for _, api := range []string{"conn", "callback"} {
		rt := newRT(t, Config{Loops: 2})
		addr := echoServer(t, rt, api)
		// Warm up: a loop's buffer ring (4 MiB) is memory of the loop,
		// not of a peer, and enters the RSS when the kernel first writes
		// each buffer; so are the chunk pools and the stream buffers.
		// Echo through each loop first, and touch each ring's every page
		// (a stream reads into buffers of its own, not the ring's).
		for _, c := range dialStd(t, addr, 2*len(rt.loops)) {
			go c.Write(payload[:8<<20])
			c.SetReadDeadline(time.Now().Add(time.Minute))
			if _, err := io.ReadFull(c, make([]byte, 8<<20)); err != nil {
				t.Fatal(err)
			}
			c.Close()
		}
		for _, l := range rt.loops {
			if br := l.bufRing; br != nil {
				onLoop(l, func() {
					mem := br.Span(0, int(br.Count()*br.Size()))
					for i := 0; i < len(mem); i += 4096 {
						mem[i] = 0 // no recv is in flight: the loop's connections closed
					}
				})
			}
		}
		runtime.GC()
		debug.FreeOSMemory()
		resetPeakRSS(t)
		before := relRssBytes(t)
		conns := make([]net.Conn, peers)
		for i := range conns {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			conns[i] = c
		}
		var wg sync.WaitGroup
		for _, c := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for off := 0; off < perPeer; {
					c.SetWriteDeadline(time.Now().Add(time.Second))
					n, err := c.Write(payload[off:min(off+256<<10, perPeer)])
					off += n
					if err != nil && n == 0 {
						return
					}
				}
			}()
		}
		wg.Wait()
		peak := peakRSS(t)
		per[api] = (peak - before) / peers
		if api == "callback" {
			for _, l := range rt.loops {
				done := make(chan struct{})
				l.post(request{kind: reqFunc, fn: func() {
					var n, held, paused, stalled, short, armed int
					for c := range l.cbConns {
						n += c.outq.n
						held += c.outq.held
						if c.paused {
							paused++
						}
						if c.stalled() {
							stalled++
						}
						if c.sendShort {
							short++
						}
						if c.sending() {
							armed++
						}
					}
					t.Logf("loop %d: %d conns, queued %d KiB, held %d KiB, paused %d stalled %d short %d armed %d; pauses %d/%d; pool %d KiB", l.id, len(l.cbConns), n>>10, held>>10, paused, stalled, short, armed, l.budget.pauses[0].Load(), l.budget.pauses[1].Load(), l.chunks.bytes>>10)
					close(done)
				}})
				<-done
			}
		}
		t.Logf("%s API: RSS %d MiB, peak %d MiB: %d KiB per slow reader", api, before>>20, peak>>20, per[api]>>10)
		for _, c := range conns {
			c.Close()
		}
		rt.Close()
	}
	if limit := 4*per["conn"] + 64<<10; per["callback"] > limit {
		t.Fatalf("callback API peak %d KiB per slow reader, over 4x the net.Conn API's + 64 KiB (%d KiB)", per["callback"]>>10, limit>>10)
	}
}
