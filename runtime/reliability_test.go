package runtime

// Reliability under load, faults and bad input (issue 8): nothing lost,
// nothing leaked, no crash. Every peer is on loopback and every loop is
// bounded in count and time. See docs/RELIABILITY.md.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"net"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

// ---- helpers ----

// relTestDeadline is when a test's own loops must give up: the earlier of
// now+d and shortly before the test binary's deadline.
func relTestDeadline(t testing.TB, d time.Duration) time.Time {
	end := time.Now().Add(d)
	if tt, ok := t.(*testing.T); ok {
		if td, ok := tt.Deadline(); ok && td.Add(-5*time.Second).Before(end) {
			end = td.Add(-5 * time.Second)
		}
	}
	return end
}

// relMetricSum sums every sample of the named metric (counter or gauge).
func relMetricSum(t testing.TB, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	var s float64
	found := false
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		found = true
		for _, m := range mf.GetMetric() {
			if c := m.GetCounter(); c != nil {
				s += c.GetValue()
			} else if g := m.GetGauge(); g != nil {
				s += g.GetValue()
			}
		}
	}
	if !found {
		t.Fatalf("metric %s not exported", name)
	}
	return s
}

// relFdCount is the number of open descriptors of the process.
func relFdCount(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// relRssBytes is VmRSS from /proc/self/status.
func relRssBytes(t testing.TB) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// relWaitFor polls cond until it holds or d passes; it reports whether it held.
func relWaitFor(d time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// pattern is the byte at stream offset i: a numbered stream whose loss,
// duplication or reordering shows at the first wrong byte.
func relPattern(i int64) byte { return byte(i % 251) }

func relFillPattern(b []byte, off int64) {
	for i := range b {
		b[i] = relPattern(off + int64(i))
	}
}

// relCheckPattern returns an error at the first byte of b that is not the
// stream's byte at off+i.
func relCheckPattern(b []byte, off int64) error {
	for i := range b {
		if b[i] != relPattern(off+int64(i)) {
			return fmt.Errorf("byte %d of the stream is %d, want %d", off+int64(i), b[i], relPattern(off+int64(i)))
		}
	}
	return nil
}

// relServeCB runs the callback API with h on a new loopback listener of rt
// until the test ends.
func relServeCB(t testing.TB, rt *Runtime, h Handler) net.Listener {
	t.Helper()
	ln, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		rt.Serve(ln, h)
	}()
	// Serve has taken the listener once a connection is echoed; wait for
	// that so the cleanup's Close never races with Serve's start.
	c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
	if err == nil {
		c.Close()
	}
	t.Cleanup(func() {
		ln.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("Serve did not return after its listener closed")
		}
	})
	return ln
}

// relServeConnEcho runs an io.Copy echo server on the net.Conn API.
func relServeConnEcho(t testing.TB, rt *Runtime) net.Listener {
	t.Helper()
	ln, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				time.Sleep(time.Millisecond)
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		rt.Close() // ends the handlers' io.Copy
		wg.Wait()
	})
	return ln
}

// relEchoCheck sends size bytes of the numbered stream on c in random chunks
// and reads them back, verifying each byte, within d.
func relEchoCheck(c net.Conn, size int, d time.Duration, rng *rand.Rand) error {
	c.SetDeadline(time.Now().Add(d))
	defer c.SetDeadline(time.Time{})
	errc := make(chan error, 1)
	go func() {
		buf := make([]byte, 8192)
		for off := 0; off < size; {
			n := 1 + rng.Intn(len(buf))
			if n > size-off {
				n = size - off
			}
			relFillPattern(buf[:n], int64(off))
			if _, err := c.Write(buf[:n]); err != nil {
				errc <- err
				return
			}
			off += n
		}
		errc <- nil
	}()
	buf := make([]byte, 8192)
	for off := 0; off < size; {
		n, err := c.Read(buf)
		if err := relCheckPattern(buf[:n], int64(off)); err != nil {
			return err
		}
		off += n
		if err != nil && off < size {
			return fmt.Errorf("after %d of %d bytes: %w", off, size, err)
		}
	}
	return <-errc
}

