package uringrt

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// bigReplyHandler answers each line ("GET\n") of its input with a reply
// of size bytes, written from OnData (the connection's own callback), as a
// RESP server answers pipelined GETs of a big value: a few request bytes
// make a reply many times their size. A refused Write drops the rest of
// that OnData's replies; refusals counts them, lines the requests
// answered or dropped.
func bigReplyHandler(size int, refusals, lines *atomic.Int64) Handler {
	reply := bytes.Repeat([]byte{'v'}, size)
	return HandlerFuncs{Data: func(c *CallbackConn, data []byte) {
		n := bytes.Count(data, []byte{'\n'})
		defer lines.Add(int64(n))
		for range n {
			if _, err := c.Write(reply); err != nil {
				if errors.Is(err, ErrWriteBufferFull) {
					refusals.Add(1)
				}
				return
			}
		}
	}}
}

// TestCallbackRuntimeCapHoldsForOwnWrites: MaxBufferedBytes bounds the
// output queued by Writes in the connections' own callbacks, whatever the
// replies weigh against the requests: 30 clients pipeline GETs of a 1 MiB
// value and never read. The per-connection cap is raised far above what
// one client asks (as a RESP server raises it for big values), so only
// the runtime cap can hold; the clients ask 4x that cap in all. The
// output queued stays under the cap (plus a chunk's rounding per loop),
// the Writes past it fail with ErrWriteBufferFull (counted), every
// connection refused stops reading (the runtime's read pause, counted),
// and, without -race, the process's
// RSS grows less than the cap plus 64 MiB. Scaled from the 256
// MiB cap (URINGRT_BIG_REPLIES=1 runs that size, 100 GETs a client).
func TestCallbackRuntimeCapHoldsForOwnWrites(t *testing.T) {
	const (
		clients = 30
		value   = 1 << 20
	)
	budget, gets := int64(64<<20), 9 // 30 x 9 MiB asked: over 4x the cap
	if os.Getenv("URINGRT_BIG_REPLIES") != "" {
		budget, gets = 256<<20, 100
	}
	runtime.GC()
	base := relRssBytes(t)
	resetPeakRSS(t)
	rt := newRT(t, Config{Loops: 2, MaxWriteBuffer: 72 << 20, MaxBufferedBytes: budget})
	var refusals, lines atomic.Int64
	addr := serveCB(t, rt, bigReplyHandler(value, &refusals, &lines)).Addr().String()

	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // the queues' peak, sampled
		defer close(sampled)
		for {
			var held int64
			for _, l := range rt.loops {
				held += l.budget.held.Load()
			}
			peak.Store(max(peak.Load(), held))
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	conns := make([]net.Conn, 0, clients)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	req := bytes.Repeat([]byte("GET\n"), gets)
	for range clients {
		c, err := relSmallBufDialer.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
	}
	// Wait until every client's GETs were answered or dropped.
	asked := int64(clients * gets)
	ok := relWaitFor(20*time.Second, func() bool { return lines.Load() == asked })
	time.Sleep(200 * time.Millisecond) // let any write past the cap show
	close(stop)
	<-sampled
	growth := peakRSS(t) - base
	st := rt.Stats()
	refusedRT := loopSum(st, func(l *LoopStats) uint64 { return l.WriteRefusedRuntime })
	pausesRT := loopSum(st, func(l *LoopStats) uint64 { return l.ReadPausesRuntime })
	t.Logf("asked %d MiB, cap %d MiB: queued peak %.1f MiB, refusals %d (runtime cap %d), runtime read pauses %d, RSS growth %.1f MiB",
		asked, budget>>20, float64(peak.Load())/(1<<20), refusals.Load(), refusedRT, pausesRT, float64(growth)/(1<<20))
	if !ok {
		t.Errorf("%d of %d requests answered or dropped after 20 s", lines.Load(), asked)
	}
	// A write is checked against the cap before it is copied; chunks round
	// it up by at most one 16 KiB chunk, and the loops write at once.
	if slack := int64(len(rt.loops)) * 64 << 10; peak.Load() > budget+slack {
		t.Errorf("queued output peaked at %d bytes, over MaxBufferedBytes %d + %d", peak.Load(), budget, slack)
	}
	refusedConn := loopSum(st, func(l *LoopStats) uint64 { return l.WriteRefusedConn })
	if refusedRT == 0 || refusedRT+refusedConn != uint64(refusals.Load()) {
		t.Errorf("Stats count %d writes refused by the runtime cap, %d by the connection's; the handler saw %d refusals", refusedRT, refusedConn, refusals.Load())
	}
	if pausesRT == 0 {
		t.Errorf("the runtime's read pause never engaged (ReadPausesRuntime 0)")
	}
	for _, l := range rt.loops { // a connection refused for the runtime cap reads no more
		onLoop(l, func() {
			for c := range l.cbConns {
				if c.rtRefused.Load() && !c.paused && !c.closing {
					t.Errorf("loop %d: a connection refused for the runtime cap still reads", l.id)
				}
			}
		})
	}
	if !raceEnabled && growth > budget+64<<20 {
		t.Errorf("RSS grew %d MiB, over the cap %d MiB + 64 MiB", growth>>20, budget>>20)
	}
}

// TestCallbackRuntimeCapDrained: a handler refused by the runtime cap
// (its own queue empty, others full) gets OnDrained only once the
// runtime's queues fell under half the cap, not at once (which would make
// a handler that retries on OnDrained spin), and reads again then.
func TestCallbackRuntimeCapDrained(t *testing.T) {
	const budget = 16 << 20 // the hog's 15 MiB stays over half of it after its socket took some
	rt := newRT(t, Config{Loops: 1, MaxWriteBuffer: 32 << 20, MaxBufferedBytes: budget})
	var size atomic.Int64 // the hog's write, then the other's
	size.Store(15 << 20)
	type ev struct {
		c    *CallbackConn
		what string
	}
	events := make(chan ev, 64)
	addr := serveCB(t, rt, HandlerFuncs{
		Data: func(c *CallbackConn, d []byte) {
			for range bytes.Count(d, []byte{'\n'}) {
				if _, err := c.Write(make([]byte, size.Load())); errors.Is(err, ErrWriteBufferFull) {
					events <- ev{c, "refused"}
					return
				}
				events <- ev{c, "queued"}
			}
		},
		Drained: func(c *CallbackConn) { events <- ev{c, "drained"} },
	}).Addr().String()
	hog, err := relSmallBufDialer.Dial("tcp", addr) // 6 MiB it does not read yet
	if err != nil {
		t.Fatal(err)
	}
	defer hog.Close()
	hog.Write([]byte("x\n"))
	e := <-events
	if e.what != "queued" {
		t.Fatalf("first write: %s", e.what)
	}
	hogC := e.c
	size.Store(8 << 20)
	other, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.Write([]byte("x\n"))
	e = <-events
	if e.what != "refused" {
		t.Fatalf("a write past the runtime cap: %s, want refused", e.what)
	}
	select {
	case e := <-events:
		t.Fatalf("%s (hog %v) while the runtime is still over its cap (held %d)", e.what, e.c == hogC, rt.loops[0].budget.held.Load())
	case <-time.After(300 * time.Millisecond):
	}
	go io.Copy(io.Discard, hog) // the hog reads: the queues drain
	select {
	case e := <-events:
		if e.what != "drained" {
			t.Fatalf("after the drain: %s, want drained", e.what)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no OnDrained after the runtime's queues drained")
	}
	other.Write([]byte("x\n")) // read again, and written
	for {
		select {
		case e := <-events:
			if e.what == "queued" {
				return
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the refused connection does not read again after the drain")
		}
	}
}

// TestCallbackCloseTimeoutResets: a graceful Close of a connection whose
// peer never reads ends after Config.CloseTimeout: the connection is
// reset (the peer's read fails with ECONNRESET after the bytes it got),
// its queued output freed, OnClose gets ErrCloseTimeout, and Stats counts
// it. CloseTimeout < 0 waits for ever.
func TestCallbackCloseTimeoutResets(t *testing.T) {
	const timeout = 400 * time.Millisecond
	for _, tc := range []struct {
		name    string
		timeout time.Duration
	}{{"bounded", timeout}, {"forever", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newRT(t, Config{Loops: 1, MaxWriteBuffer: 1 << 20, CloseTimeout: tc.timeout})
			type closeEv struct {
				err error
				at  time.Time
			}
			closed := make(chan closeEv, 1)
			var closeAt time.Time
			addr := serveCB(t, rt, HandlerFuncs{
				Open: func(c *CallbackConn) {
					c.Write(make([]byte, 4<<20)) // more than a peer's socket buffers hold
					closeAt = time.Now()
					c.Close()
				},
				Close: func(c *CallbackConn, err error) { closed <- closeEv{err, time.Now()} },
			}).Addr().String()
			c, err := relSmallBufDialer.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if tc.timeout < 0 {
				select {
				case e := <-closed:
					t.Fatalf("CloseTimeout < 0: closed (%v) although the peer never read", e.err)
				case <-time.After(3 * timeout):
				}
				return
			}
			select {
			case e := <-closed:
				if !errors.Is(e.err, ErrCloseTimeout) || !errors.Is(e.err, os.ErrDeadlineExceeded) {
					t.Errorf("OnClose err = %v, want ErrCloseTimeout", e.err)
				}
				if d := e.at.Sub(closeAt); d < timeout {
					t.Errorf("closed %v after Close, before CloseTimeout %v", d, timeout)
				}
			case <-time.After(20 * time.Second): // a hang, not a timing bound
				t.Fatalf("no OnClose 20 s after Close to a peer that never reads (CloseTimeout %v)", timeout)
			}
			if held := rt.loops[0].budget.held.Load(); held != 0 {
				t.Errorf("queues hold %d bytes after the close", held)
			}
			st := rt.Stats()
			if n := loopSum(st, func(l *LoopStats) uint64 { return l.CloseTimeouts }); n != 1 {
				t.Errorf("Stats CloseTimeouts = %d, want 1", n)
			}
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, err := io.Copy(io.Discard, c)
			if !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("the peer read %d bytes, then %v: want a reset (ECONNRESET), not an orderly end", n, err)
			}
		})
	}
}

// TestCallbackShutdownEndsAtCloseTimeout: Shutdown finishes a callback
// connection whose peer never reads at the close timeout, not at its
// context's end.
func TestCallbackShutdownEndsAtCloseTimeout(t *testing.T) {
	rt, err := New(Config{Loops: 1, Backend: BackendUring, MaxWriteBuffer: 1 << 20, CloseTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ln, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opened := make(chan struct{})
	go rt.Serve(ln, HandlerFuncs{Open: func(c *CallbackConn) {
		c.Write(make([]byte, 4<<20))
		close(opened)
	}})
	c, err := relSmallBufDialer.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	<-opened
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	if err := rt.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v after %v, want nil at the close timeout", err, time.Since(start))
	}
}

// TestCallbackCloseTimeoutDefault: CloseTimeout 0 is DefaultCloseTimeout.
func TestCallbackCloseTimeoutDefault(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	if got := rt.Config().CloseTimeout; got != DefaultCloseTimeout {
		t.Fatalf("CloseTimeout = %v, want DefaultCloseTimeout %v", got, DefaultCloseTimeout)
	}
}

// TestCallbackWriteTimeoutMeasuresProgress: a write timeout measures the
// peer's progress, not the completion of one large send: a peer reading
// 64 KiB every 20 ms (about 3 MB/s) gets all 6 MiB of one Write under a
// 300 ms write timeout, then an orderly end; the socket's send buffer
// (autotuned, MiBs on loopback) takes minutes' worth of such reads to
// report room again, so no send completes for longer than the timeout.
func TestCallbackWriteTimeoutMeasuresProgress(t *testing.T) {
	const total = 6 << 20
	rt := newRT(t, Config{Loops: 1, MaxWriteBuffer: 8 << 20})
	closed := make(chan error, 1)
	msg := make([]byte, total)
	relFillPattern(msg, 0)
	addr := serveCB(t, rt, HandlerFuncs{
		Open: func(c *CallbackConn) {
			c.SetWriteTimeout(300 * time.Millisecond)
			c.Write(msg)
			c.Close()
		},
		Close: func(c *CallbackConn, err error) { closed <- err },
	}).Addr().String()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := make([]byte, 0, total)
	buf := make([]byte, 64<<10)
	c.SetReadDeadline(time.Now().Add(60 * time.Second))
	var rerr error
	for {
		n, err := io.ReadFull(c, buf)
		got = append(got, buf[:n]...)
		if err != nil {
			rerr = err
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(got) != total || (rerr != io.EOF && rerr != io.ErrUnexpectedEOF) {
		t.Errorf("the reading peer got %d of %d bytes, then %v", len(got), total, rerr)
	} else if err := relCheckPattern(got, 0); err != nil {
		t.Error(err)
	}
	if err := <-closed; err != nil {
		t.Errorf("OnClose err = %v, want nil (the peer read all)", err)
	}
}

// TestCallbackTimeoutsReset: a connection the runtime cuts for its read
// or write timeout is reset, so that its peer cannot take the cut for an
// orderly end: the peer's read fails with ECONNRESET (after the bytes it
// had), not io.EOF. Stats count each kind.
func TestCallbackTimeoutsReset(t *testing.T) {
	for _, kind := range []string{"read", "write"} {
		t.Run(kind, func(t *testing.T) {
			rt := newRT(t, Config{Loops: 1, MaxWriteBuffer: 1 << 20})
			closed := make(chan error, 1)
			addr := serveCB(t, rt, HandlerFuncs{
				Open: func(c *CallbackConn) {
					if kind == "read" {
						c.SetReadTimeout(100 * time.Millisecond)
						return
					}
					c.SetWriteTimeout(100 * time.Millisecond)
					c.Write(make([]byte, 4<<20)) // more than the peer's buffers
				},
				Close: func(c *CallbackConn, err error) { closed <- err },
			}).Addr().String()
			c, err := relSmallBufDialer.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			want := ErrReadTimeout
			if kind == "write" {
				want = ErrWriteTimeout
			}
			select {
			case err := <-closed:
				if !errors.Is(err, want) {
					t.Fatalf("OnClose err = %v, want %v", err, want)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("no OnClose")
			}
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, err := io.Copy(io.Discard, c)
			if !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("the peer read %d bytes, then %v: want a reset (ECONNRESET), not an orderly end", n, err)
			}
			st := rt.Stats()
			r := loopSum(st, func(l *LoopStats) uint64 { return l.ReadTimeouts })
			w := loopSum(st, func(l *LoopStats) uint64 { return l.WriteTimeouts })
			if kind == "read" && (r != 1 || w != 0) || kind == "write" && (r != 0 || w != 1) {
				t.Errorf("Stats ReadTimeouts %d, WriteTimeouts %d after a %s timeout", r, w, kind)
			}
		})
	}
}

// TestCallbackWriteRefusalsCounted: ErrWriteBufferFull refusals by the
// per-connection cap are counted in Stats, from the callback and from
// elsewhere.
func TestCallbackWriteRefusalsCounted(t *testing.T) {
	rt := newRT(t, Config{Loops: 1, MaxWriteBuffer: 64 << 10})
	var mu sync.Mutex
	var inCB int
	opened := make(chan *CallbackConn, 1)
	addr := serveCB(t, rt, HandlerFuncs{
		Open: func(c *CallbackConn) {
			c.Write(make([]byte, 64<<10))
			if _, err := c.Write(make([]byte, 1)); errors.Is(err, ErrWriteBufferFull) {
				mu.Lock()
				inCB++
				mu.Unlock()
			}
			opened <- c
		},
	}).Addr().String()
	c, err := relSmallBufDialer.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cc := <-opened
	refused := 0
	for range 100 {
		if _, err := cc.AsyncWrite(make([]byte, 64<<10)); errors.Is(err, ErrWriteBufferFull) {
			refused++
		}
	}
	mu.Lock()
	refused += inCB
	mu.Unlock()
	if n := loopSum(rt.Stats(), func(l *LoopStats) uint64 { return l.WriteRefusedConn }); n != uint64(refused) || n == 0 {
		t.Errorf("Stats WriteRefusedConn = %d, the writers saw %d refusals", n, refused)
	}
}
