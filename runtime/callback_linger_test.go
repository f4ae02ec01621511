package uringrt

import (
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// lingerPeer is a callback server whose connection the test closes while
// the client's bytes sit unread in the server's socket (the handler paused
// reading at open), and the client of that connection.
type lingerPeer struct {
	rt     *Runtime
	cc     *CallbackConn
	client net.Conn
	closes chan error
	calls  atomic.Int32
}

// newLingerPeer serves one connection whose handler pauses reading, dials
// it and sends ping, which the server leaves unread.
func newLingerPeer(t *testing.T, cfg Config, ping []byte) *lingerPeer {
	return newLingerPeerBufs(t, cfg, ping, false)
}

// newLingerPeerBufs is newLingerPeer; with stall, the client's receive
// buffer is small (4 KiB) and the server's send buffer large, so that
// output the client does not read stays in the server's socket,
// unacknowledged.
func newLingerPeerBufs(t *testing.T, cfg Config, ping []byte, stall bool) *lingerPeer {
	t.Helper()
	if cfg.Loops == 0 {
		cfg.Loops = 1
	}
	p := &lingerPeer{rt: newRT(t, cfg), closes: make(chan error, 2)}
	opened := make(chan *CallbackConn, 1)
	addr := serveCB(t, p.rt, HandlerFuncs{
		Open:  func(c *CallbackConn) { c.PauseRead(); opened <- c },
		Data:  func(c *CallbackConn, d []byte) { t.Errorf("OnData of %d bytes while paused", len(d)) },
		Close: func(c *CallbackConn, err error) { p.calls.Add(1); p.closes <- err },
	}).Addr().String()
	d := net.Dialer{Timeout: 5 * time.Second}
	if stall {
		d.Control = func(_, _ string, rc syscall.RawConn) error {
			return rc.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<10) })
		}
	}
	client, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	p.client = client
	p.client.SetDeadline(time.Now().Add(20 * time.Second))
	p.cc = <-opened
	if stall {
		unix.SetsockoptInt(p.cc.fd.fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 1<<20)
	}
	if len(ping) > 0 {
		if _, err := p.client.Write(ping); err != nil {
			t.Fatal(err)
		}
		if !relWaitFor(5*time.Second, func() bool {
			q, err := unix.IoctlGetInt(p.cc.fd.fd, unix.SIOCINQ)
			return err == nil && q == len(ping)
		}) {
			t.Fatal("the ping did not reach the server's socket")
		}
	}
	return p
}

// readAll reads the client's side to its end: the bytes, and the error
// that ended them (io.EOF for the server's FIN).
func (p *lingerPeer) readAll() ([]byte, error) {
	var got []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := p.client.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			return got, err
		}
	}
}

// onClose waits for OnClose and returns its error and when it came.
func (p *lingerPeer) onClose(t *testing.T, within time.Duration) (error, time.Time) {
	t.Helper()
	select {
	case err := <-p.closes:
		return err, time.Now()
	case <-time.After(within):
		t.Fatalf("no OnClose within %v", within)
		return nil, time.Time{}
	}
}

// closedOnce checks that OnClose ran once and the server's descriptor was
// closed, and returns the loop's counters.
func (p *lingerPeer) closedOnce(t *testing.T) LoopStats {
	t.Helper()
	if !relWaitFor(5*time.Second, func() bool { return p.cc.fd.final.Load() }) {
		t.Fatal("the server's descriptor was not closed")
	}
	time.Sleep(50 * time.Millisecond)
	if c := p.calls.Load(); c != 1 {
		t.Fatalf("OnClose called %d times, want once", c)
	}
	st := p.rt.Stats().Loops[0]
	if open := st.Accepted - st.Closed; open != 0 {
		t.Fatalf("Stats: %d connections open after the close", open)
	}
	return st
}