func relDialStd(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// relCbTiers are the callback API's feature tiers: the fast path, each
// feature turned off, a handler on the worker pool, and Go's net.
var relCbTiers = []struct {
	name     string
	cfg      Config
	blocking bool
}{
	{"bufring-multishot", Config{Loops: 2}, false},
	{"no-bufring", Config{Loops: 1, DisableBufRing: true}, false},
	{"no-multishot", Config{Loops: 1, DisableMultishot: true}, false},
	{"no-defer-taskrun", Config{Loops: 1, DisableDeferTaskrun: true, DisableMultishot: true, DisableBufRing: true}, false},
	{"blocking-handler", Config{Loops: 1, Workers: 4}, true},
	{"std", Config{Backend: BackendStd}, false},
}

func relEchoHandler(blocking bool) Handler {
	return HandlerFuncs{Data: func(c *CallbackConn, d []byte) { c.Write(d) }, Blocking: blocking}
}

// ---- feature tiers ----

// TestTiersCoverFeatureSwitches checks that the net.Conn contract tests
// (tiers in conn_test.go) and the callback tests (relCbTiers) run with
// DEFER_TASKRUN, multishot and buffer rings turned off, every pollable
// policy, and Go's net.
func TestTiersCoverFeatureSwitches(t *testing.T) {
	var allOff, std bool
	pol := map[Pollable]bool{}
	for _, tr := range tiers {
		c := tr.cfg
		allOff = allOff || c.DisableDeferTaskrun && c.DisableMultishot && c.DisableBufRing
		std = std || c.Backend == BackendStd
		if c.Backend != BackendStd {
			pol[c.Pollable] = true
		}
	}
	if !allOff || !std || len(pol) != 4 {
		t.Fatalf("conn tiers miss a tier: all-features-off=%v std=%v policies=%v", allOff, std, pol)
	}
	var noBR, noMS, noDT, cbStd bool
	for _, tr := range relCbTiers {
		noBR = noBR || tr.cfg.DisableBufRing
		noMS = noMS || tr.cfg.DisableMultishot
		noDT = noDT || tr.cfg.DisableDeferTaskrun
		cbStd = cbStd || tr.cfg.Backend == BackendStd
	}
	if !noBR || !noMS || !noDT || !cbStd {
		t.Fatalf("callback tiers miss a tier: no-bufring=%v no-multishot=%v no-defer-taskrun=%v std=%v", noBR, noMS, noDT, cbStd)
	}
}

// TestCallbackEchoTiers echoes on the callback API over every tier: many
// connections, random write sizes, every byte verified.
func TestCallbackEchoTiers(t *testing.T) {
	for _, tier := range relCbTiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			ln := relServeCB(t, rt, relEchoHandler(tier.blocking))
			const conns, size = 20, 64 << 10
			var wg sync.WaitGroup
			errs := make(chan error, conns)
			for i := 0; i < conns; i++ {
				c := relDialStd(t, ln.Addr().String())
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					if err := relEchoCheck(c, size, 20*time.Second, rand.New(rand.NewSource(int64(i)))); err != nil {
						errs <- fmt.Errorf("conn %d: %w", i, err)
					}
				}(i)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// ---- bounded memory ----

// relSmallBufDialer dials with 16 KiB socket buffers set before connect, so
// a peer that does not read fills the path quickly.
var relSmallBufDialer = net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
	return rc.Control(func(fd uintptr) {
		syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 16<<10)
		syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, 16<<10)
	})
}}

// TestCallbackBackpressure: a peer that writes a lot and does not read
// makes the server's queued output reach MaxWriteBuffer; the loop then
// stops reading that connection, so the queue stays within the cap plus
// what the recvs already in flight delivered; once the peer reads, every
// byte arrives intact.
func TestCallbackBackpressure(t *testing.T) {
	for _, tier := range relCbTiers[:4] {
		t.Run(tier.name, func(t *testing.T) {
			const maxWB = 64 << 10
			cfg := tier.cfg
			cfg.Loops = 1
			cfg.MaxWriteBuffer = maxWB
			rt := newRT(t, cfg)
			var maxQueued atomic.Int64
			var paused atomic.Bool
			h := HandlerFuncs{Data: func(c *CallbackConn, d []byte) {
				c.Write(d)
				q := int64(c.outq.n)
				if q > maxQueued.Load() {
					maxQueued.Store(q)
				}
				if c.paused {
					paused.Store(true)
				}
			}}
			ln := relServeCB(t, rt, h)
			c, err := relSmallBufDialer.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			const total = 16 << 20
			end := relTestDeadline(t, 30*time.Second)
			c.SetDeadline(end)
			var written atomic.Int64
			werr := make(chan error, 1)
			go func() {
				buf := make([]byte, 32<<10)
				for off := 0; off < total; off += len(buf) {
					relFillPattern(buf, int64(off))
					n, err := c.Write(buf)
					written.Add(int64(n))
					if err != nil {
						werr <- err
						return
					}
				}
				werr <- nil
			}()
			// Wait until the writer stalls: the server stopped reading.
			last, stalledSince := int64(-1), time.Now()
			for time.Now().Before(end) {
				w := written.Load()
				if w != last {
					last, stalledSince = w, time.Now()
				} else if time.Since(stalledSince) > 300*time.Millisecond {
					break
				}
				if w == total {
					t.Fatalf("the peer wrote all %d bytes without reading: the server never pushed back", total)
				}
				time.Sleep(20 * time.Millisecond)
			}
			// What may sit in the queue: the cap, plus the data of recv CQEs
			// already posted when the loop cancelled the recv (one buffer
			// for single-shot recv; for multishot, those in the batch).
			bufSize, bufs := rt.Config().BufferSize, rt.Config().Buffers
			if br := rt.loops[0].bufRing; br != nil {
				bufSize, bufs = int(br.Size()), int(br.Count()) // incremental rings: fewer, larger buffers
			}
			limit := int64(maxWB + bufSize)
			if !cfg.DisableMultishot && !cfg.DisableBufRing {
				limit = int64(maxWB + bufs*bufSize)
			}
			t.Logf("stalled after %d bytes written; max queued %d (cap %d, limit %d)", last, maxQueued.Load(), maxWB, limit)
			if !paused.Load() {
				t.Fatalf("the connection never paused reading (max queued %d)", maxQueued.Load())
			}
			if q := maxQueued.Load(); q > limit {
				t.Fatalf("queued output reached %d bytes, over cap %d + in-flight recv data (%d)", q, maxWB, limit)
			}
			// Now read: everything arrives intact and the writer finishes.
			buf := make([]byte, 64<<10)
			for off := 0; off < total; {
				n, err := c.Read(buf)
				if cerr := relCheckPattern(buf[:n], int64(off)); cerr != nil {
					t.Fatal(cerr)
				}
				off += n
				if err != nil && off < total {
					t.Fatalf("read after %d bytes: %v", off, err)
				}
			}
			if err := <-werr; err != nil {
				t.Fatalf("writer: %v", err)
			}
		})
	}
}

