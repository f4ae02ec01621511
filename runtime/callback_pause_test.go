package uringrt

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// pauseTiers are the ways a callback connection is served that PauseRead
// must hold on.
var pauseTiers = []struct {
	name     string
	cfg      Config
	blocking bool
}{
	{"uring", Config{Loops: 2}, false},
	{"uring-blocking", Config{Loops: 2}, true},
	{"std", Config{Backend: BackendStd}, false},
}

// pauseRecorder is a handler that keeps every byte it gets, in order,
// and counts OnData calls that come while the test expects the
// connection paused.
type pauseRecorder struct {
	mu        sync.Mutex
	got       bytes.Buffer
	conn      chan *CallbackConn
	closed    chan error
	expectOff atomic.Bool  // the test paused: no OnData may come
	strays    atomic.Int64 // OnData calls while expectOff
	onData    func(r *pauseRecorder, c *CallbackConn, data []byte)
	closedAt  atomic.Int64 // bytes received when OnClose came
}

func newPauseRecorder() *pauseRecorder {
	return &pauseRecorder{conn: make(chan *CallbackConn, 1), closed: make(chan error, 1)}
}

func (r *pauseRecorder) handler(blocking bool) Handler {
	return HandlerFuncs{
		Blocking: blocking,
		Open:     func(c *CallbackConn) { r.conn <- c },
		Data: func(c *CallbackConn, data []byte) {
			if r.expectOff.Load() {
				r.strays.Add(1)
			}
			r.mu.Lock()
			r.got.Write(data)
			r.mu.Unlock()
			if r.onData != nil {
				r.onData(r, c, data)
			}
		},
		Close: func(c *CallbackConn, err error) {
			r.closedAt.Store(int64(r.n()))
			r.closed <- err
		},
	}
}

func (r *pauseRecorder) n() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got.Len()
}

func (r *pauseRecorder) bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]byte(nil), r.got.Bytes()...)
}

func pausePattern(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*7 + i>>11)
	}
	return p
}

func recvConn(t *testing.T, ch chan *CallbackConn) *CallbackConn {
	t.Helper()
	select {
	case c := <-ch:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no connection opened")
		return nil
	}
}

// TestCallbackPauseReadInOnData: OnData pauses its connection on its first
// call while the peer writes 1 MiB; no OnData comes while paused; a
// goroutine resumes it 200 ms later and every byte arrives, in order, the
// first OnData after the resume bringing what was received while paused
// (bounded by a stopped recv's overshoot).
func TestCallbackPauseReadInOnData(t *testing.T) {
	for _, tier := range pauseTiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			r := newPauseRecorder()
			var paused atomic.Bool
			pausedCh := make(chan struct{})
			var afterResume atomic.Int64 // len of the first OnData after resume
			afterResume.Store(-1)
			r.onData = func(r *pauseRecorder, c *CallbackConn, data []byte) {
				if !paused.Swap(true) {
					if err := c.PauseRead(); err != nil {
						t.Errorf("PauseRead: %v", err)
					}
					r.expectOff.Store(true)
					close(pausedCh)
					return
				}
				afterResume.CompareAndSwap(-1, int64(len(data)))
			}
			ln := serveCB(t, rt, r.handler(tier.blocking))
			peer, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer peer.Close()
			c := recvConn(t, r.conn)
			want := pausePattern(1 << 20)
			werr := make(chan error, 1)
			go func() { _, err := peer.Write(want); werr <- err }()
			select {
			case <-pausedCh:
			case <-time.After(10 * time.Second):
				t.Fatal("no OnData")
			}
			time.Sleep(200 * time.Millisecond)
			r.expectOff.Store(false)
			if n := r.strays.Load(); n > 0 {
				t.Errorf("%d OnData calls while paused", n)
			}
			if err := c.ResumeRead(); err != nil {
				t.Fatalf("ResumeRead: %v", err)
			}
			if !relWaitFor(20*time.Second, func() bool { return r.n() >= len(want) }) {
				t.Fatalf("got %d of %d bytes after resume", r.n(), len(want))
			}
			if err := <-werr; err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(r.bytes(), want) {
				t.Fatal("bytes out of order or corrupted")
			}
			// What a paused connection held: a stopped recv's overshoot
			// (a multishot arm's limit, a stream read, a worker's
			// backlog), not the peer's megabyte.
			if n := afterResume.Load(); tier.name == "uring" && n > 256<<10 {
				t.Errorf("first OnData after resume held %d bytes", n)
			}
		})
	}
}