// TestCallbackLingerPeerStopsReading: a Close while the peer's bytes sit
// unread and the peer reads none of the output: the close shuts the
// sending side down and waits; with no output taken for lingerMax it
// closes (OnClose once, nil; the descriptor closed; the linger counted as
// cut), and the kernel still delivers the output and the FIN to a peer
// that reads later.
func TestCallbackLingerPeerStopsReading(t *testing.T) {
	p := newLingerPeerBufs(t, Config{}, []byte("ping"), true)
	out := make([]byte, 128<<10)
	for i := range out {
		out[i] = byte(i)
	}
	start := time.Now()
	p.cc.AsyncWrite(out)
	p.cc.AsyncClose()
	cerr, closedAt := p.onClose(t, 10*time.Second)
	if cerr != nil {
		t.Fatalf("OnClose: %v, want nil", cerr)
	}
	if d := closedAt.Sub(start); d < lingerMax*8/10 {
		t.Fatalf("OnClose %v after the Close: the close did not wait for the peer", d)
	}
	st := p.closedOnce(t)
	if st.Lingers != 1 || st.LingersCut != 1 {
		t.Fatalf("Lingers %d, LingersCut %d; want 1, 1", st.Lingers, st.LingersCut)
	}
	got, err := p.readAll()
	if err != io.EOF || len(got) != len(out) {
		t.Fatalf("the peer read %d of %d bytes, then %v; want all, then io.EOF", len(got), len(out), err)
	}
}

// TestCallbackLingerPeerReadsNeverCloses: a peer that reads the output
// and the FIN (io.EOF, not a reset) but never closes ends the linger once
// it acknowledged them, well before lingerMax.
func TestCallbackLingerPeerReadsNeverCloses(t *testing.T) {
	p := newLingerPeer(t, Config{}, []byte("ping"))
	out := make([]byte, 100<<10)
	p.cc.AsyncWrite(out)
	p.cc.AsyncClose()
	got, err := p.readAll()
	eofAt := time.Now()
	if err != io.EOF || len(got) != len(out) {
		t.Fatalf("the peer read %d of %d bytes, then %v; want all, then io.EOF", len(got), len(out), err)
	}
	cerr, closedAt := p.onClose(t, 10*time.Second)
	if cerr != nil {
		t.Fatalf("OnClose: %v, want nil", cerr)
	}
	st := p.closedOnce(t)
	if st.Lingers != 1 || st.LingersCut != 0 {
		t.Fatalf("Lingers %d, LingersCut %d; want 1, 0 (OnClose %v after the peer's EOF)", st.Lingers, st.LingersCut, closedAt.Sub(eofAt))
	}
}

// TestCallbackLingerPeerCloses: a peer that closes once it read the FIN
// ends the linger at once, not at the bound.
func TestCallbackLingerPeerCloses(t *testing.T) {
	p := newLingerPeer(t, Config{}, []byte("ping"))
	out := make([]byte, 1<<20)
	p.cc.AsyncWrite(out)
	p.cc.AsyncClose()
	got, err := p.readAll()
	if err != io.EOF || len(got) != len(out) {
		t.Fatalf("the peer read %d of %d bytes, then %v; want all, then io.EOF", len(got), len(out), err)
	}
	p.client.Close()
	closed := time.Now()
	cerr, at := p.onClose(t, 10*time.Second)
	if cerr != nil {
		t.Fatalf("OnClose: %v, want nil", cerr)
	}
	st := p.closedOnce(t)
	if st.Lingers != 1 || st.LingersCut != 0 {
		t.Fatalf("Lingers %d, LingersCut %d; want 1, 0 (the peer's FIN ended it, %v after it)", st.Lingers, st.LingersCut, at.Sub(closed))
	}
}