// TestConnWriteBlocksAndHonoursDeadline: on the net.Conn API, a Write to a
// peer that does not read blocks when the socket is full and returns a
// timeout at its deadline with the count written; the peer then reads
// exactly that many bytes, intact.
func TestConnWriteBlocksAndHonoursDeadline(t *testing.T) {
	for _, tier := range tiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			c, s := pair(t, rt, "tcp")
			buf := make([]byte, 32<<20)
			relFillPattern(buf, 0)
			start := time.Now()
			c.SetWriteDeadline(start.Add(200 * time.Millisecond))
			n, err := c.Write(buf)
			el := time.Since(start)
			if !errors.Is(err, os.ErrDeadlineExceeded) || n <= 0 || n >= len(buf) {
				t.Fatalf("Write to a peer that does not read = %d, %v; want 0 < n < %d and a timeout", n, err, len(buf))
			}
			if el < 150*time.Millisecond || el > 5*time.Second {
				t.Fatalf("Write returned after %v, want about its 200ms deadline", el)
			}
			c.Close()
			s.SetReadDeadline(relTestDeadline(t, 20*time.Second))
			got, err := io.ReadAll(s)
			if err != nil {
				t.Fatalf("peer read: %v", err)
			}
			if len(got) != n {
				t.Fatalf("peer got %d bytes, Write reported %d", len(got), n)
			}
			if err := relCheckPattern(got, 0); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestManySlowPeersBoundedRSS: 1,000 peers that write and never read; the
// callback server's output per connection is capped at 64 KiB (plus the
// data of recvs already completed when it paused), so RSS stays bounded.
func TestManySlowPeersBoundedRSS(t *testing.T) {
	const peers, maxWB = 1000, 64 << 10
	rt := newRT(t, Config{Loops: 2, MaxWriteBuffer: maxWB, Buffers: 16})
	var maxQueued atomic.Int64
	h := HandlerFuncs{Data: func(c *CallbackConn, d []byte) {
		c.Write(d)
		if q := int64(c.outq.n); q > maxQueued.Load() {
			maxQueued.Store(q)
		}
	}}
	ln := relServeCB(t, rt, h)
	debug.FreeOSMemory()
	before := relRssBytes(t)
	end := relTestDeadline(t, 30*time.Second)
	payload := make([]byte, 1<<20)
	relFillPattern(payload, 0)
	var wg sync.WaitGroup
	var werrs atomic.Int64
	conns := make([]net.Conn, 0, peers)
	for i := 0; i < peers; i++ {
		c, err := relSmallBufDialer.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		conns = append(conns, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Write until the path is full (the deadline ends it).
			c.SetWriteDeadline(time.Now().Add(1500 * time.Millisecond))
			if _, err := c.Write(payload); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
				werrs.Add(1)
			}
		}()
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	wg.Wait()
	if time.Now().After(end) {
		t.Fatal("ran out of time")
	}
	after := relRssBytes(t)
	// Per connection: the cap plus what the recvs in flight when it paused
	// delivered (at most the loop's buffer ring, 16 x 4 KiB here), held in
	// up to two slices (queued and being sent) that keep their capacity.
	perConn := 2 * (maxWB + 16*rt.Config().BufferSize)
	limit := int64(peers*perConn + 64<<20)
	t.Logf("RSS %d MiB -> %d MiB (growth %d MiB, limit %d MiB); max queued per conn %d; write errors %d",
		before>>20, after>>20, (after-before)>>20, limit>>20, maxQueued.Load(), werrs.Load())
	if werrs.Load() != 0 {
		t.Errorf("%d peers' writes failed with other than a timeout", werrs.Load())
	}
	if maxQueued.Load() < maxWB {
		t.Errorf("no connection reached its cap (max queued %d): the test did not load the server", maxQueued.Load())
	}
	if raceBuild() {
		t.Logf("-race: RSS includes the race detector's shadow memory; not checked")
		return
	}
	if after-before > limit {
		t.Fatalf("RSS grew by %d MiB with %d slow peers, over %d MiB", (after-before)>>20, peers, limit>>20)
	}
}

// ---- bursts ----

// relBurstEcho runs conns connections that each send size bytes at once and
// verify the echo.
func relBurstEcho(t *testing.T, addr string, conns, size int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	start := make(chan struct{})
	cs := make([]net.Conn, conns)
	for i := range cs {
		cs[i] = relDialStd(t, addr)
	}
	for i, c := range cs {
		wg.Add(1)
		go func(i int, c net.Conn) {
			defer wg.Done()
			<-start
			if err := relEchoCheck(c, size, 60*time.Second, rand.New(rand.NewSource(int64(i)))); err != nil {
				errs <- fmt.Errorf("conn %d: %w", i, err)
			}
		}(i, c)
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestBurstBufferRingExhaustedAndCQOverflow: 8 provided buffers and an SQ
// of 8 (CQ 32) under a burst on 100 connections: the buffer ring runs dry
// (ENOBUFS), the SQ fills, the CQ overflows, and no byte or completion is
// lost.
func TestBurstBufferRingExhaustedAndCQOverflow(t *testing.T) {
	reg := prometheus.NewRegistry()
	rt := newRT(t, Config{Loops: 1, Buffers: 8, BufferSize: 1024, RingEntries: 8, Registerer: reg})
	if rt.loops[0].bufRing == nil {
		t.Skip("no provided buffer ring on this kernel")
	}
	ln := relServeCB(t, rt, relEchoHandler(false))
	relBurstEcho(t, ln.Addr().String(), 100, 32<<10)
	enobufs := relMetricSum(t, reg, "uringrt_buffer_ring_exhausted_total")
	sqFull := relMetricSum(t, reg, "uringrt_sq_full_total")
	over := relMetricSum(t, reg, "uringrt_cq_overflows_total")
	t.Logf("ENOBUFS %v, SQ full %v, CQ overflows %v", enobufs, sqFull, over)
	if enobufs == 0 {
		t.Error("the buffer ring never ran dry: the burst did not test ENOBUFS")
	}
	if sqFull == 0 {
		t.Error("the SQ never filled: the burst did not test SQ full")
	}
}

// TestBurstConnAPISQFull: the net.Conn API with an SQ of 8 and 200
// connections (ring policy: every op is an SQE): the SQ fills and the loop
// submits and retries; every byte arrives intact.
func TestBurstConnAPISQFull(t *testing.T) {
	for _, pol := range []Pollable{PollHybrid, PollRing} {
		t.Run(pol.String(), func(t *testing.T) {
			reg := prometheus.NewRegistry()
			rt := newRT(t, Config{Loops: 1, RingEntries: 8, Pollable: pol, Registerer: reg})
			ln := relServeConnEcho(t, rt)
			relBurstEcho(t, ln.Addr().String(), 200, 16<<10)
			sqFull := relMetricSum(t, reg, "uringrt_sq_full_total")
			t.Logf("SQ full %v, CQ overflows %v", sqFull, relMetricSum(t, reg, "uringrt_cq_overflows_total"))
			if sqFull == 0 {
				t.Error("the SQ never filled: the burst did not test SQ full")
			}
		})
	}
}

// ---- cancellation safety ----

// TestReadCancelNoLateWrite: a Read cut short by a deadline or by Close
// returns only when the kernel is done with its buffer: a sentinel
// written into the buffer afterwards survives data sent later, and that
// data is read whole by the next Read.
func TestReadCancelNoLateWrite(t *testing.T) {
	for _, tier := range tiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			rng := rand.New(rand.NewSource(1))
			c, s := pair(t, rt, "tcp")
			msg := make([]byte, 64)
			for i := 0; i < 30; i++ {
				buf := make([]byte, 64)
				s.SetReadDeadline(time.Now().Add(time.Duration(rng.Intn(3000)) * time.Microsecond))
				if n, err := s.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatalf("read with nothing sent = %d, %v; want a timeout", n, err)
				}
				for j := range buf {
					buf[j] = 0xEE
				}
				relFillPattern(msg, int64(i))
				if _, err := c.Write(msg); err != nil {
					t.Fatal(err)
				}
				s.SetReadDeadline(time.Now().Add(5 * time.Second))
				got := make([]byte, len(msg))
				if _, err := io.ReadFull(s, got); err != nil {
					t.Fatalf("round %d: the message sent after a timed-out Read: %v", i, err)
				}
				if !bytes.Equal(got, msg) {
					t.Fatalf("round %d: message %v, want %v", i, got, msg)
				}
				if !bytes.Equal(buf, bytes.Repeat([]byte{0xEE}, len(buf))) {
					t.Fatalf("round %d: the kernel wrote into the buffer of a Read that had returned: %v", i, buf)
				}
			}
			// Close: a Read blocked across Close returns ErrClosed and its
			// buffer is not written afterwards.
			for i := 0; i < 5; i++ {
				c, s := pair(t, rt, "tcp")
				buf := make([]byte, 64)
				done := make(chan error, 1)
				go func() {
					_, err := s.Read(buf)
					done <- err
				}()
				time.Sleep(time.Duration(rng.Intn(3000)) * time.Microsecond)
				s.Close()
				if err := <-done; !errors.Is(err, net.ErrClosed) {
					t.Fatalf("read blocked across Close: %v", err)
				}
				for j := range buf {
					buf[j] = 0xEE
				}
				c.Write(msg) // may fail: the peer is gone
				time.Sleep(5 * time.Millisecond)
				if !bytes.Equal(buf, bytes.Repeat([]byte{0xEE}, len(buf))) {
					t.Fatalf("the kernel wrote into the buffer of a Read ended by Close: %v", buf)
				}
			}
		})
	}
}