// TestCallbackPauseReadFromGoroutine: a goroutine pauses a connection
// while its peer streams; once the pause has been taken (a loop
// iteration), no OnData comes for 200 ms; after ResumeRead every byte
// arrives in order.
func TestCallbackPauseReadFromGoroutine(t *testing.T) {
	for _, tier := range pauseTiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			r := newPauseRecorder()
			ln := serveCB(t, rt, r.handler(tier.blocking))
			peer, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer peer.Close()
			c := recvConn(t, r.conn)
			want := pausePattern(4 << 20)
			werr := make(chan error, 1)
			go func() { // 64 KiB every 10 ms: still sending while paused
				for p := want; len(p) > 0; p = p[min(len(p), 64<<10):] {
					if _, err := peer.Write(p[:min(len(p), 64<<10)]); err != nil {
						werr <- err
						return
					}
					time.Sleep(10 * time.Millisecond)
				}
				werr <- nil
			}()
			if !relWaitFor(10*time.Second, func() bool { return r.n() > 0 }) {
				t.Fatal("no OnData")
			}
			if err := c.PauseRead(); err != nil {
				t.Fatal(err)
			}
			if err := c.PauseRead(); err != nil { // idempotent
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond) // the loop takes the pause
			before := r.n()
			r.expectOff.Store(true)
			time.Sleep(200 * time.Millisecond)
			r.expectOff.Store(false)
			if n := r.strays.Load(); n > 0 || r.n() != before {
				t.Errorf("%d OnData calls (%d bytes) while paused", n, r.n()-before)
			}
			if before >= len(want) {
				t.Errorf("all bytes came before the pause: nothing checked")
			}
			if err := c.ResumeRead(); err != nil {
				t.Fatal(err)
			}
			if err := c.ResumeRead(); err != nil { // idempotent
				t.Fatal(err)
			}
			if !relWaitFor(20*time.Second, func() bool { return r.n() >= len(want) }) {
				t.Fatalf("got %d of %d bytes after resume", r.n(), len(want))
			}
			if err := <-werr; err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(r.bytes(), want) {
				t.Fatal("bytes out of order or corrupted")
			}
		})
	}
}

// TestCallbackPauseReadClose: a paused connection closes (Close from a
// goroutine) with OnClose, and PauseRead and ResumeRead then return
// net.ErrClosed.
func TestCallbackPauseReadClose(t *testing.T) {
	for _, tier := range pauseTiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			r := newPauseRecorder()
			r.onData = func(r *pauseRecorder, c *CallbackConn, data []byte) { c.PauseRead() }
			ln := serveCB(t, rt, r.handler(tier.blocking))
			peer, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer peer.Close()
			c := recvConn(t, r.conn)
			go peer.Write(pausePattern(1 << 20))
			if !relWaitFor(10*time.Second, func() bool { return r.n() > 0 }) {
				t.Fatal("no OnData")
			}
			time.Sleep(50 * time.Millisecond)
			c.Close()
			select {
			case err := <-r.closed:
				if err != nil {
					t.Errorf("OnClose: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("a paused connection did not close")
			}
			if err := c.PauseRead(); !errors.Is(err, net.ErrClosed) {
				t.Errorf("PauseRead after close: %v", err)
			}
			if err := c.ResumeRead(); !errors.Is(err, net.ErrClosed) {
				t.Errorf("ResumeRead after close: %v", err)
			}
		})
	}
}