// TestCallbackLingerInputOnly: a Close with nothing to send while the
// peer's bytes sit unread: the peer reads io.EOF, not a reset (close(2)
// with unread input resets), and its FIN ends the linger.
func TestCallbackLingerInputOnly(t *testing.T) {
	p := newLingerPeer(t, Config{}, []byte("ping"))
	p.cc.AsyncClose()
	if got, err := p.readAll(); err != io.EOF || len(got) != 0 {
		t.Fatalf("the peer read %d bytes, then %v; want io.EOF", len(got), err)
	}
	p.client.Close()
	if cerr, _ := p.onClose(t, 10*time.Second); cerr != nil {
		t.Fatalf("OnClose: %v, want nil", cerr)
	}
	if st := p.closedOnce(t); st.Lingers != 1 || st.LingersCut != 0 {
		t.Fatalf("Lingers %d, LingersCut %d; want 1, 0", st.Lingers, st.LingersCut)
	}
}

// TestCallbackLingerPeerSendsOn: a peer that sends on after the Close has
// its bytes dropped (not delivered, not counted as read) while it reads
// the output to its end, and then closes: every byte of the output
// arrives, then io.EOF.
func TestCallbackLingerPeerSendsOn(t *testing.T) {
	p := newLingerPeer(t, Config{MaxWriteBuffer: 8 << 20}, []byte("ping"))
	read0 := p.rt.Stats().Loops[0].ReadBytes
	stop := make(chan struct{})
	sent := make(chan int64, 1)
	go func() {
		var n int64
		defer func() { sent <- n }()
		b := make([]byte, 512)
		for {
			select {
			case <-stop:
				return
			default:
			}
			m, err := p.client.Write(b)
			n += int64(m)
			if err != nil {
				return
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	out := make([]byte, 4<<20)
	for i := range out {
		out[i] = byte(i * 7)
	}
	p.cc.AsyncWrite(out)
	p.cc.AsyncClose()
	got, err := p.readAll()
	close(stop)
	n := <-sent
	if err != io.EOF || len(got) != len(out) {
		t.Fatalf("the peer read %d of %d bytes, then %v; want all, then io.EOF", len(got), len(out), err)
	}
	for i := range got {
		if got[i] != out[i] {
			t.Fatalf("byte %d differs", i)
		}
	}
	p.client.Close()
	if cerr, _ := p.onClose(t, 10*time.Second); cerr != nil {
		t.Fatalf("OnClose: %v, want nil", cerr)
	}
	st := p.closedOnce(t)
	if st.Lingers != 1 || st.ReadBytes != read0 {
		t.Fatalf("Lingers %d, ReadBytes %d -> %d; want 1 linger and no bytes read (the peer sent %d)", st.Lingers, read0, st.ReadBytes, n)
	}
}

// TestCallbackLingerUploadBounded: a peer that uploads without end and
// reads none of the output has its bytes dropped (up to lingerDiscardMax,
// none delivered) until lingerMax ends the linger.
func TestCallbackLingerUploadBounded(t *testing.T) {
	p := newLingerPeerBufs(t, Config{}, []byte("ping"), true)
	read0 := p.rt.Stats().Loops[0].ReadBytes
	go func() {
		b := make([]byte, 64<<10)
		for {
			if _, err := p.client.Write(b); err != nil {
				return
			}
		}
	}()
	p.cc.AsyncWrite(make([]byte, 128<<10)) // not read: the linger lasts until lingerMax
	p.cc.AsyncClose()
	if cerr, _ := p.onClose(t, 10*time.Second); cerr != nil {
		t.Fatalf("OnClose: %v, want nil", cerr)
	}
	if st := p.closedOnce(t); st.Lingers != 1 || st.LingersCut != 1 || st.ReadBytes != read0 {
		t.Fatalf("Lingers %d, LingersCut %d, ReadBytes %d -> %d; want 1, 1, unchanged", st.Lingers, st.LingersCut, read0, st.ReadBytes)
	}
}

// TestCallbackLingerCloseTimeout: the linger ends no later than
// Config.CloseTimeout allows the close.
func TestCallbackLingerCloseTimeout(t *testing.T) {
	const ct = 100 * time.Millisecond
	p := newLingerPeerBufs(t, Config{CloseTimeout: ct}, []byte("ping"), true)
	start := time.Now()
	p.cc.AsyncWrite(make([]byte, 128<<10))
	p.cc.AsyncClose()
	cerr, at := p.onClose(t, 10*time.Second)
	if cerr != nil {
		t.Fatalf("OnClose: %v, want nil", cerr)
	}
	if d := at.Sub(start); d >= lingerMax*8/10 {
		t.Fatalf("OnClose %v after the Close, with CloseTimeout %v", d, ct)
	}
	if st := p.closedOnce(t); st.Lingers != 1 || st.LingersCut != 1 || st.CloseTimeouts != 0 {
		t.Fatalf("Lingers %d, LingersCut %d, CloseTimeouts %d; want 1, 1, 0", st.Lingers, st.LingersCut, st.CloseTimeouts)
	}
}

// TestCallbackLingerRuntimeClose: the runtime's Close or Shutdown while a
// close lingers for a peer that neither reads nor closes: Close ends the linger at
// once; Shutdown waits for it (lingerMax, the peer taking nothing), or
// closes at its context's end.
// OnClose runs once, with nil, and the descriptor is closed.
func TestCallbackLingerRuntimeClose(t *testing.T) {
	for _, tc := range []struct {
		name     string
		stop     func(rt *Runtime) error
		min, max time.Duration
		want     error
	}{
		{"Close", func(rt *Runtime) error { return rt.Close() }, 0, lingerMax / 2, nil},
		{"ShutdownCtx", func(rt *Runtime) error {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			return rt.Shutdown(ctx)
		}, 0, lingerMax / 2, context.DeadlineExceeded},
		{"Shutdown", func(rt *Runtime) error { return rt.Shutdown(context.Background()) }, lingerMax / 4, 5 * time.Second, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newLingerPeerBufs(t, Config{}, []byte("ping"), true)
			p.cc.AsyncWrite(make([]byte, 128<<10))
			p.cc.AsyncClose()
			if !relWaitFor(5*time.Second, func() bool { return p.rt.Stats().Loops[0].Lingers == 1 }) {
				t.Fatal("the close did not linger")
			}
			start := time.Now()
			err := tc.stop(p.rt)
			d := time.Since(start)
			if !errors.Is(err, tc.want) && err != tc.want {
				t.Fatalf("%s: %v, want %v", tc.name, err, tc.want)
			}
			if d < tc.min || d > tc.max {
				t.Fatalf("%s took %v, want %v to %v", tc.name, d, tc.min, tc.max)
			}
			if cerr, _ := p.onClose(t, 5*time.Second); cerr != nil {
				t.Fatalf("OnClose: %v, want nil", cerr)
			}
			if !p.cc.fd.final.Load() {
				t.Fatal("the server's descriptor is open after the runtime closed")
			}
			time.Sleep(50 * time.Millisecond)
			if c := p.calls.Load(); c != 1 {
				t.Fatalf("OnClose called %d times", c)
			}
		})
	}
}

// TestCallbackLingerNotWhenDone: a Close whose output the peer has
// acknowledged, with nothing unread, closes at once (no linger): what the
// peer sends afterwards can reset only a socket whose bytes it already has.
func TestCallbackLingerNotWhenDone(t *testing.T) {
	p := newLingerPeer(t, Config{}, nil)
	p.cc.AsyncWrite([]byte("reply"))
	buf := make([]byte, 5)
	if _, err := io.ReadFull(p.client, buf); err != nil {
		t.Fatal(err)
	}
	if !relWaitFor(5*time.Second, func() bool {
		q, err := unix.IoctlGetInt(p.cc.fd.fd, unix.SIOCOUTQ)
		return err == nil && q == 0
	}) {
		t.Fatal("the reply was not acknowledged")
	}
	p.cc.AsyncClose()
	if cerr, _ := p.onClose(t, 5*time.Second); cerr != nil {
		t.Fatalf("OnClose: %v, want nil", cerr)
	}
	if n, err := p.client.Read(buf); err != io.EOF {
		t.Fatalf("the peer read %d bytes, then %v; want io.EOF", n, err)
	}
	if st := p.closedOnce(t); st.Lingers != 0 {
		t.Fatalf("Lingers %d, want 0", st.Lingers)
	}
}

// TestCallbackLingerNotAfterPeerFIN: a Close whose socket holds only the
// peer's FIN unread (and no output unacknowledged) closes at once: close(2)
// answers a FIN left unread with a FIN of its own, not a reset.
func TestCallbackLingerNotAfterPeerFIN(t *testing.T) {
	p := newLingerPeer(t, Config{}, nil)
	p.client.(*net.TCPConn).CloseWrite()
	if !relWaitFor(5*time.Second, func() bool { in, _ := sockQueues(p.cc.fd.fd); return in }) {
		t.Fatal("the peer's FIN did not reach the server's socket")
	}
	p.cc.AsyncClose()
	if cerr, _ := p.onClose(t, 5*time.Second); cerr != nil {
		t.Fatalf("OnClose: %v, want nil", cerr)
	}
	if n, err := p.client.Read(make([]byte, 8)); err != io.EOF {
		t.Fatalf("the peer read %d bytes, then %v; want io.EOF", n, err)
	}
	if st := p.closedOnce(t); st.Lingers != 0 {
		t.Fatalf("Lingers %d, want 0", st.Lingers)
	}
}

// TestLingerKernelRSTKeepsAcked checks the kernel behaviour a close that
// does not linger relies on: once the peer acknowledged the output, a reset
// (the close of a socket with input unread, or a closed socket's answer
// to the peer's later data) leaves what the peer's socket received whole;
// and that a reset while output is unacknowledged is the loss a linger
// prevents. Plain sockets of Go's net on both sides.
func TestLingerKernelRSTKeepsAcked(t *testing.T) {
	for _, tc := range []struct {
		name     string
		size     int  // written by the server, not read by the client until the end
		finFirst bool // the server closes with nothing unread, then the client sends; else the client sends first
		whole    bool
	}{
		{"acked/reset-at-close", 60000, false, true},
		{"acked/reset-after-fin", 60000, true, true},
		{"unacked/reset-at-close", 4 << 20, false, false},
		{"unacked/reset-after-fin", 4 << 20, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.(*net.TCPConn).SetReadBuffer(64 << 10) // 60000 bytes fit, 4 MiB does not
			s, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(10 * time.Second))
			go s.Write(make([]byte, tc.size))
			time.Sleep(100 * time.Millisecond)
			if tc.finFirst {
				s.Close()
				time.Sleep(20 * time.Millisecond)
				c.Write([]byte("ping"))
			} else {
				c.Write([]byte("ping"))
				time.Sleep(20 * time.Millisecond)
				s.Close()
			}
			time.Sleep(50 * time.Millisecond)
			n, err := io.Copy(io.Discard, c)
			if whole := n == int64(tc.size); whole != tc.whole {
				t.Fatalf("the client read %d of %d bytes, then %v", n, tc.size, err)
			}
		})
	}
}

// BenchmarkLingerProbe: what a graceful close pays to learn whether it
// must linger, on a connected loopback TCP socket with both queues empty:
// one getsockopt(SO_MEMINFO) (sockQueues) against SIOCINQ and SIOCOUTQ.
func BenchmarkLingerProbe(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	rc, _ := s.(*net.TCPConn).SyscallConn()
	var fd int
	rc.Control(func(f uintptr) { fd = int(f) })
	b.Run("meminfo", func(b *testing.B) {
		for b.Loop() {
			if in, out := sockQueues(fd); in || out {
				b.Fatal("queues not empty")
			}
		}
	})
	b.Run("ioctls", func(b *testing.B) {
		for b.Loop() {
			unix.IoctlGetInt(fd, unix.SIOCINQ)
			unix.IoctlGetInt(fd, unix.SIOCOUTQ)
		}
	})
}