// TestReadDeadlinesLoseNoBytes: a stream of numbered bytes read with
// random deadlines (past, now, soon): every byte the kernel took arrives
// once and in order.
func TestReadDeadlinesLoseNoBytes(t *testing.T) {
	for _, tier := range tiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			c, s := pair(t, rt, "tcp")
			const total = 1 << 20
			end := relTestDeadline(t, 30*time.Second)
			werr := make(chan error, 1)
			go func() {
				rng := rand.New(rand.NewSource(2))
				buf := make([]byte, 16<<10)
				c.SetWriteDeadline(end)
				for off := 0; off < total; {
					n := min(1+rng.Intn(len(buf)), total-off)
					relFillPattern(buf[:n], int64(off))
					if _, err := c.Write(buf[:n]); err != nil {
						werr <- err
						return
					}
					off += n
					if rng.Intn(8) == 0 {
						time.Sleep(time.Duration(rng.Intn(500)) * time.Microsecond)
					}
				}
				werr <- nil
			}()
			rng := rand.New(rand.NewSource(3))
			buf := make([]byte, 16<<10)
			timeouts := 0
			for off := 0; off < total; {
				if time.Now().After(end) {
					t.Fatalf("ran out of time after %d of %d bytes", off, total)
				}
				s.SetReadDeadline(time.Now().Add(time.Duration(rng.Intn(1500)-500) * time.Microsecond))
				n, err := s.Read(buf[:1+rng.Intn(len(buf))])
				if cerr := relCheckPattern(buf[:n], int64(off)); cerr != nil {
					t.Fatal(cerr)
				}
				off += n
				if err != nil {
					if !errors.Is(err, os.ErrDeadlineExceeded) {
						t.Fatalf("read after %d bytes: %v", off, err)
					}
					if n != 0 {
						t.Fatalf("a timed-out Read returned %d bytes", n)
					}
					timeouts++
				}
			}
			if err := <-werr; err != nil {
				t.Fatal(err)
			}
			if timeouts == 0 {
				t.Error("no Read timed out: the test did not cut reads short")
			}
			t.Logf("%d reads cut short by deadlines", timeouts)
		})
	}
}