// TestCallbackPauseReadAcrossFIN: the peer sends 256 KiB and shuts down
// its writing side while the connection is paused; OnClose(io.EOF) comes
// only after the resume, after every byte.
func TestCallbackPauseReadAcrossFIN(t *testing.T) {
	for _, tier := range pauseTiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			r := newPauseRecorder()
			var paused atomic.Bool
			r.onData = func(r *pauseRecorder, c *CallbackConn, data []byte) {
				if !paused.Swap(true) {
					c.PauseRead()
				}
			}
			ln := serveCB(t, rt, r.handler(tier.blocking))
			peer, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer peer.Close()
			c := recvConn(t, r.conn)
			want := pausePattern(256 << 10)
			if _, err := peer.Write(want); err != nil {
				t.Fatal(err)
			}
			peer.(*net.TCPConn).CloseWrite()
			time.Sleep(200 * time.Millisecond)
			select {
			case err := <-r.closed:
				t.Fatalf("OnClose(%v) while paused, after %d bytes", err, r.closedAt.Load())
			default:
			}
			if err := c.ResumeRead(); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-r.closed:
				if err != io.EOF {
					t.Errorf("OnClose: %v, want io.EOF", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no OnClose after resume")
			}
			if got := r.closedAt.Load(); got != int64(len(want)) {
				t.Errorf("OnClose after %d of %d bytes", got, len(want))
			}
			if !bytes.Equal(r.bytes(), want) {
				t.Fatal("bytes out of order or corrupted")
			}
		})
	}
}

// TestCallbackPauseReadWithBackpressure: an echo whose peer does not read
// makes the runtime pause reading on its own; the handler pauses too;
// when the peer then reads everything (the runtime's pause ends), no
// OnData comes until ResumeRead, and then the whole stream is echoed.
func TestCallbackPauseReadWithBackpressure(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	r := newPauseRecorder()
	r.onData = func(r *pauseRecorder, c *CallbackConn, data []byte) {
		if _, err := c.Write(data); err != nil {
			t.Errorf("echo: %v", err)
		}
	}
	ln := serveCB(t, rt, r.handler(false))
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	c := recvConn(t, r.conn)
	want := pausePattern(8 << 20)
	go peer.Write(want)
	// The peer does not read: the echo's queue passes its mark.
	if !relWaitFor(10*time.Second, func() bool { return c.OutboundBuffered() > 32<<10 }) {
		t.Fatal("the echo's output did not queue")
	}
	c.PauseRead()
	time.Sleep(50 * time.Millisecond)
	got := make([]byte, 0, len(want))
	buf := make([]byte, 64<<10)
	// Read what the echo sent (the runtime resumes its side) ...
	peer.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	for {
		n, err := peer.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			break
		}
	}
	before := r.n()
	r.expectOff.Store(true)
	time.Sleep(100 * time.Millisecond)
	r.expectOff.Store(false)
	if n := r.strays.Load(); n > 0 || r.n() != before {
		t.Fatalf("%d OnData calls while the handler paused", n)
	}
	// The runtime's pause ended with its queue; the handler's holds: the
	// recv stays stopped and what it kept stays bounded.
	var armed bool
	var kept int
	onLoop(c.l, func() { armed, kept = c.recvOp.armed, c.frame.fresh })
	if armed || kept > 256<<10 {
		t.Fatalf("handler paused, yet recv armed %v, %d bytes kept", armed, kept)
	}
	c.ResumeRead()
	peer.SetReadDeadline(time.Now().Add(20 * time.Second))
	for len(got) < len(want) {
		n, err := peer.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			t.Fatalf("after %d of %d bytes: %v", len(got), len(want), err)
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatal("echo out of order or corrupted")
	}
}