// ---- limits ----

// TestMaxConns: connections over Config.MaxConns are closed at once and
// counted; a connection is accepted again once one closes.
func TestMaxConns(t *testing.T) {
	for _, api := range []string{"callback", "conn"} {
		t.Run(api, func(t *testing.T) {
			const max, extra = 4, 6
			reg := prometheus.NewRegistry()
			rt := newRT(t, Config{Loops: 2, MaxConns: max, Registerer: reg})
			var ln net.Listener
			if api == "callback" {
				ln = relServeCB(t, rt, relEchoHandler(false))
				// relServeCB's probe connection must be gone before counting.
				if !relWaitFor(5*time.Second, func() bool { return relMetricSum(t, reg, "uringrt_connections_active") == 0 }) {
					t.Fatal("probe connection never closed")
				}
			} else {
				ln = relServeConnEcho(t, rt)
			}
			rng := rand.New(rand.NewSource(4))
			var ok []net.Conn
			for i := 0; i < max; i++ {
				c := relDialStd(t, ln.Addr().String())
				if err := relEchoCheck(c, 1000, 5*time.Second, rng); err != nil {
					t.Fatalf("conn %d under the cap: %v", i, err)
				}
				ok = append(ok, c)
			}
			for i := 0; i < extra; i++ {
				c := relDialStd(t, ln.Addr().String())
				c.SetDeadline(time.Now().Add(5 * time.Second))
				c.Write([]byte("x"))
				_, err := c.Read(make([]byte, 1))
				if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatalf("conn %d over the cap was served or left open: %v", max+i, err)
				}
			}
			if !relWaitFor(5*time.Second, func() bool { return relMetricSum(t, reg, "uringrt_connections_rejected_total") >= extra }) {
				t.Fatalf("rejected = %v, want %d", relMetricSum(t, reg, "uringrt_connections_rejected_total"), extra)
			}
			// Close one: a new connection is served again.
			ok[0].Close()
			if !relWaitFor(5*time.Second, func() bool { return relMetricSum(t, reg, "uringrt_connections_active") < max }) {
				t.Fatal("closed connection still counted")
			}
			c := relDialStd(t, ln.Addr().String())
			if err := relEchoCheck(c, 1000, 5*time.Second, rng); err != nil {
				t.Fatalf("conn after one closed: %v", err)
			}
			for _, c := range ok[1:] {
				if err := relEchoCheck(c, 1000, 5*time.Second, rng); err != nil {
					t.Fatalf("conn under the cap after rejections: %v", err)
				}
			}
		})
	}
}

// ---- no crash ----

// TestHandlerPanicClosesOnlyItsConn: a panic in OnData is recovered,
// logged once, counted, and closes that connection; the others keep
// echoing.
func TestHandlerPanicClosesOnlyItsConn(t *testing.T) {
	for _, tier := range relCbTiers {
		t.Run(tier.name, func(t *testing.T) {
			var logs lockedBuffer
			cfg := tier.cfg
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			reg := prometheus.NewRegistry()
			cfg.Registerer = reg
			rt := newRT(t, cfg)
			h := HandlerFuncs{Blocking: tier.blocking, Data: func(c *CallbackConn, d []byte) {
				if bytes.Contains(d, []byte("PANIC")) {
					panic("test handler panic")
				}
				c.Write(d)
			}}
			ln := relServeCB(t, rt, h)
			rng := rand.New(rand.NewSource(5))
			var good []net.Conn
			for i := 0; i < 5; i++ {
				good = append(good, relDialStd(t, ln.Addr().String()))
			}
			for i := 0; i < 3; i++ {
				bad := relDialStd(t, ln.Addr().String())
				bad.SetDeadline(time.Now().Add(5 * time.Second))
				bad.Write([]byte("PANIC"))
				if _, err := bad.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatalf("the panicking connection was not closed: %v", err)
				}
			}
			for i, c := range good {
				if err := relEchoCheck(c, 10000, 5*time.Second, rng); err != nil {
					t.Fatalf("good conn %d after panics: %v", i, err)
				}
			}
			if n := strings.Count(logs.String(), "handler panicked"); n != 1 {
				t.Errorf("panic logged %d times, want once:\n%s", n, logs.String())
			}
			if p := relMetricSum(t, reg, "uringrt_handler_panics_total"); p != 3 {
				t.Errorf("handler_panics_total = %v, want 3", p)
			}
		})
	}
}

// relChaosPeer does one hostile thing to addr, chosen by rng.
func relChaosPeer(addr string, rng *rand.Rand, payload []byte) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return
	}
	tc := c.(*net.TCPConn)
	c.SetDeadline(time.Now().Add(2 * time.Second))
	switch rng.Intn(7) {
	case 0: // connect and reset at once
		tc.SetLinger(0)
	case 1: // garbage, then reset while the echo is in flight
		c.Write(payload[:1+rng.Intn(len(payload))])
		tc.SetLinger(0)
	case 2: // a lot, never read, close (the server's sends hit a closed peer)
		c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
		c.Write(payload)
	case 3: // half-close, then read what comes back
		c.Write(payload[:1+rng.Intn(1000)])
		tc.CloseWrite()
		io.Copy(io.Discard, c)
	case 4: // close at a random moment mid-echo
		go c.Write(payload)
		time.Sleep(time.Duration(rng.Intn(2000)) * time.Microsecond)
	case 5: // close the read side, keep writing
		tc.CloseRead()
		c.Write(payload[:1+rng.Intn(len(payload))])
		tc.SetLinger(0)
	case 6: // nothing at all
	}
	c.Close()
}

// TestNetworkChaosNoCrash: hostile peers (resets mid-echo, half-closes,
// peers that never read, closes at random moments) against both APIs:
// the runtime does not panic, a well-behaved connection keeps echoing, and
// every descriptor is released.
func TestNetworkChaosNoCrash(t *testing.T) {
	for _, api := range []string{"callback", "conn"} {
		for _, tier := range []struct {
			name string
			cfg  Config
		}{{"default", Config{Loops: 2}}, {"features-off", Config{Loops: 1, DisableBufRing: true, DisableMultishot: true, DisableDeferTaskrun: true}}, {"ring", Config{Loops: 1, Pollable: PollRing}}} {
			if api == "callback" && tier.name == "ring" {
				continue
			}
			t.Run(api+"/"+tier.name, func(t *testing.T) {
				fds := relFdCount(t)
				rt, err := New(Config{Backend: BackendUring, Loops: tier.cfg.Loops, Pollable: tier.cfg.Pollable,
					DisableBufRing: tier.cfg.DisableBufRing, DisableMultishot: tier.cfg.DisableMultishot, DisableDeferTaskrun: tier.cfg.DisableDeferTaskrun})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { rt.Close() })
				var ln net.Listener
				if api == "callback" {
					ln = relServeCB(t, rt, relEchoHandler(false))
				} else {
					ln = relServeConnEcho(t, rt)
				}
				good := relDialStd(t, ln.Addr().String())
				payload := make([]byte, 256<<10)
				relFillPattern(payload, 0)
				end := relTestDeadline(t, 10*time.Second)
				var wg sync.WaitGroup
				for w := 0; w < 8; w++ {
					wg.Add(1)
					go func(w int) {
						defer wg.Done()
						rng := rand.New(rand.NewSource(int64(w)))
						for i := 0; i < 40 && time.Now().Before(end); i++ {
							relChaosPeer(ln.Addr().String(), rng, payload)
						}
					}(w)
				}
				gerr := make(chan error, 1)
				go func() {
					rng := rand.New(rand.NewSource(99))
					for i := 0; i < 20; i++ {
						if err := relEchoCheck(good, 4096, 5*time.Second, rng); err != nil {
							gerr <- err
							return
						}
					}
					gerr <- nil
				}()
				wg.Wait()
				if err := <-gerr; err != nil {
					t.Fatalf("well-behaved conn during chaos: %v", err)
				}
				good.Close()
				ln.Close()
				if err := rt.Close(); err != nil {
					t.Fatal(err)
				}
				if !relWaitFor(5*time.Second, func() bool { return relFdCount(t) <= fds }) {
					t.Fatalf("descriptors: %d before, %d after:%s", fds, relFdCount(t), listFDs())
				}
			})
		}
	}
}

// ---- shutdown under load ----

// TestShutdownUnderLoad: Shutdown while 1,000 connections echo returns
// before its 5 s context ends; every byte echoed before it began is
// intact; afterwards no descriptor, goroutine or in-flight op remains.
func TestShutdownUnderLoad(t *testing.T) {
	for _, api := range []string{"callback", "conn"} {
		t.Run(api, func(t *testing.T) {
			conns := 1000
			if testing.Short() {
				conns = 200
			}
			ignore := goleak.IgnoreCurrent()
			fds := relFdCount(t)
			reg := prometheus.NewRegistry()
			rt, err := New(Config{Backend: BackendUring, Loops: 2, Registerer: reg})
			if err != nil {
				t.Fatal(err)
			}
			ln, err := rt.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			var srv sync.WaitGroup
			srv.Add(1)
			if api == "callback" {
				go func() { defer srv.Done(); rt.Serve(ln, relEchoHandler(false)) }()
			} else {
				go func() {
					defer srv.Done()
					for {
						c, err := ln.Accept()
						if err != nil {
							if errors.Is(err, net.ErrClosed) {
								return
							}
							continue
						}
						srv.Add(1)
						go func() { defer srv.Done(); defer c.Close(); io.Copy(c, c) }()
					}
				}()
			}
			end := relTestDeadline(t, 60*time.Second)
			var verified atomic.Int64
			var cl sync.WaitGroup
			errs := make(chan error, conns)
			var started sync.WaitGroup
			var shutdownBegan atomic.Bool
			for i := 0; i < conns; i++ {
				started.Add(1)
				cl.Add(1)
				go func(i int) {
					defer cl.Done()
					c, err := net.DialTimeout("tcp", ln.Addr().String(), 10*time.Second)
					started.Done()
					if err != nil {
						errs <- fmt.Errorf("dial %d: %w", i, err)
						return
					}
					defer c.Close()
					c.SetDeadline(end)
					rng := rand.New(rand.NewSource(int64(i)))
					wbuf, rbuf := make([]byte, 512), make([]byte, 512)
					var off int64
					for {
						n := 1 + rng.Intn(len(wbuf))
						relFillPattern(wbuf[:n], off)
						if _, err := c.Write(wbuf[:n]); err != nil {
							break
						}
						got, err := io.ReadFull(c, rbuf[:n])
						if cerr := relCheckPattern(rbuf[:got], off); cerr != nil {
							errs <- fmt.Errorf("conn %d: %w", i, cerr)
							return
						}
						verified.Add(int64(got))
						off += int64(got)
						if err != nil {
							if !shutdownBegan.Load() {
								errs <- fmt.Errorf("conn %d failed before shutdown: %w", i, err)
							}
							return
						}
					}
					if !shutdownBegan.Load() {
						errs <- fmt.Errorf("conn %d write failed before shutdown", i)
					}
				}(i)
			}
			started.Wait()
			time.Sleep(300 * time.Millisecond)
			before := verified.Load()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			shutdownBegan.Store(true)
			start := time.Now()
			err = rt.Shutdown(ctx)
			took := time.Since(start)
			t.Logf("%d bytes echoed and verified before Shutdown; Shutdown took %v", before, took)
			if err != nil {
				t.Fatalf("Shutdown under load: %v after %v", err, took)
			}
			if before == 0 {
				t.Fatal("nothing was echoed before Shutdown: no load")
			}
			cl.Wait()
			srv.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			for _, l := range rt.loops {
				<-l.done
				if l.inflight != 0 || l.closing != 0 || len(l.cbConns) != 0 {
					t.Errorf("loop %d after Shutdown: %d ops in flight, %d fds closing, %d callback conns", l.id, l.inflight, l.closing, len(l.cbConns))
				}
			}
			rt.mu.Lock()
			left := len(rt.conns) + len(rt.stdConns)
			rt.mu.Unlock()
			if left != 0 {
				t.Errorf("%d connections still tracked after Shutdown", left)
			}
			if v := relMetricSum(t, reg, "uringrt_inflight_ops"); v != 0 {
				t.Errorf("uringrt_inflight_ops = %v after Shutdown", v)
			}
			if !relWaitFor(5*time.Second, func() bool { return relFdCount(t) <= fds }) {
				t.Errorf("descriptors: %d before, %d after", fds, relFdCount(t))
			}
			var leak error
			relWaitFor(5*time.Second, func() bool { leak = goleak.Find(ignore); return leak == nil })
			if err := leak; err != nil {
				t.Errorf("goroutines left after Shutdown: %v", err)
			}
		})
	}
}

var _ = goruntime.NumGoroutine

// TestAsyncReadDeadlineUnderLoad: under PollAsync (IOSQE_ASYNC recv) a Read
// whose deadline passes must return even when the cancel reaches the recv
// while it moves from io-wq to its internal poll (the kernel answers ENOENT
// or EALREADY and cancels nothing); the loop sends the cancel again. Before
// that, with two other processes keeping the CPUs busy, a Read here hung
// within a few thousand rounds.
func TestAsyncReadDeadlineUnderLoad(t *testing.T) {
	const hogFor = 10 * time.Second
	startCPUHogs(t, 2, hogFor)
	rt := newRT(t, Config{Loops: 1, Pollable: PollAsync})
	const conns = 16
	end := time.Now().Add(hogFor - 2*time.Second)
	var rounds atomic.Int64
	errs := make(chan error, conns)
	for k := 0; k < conns; k++ {
		c, s := pair(t, rt, "tcp")
		go func() {
			errs <- func() error {
				rng := rand.New(rand.NewSource(int64(k)))
				msg := []byte("after the timeout")
				got := make([]byte, len(msg))
				buf := make([]byte, 64)
				for time.Now().Before(end) {
					rounds.Add(1)
					s.SetReadDeadline(time.Now().Add(time.Duration(rng.Intn(1000)) * time.Microsecond))
					done := make(chan error, 1)
					go func() { _, err := s.Read(buf); done <- err }()
					select {
					case err := <-done:
						if !errors.Is(err, os.ErrDeadlineExceeded) {
							return fmt.Errorf("Read = %v, want a timeout", err)
						}
					case <-time.After(5 * time.Second):
						return errors.New("a Read whose deadline passed is still blocked after 5 s")
					}
					if _, err := c.Write(msg); err != nil {
						return err
					}
					s.SetReadDeadline(time.Now().Add(5 * time.Second))
					if _, err := io.ReadFull(s, got); err != nil || !bytes.Equal(got, msg) {
						return fmt.Errorf("the message after the timeout: %q, %v", got, err)
					}
				}
				return nil
			}()
		}()
	}
	for k := 0; k < conns; k++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	t.Logf("%d rounds on %d connections", rounds.Load(), conns)
}
