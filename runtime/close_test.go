package uringrt

// Close leaves nothing: goroutines, descriptors, spinning loops.

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/uringrt/uringrt/runtime/experiment"
)

// TestCloseLeavesNothing: a runtime started and closed inside the test,
// with listeners, a Serve loop, connections open and a Read parked, leaves
// no goroutine and no descriptor behind.
func TestCloseLeavesNothing(t *testing.T) {
	for _, tier := range tiers {
		if tier.name == "nobatch" {
			continue
		}
		t.Run(tier.name, func(t *testing.T) {
			// Warm Go's own netpoller (its epoll fd lives for the process).
			if l, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
				l.Close()
			}
			opts := goleak.IgnoreCurrent()
			fds := countFDs(t)
			cfg := tier.cfg
			if cfg.Backend == BackendAuto {
				cfg.Backend = BackendUring
			}
			rt, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ln1, err := rt.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			acceptDone := make(chan struct{})
			go func() {
				defer close(acceptDone)
				for {
					c, err := ln1.Accept()
					if err != nil {
						return
					}
					go func() {
						defer c.Close()
						io.Copy(c, c)
					}()
				}
			}()
			ln2, err := rt.Listen("unix", t.TempDir()+"/cb.sock")
			if err != nil {
				t.Fatal(err)
			}
			serveDone := make(chan error, 1)
			go func() { serveDone <- rt.Serve(ln2, EchoHandler{}) }()
			var stdClients []net.Conn
			for i := 0; i < 4; i++ {
				echoOnce(t, rt, ln1.Addr().String(), "conn")  // opened and closed
				c, err := rt.Dial("tcp", ln1.Addr().String()) // left open
				if err != nil {
					t.Fatal(err)
				}
				c.Write([]byte("x"))
				io.ReadFull(c, make([]byte, 1))
				gc, err := net.Dial("unix", ln2.Addr().String()) // left open
				if err != nil {
					t.Fatal(err)
				}
				gc.SetDeadline(time.Now().Add(5 * time.Second))
				gc.Write([]byte("y"))
				if _, err := io.ReadFull(gc, make([]byte, 1)); err != nil {
					t.Fatal(err)
				}
				stdClients = append(stdClients, gc)
			}
			// A Read parked on a conn whose peer (Go's net, not closed by
			// rt.Close) stays silent: only Close can end it.
			gl, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer gl.Close()
			peer := make(chan net.Conn, 1)
			go func() {
				c, _ := gl.Accept()
				peer <- c
			}()
			parked := make(chan error, 1)
			pc, err := rt.Dial("tcp", gl.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			pcPeer := <-peer
			go func() {
				_, err := pc.Read(make([]byte, 1))
				parked <- err
			}()
			time.Sleep(20 * time.Millisecond)
			if err := rt.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if err := <-parked; !errors.Is(err, net.ErrClosed) {
				t.Errorf("Read parked across Close: %v, want net.ErrClosed", err)
			}
			for _, ch := range []<-chan struct{}{acceptDone} {
				select {
				case <-ch:
				case <-time.After(5 * time.Second):
					t.Fatal("Accept did not return after Close")
				}
			}
			select {
			case err := <-serveDone:
				if err != nil {
					t.Errorf("Serve: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Serve did not return after Close")
			}
			// The peers see the close.
			for _, gc := range stdClients {
				if _, err := gc.Read(make([]byte, 1)); err == nil {
					t.Error("callback conn still open after Close")
				}
				gc.Close()
			}
			gl.Close()
			if pcPeer != nil {
				pcPeer.Close()
			}
			goleak.VerifyNone(t, opts)
			waitFDs(t, fds)
		})
	}
}

// TestIdleReadableNoSpin: a socket that is readable (unread bytes, a
// peer's FIN, a pending connection) but that nobody reads must not keep the
// loop busy: with single-shot polls (DisableMultishot) re-arming the POLLIN
// at once fired again at once, a busy loop burning a core.
//
// What it counts is the loops' ring activity (io_uring_enter calls and
// CQEs reaped) over 300 ms of such idleness: a few when idle, thousands
// when a poll keeps firing. It used to bound the process's CPU time
// instead (60 ms), which a stress run's race-enabled process exceeded with
// no loop busy (64 ms: GC and goroutines of earlier tests).
func TestIdleReadableNoSpin(t *testing.T) {
	for _, tier := range tiers {
		if tier.cfg.Backend == BackendStd {
			continue
		}
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			c, s := pair(t, rt, "tcp")
			c2, s2 := pair(t, rt, "tcp")
			ln := listenTCP(t, rt)
			// s was read once (its POLLIN consumed), then gets bytes nobody reads.
			c.Write([]byte("a"))
			s.Read(make([]byte, 1))
			c.Write([]byte("unread"))
			c2.Write([]byte("b"))
			s2.Read(make([]byte, 1))
			c2.Close() // s2: a FIN nobody reads
			go func() {
				if ac, err := ln.Accept(); err == nil { // one accept, then none
					ac.Close()
				}
			}()
			for i := 0; i < 2; i++ { // the second waits in the backlog
				gc, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				defer gc.Close()
			}
			time.Sleep(50 * time.Millisecond)
			activity := func() (n uint64) {
				for _, l := range rt.loops {
					onLoop(l, func() { s := l.ring.Stats(); n += s.Enters + s.CQEsReaped })
				}
				return n
			}
			a0, cpu0 := activity(), cpuTime()
			time.Sleep(300 * time.Millisecond)
			a, cpu := activity()-a0, cpuTime()-cpu0
			t.Logf("%d enters and CQEs, %v process CPU in 300ms idle", a, cpu)
			if a > 200 {
				t.Fatalf("%d io_uring_enter calls and CQEs in 300ms with readable sockets nobody reads: the loop spins", a)
			}
			// And they are still served when read.
			s.SetReadDeadline(time.Now().Add(5 * time.Second))
			if b, err := io.ReadAll(io.LimitReader(s, 6)); err != nil || string(b) != "unread" {
				t.Fatalf("read after idle: %q, %v", b, err)
			}
			s2.SetReadDeadline(time.Now().Add(5 * time.Second))
			if n, err := s2.Read(make([]byte, 1)); n != 0 || err != io.EOF {
				t.Fatalf("read of FIN after idle: %d, %v", n, err)
			}
		})
	}
}

// TestCloseRacesRuntimeClose: closing a listener or connections while, or
// after, the runtime closes returns promptly, and when Runtime.Close
// returns every descriptor of the runtime is closed. (A Conn.Close racing
// Runtime.Close used to post its close to a loop that had already stopped
// and hang forever; so did closing a Serve listener after Runtime.Close.)
func TestCloseRacesRuntimeClose(t *testing.T) {
	for _, tier := range tiers {
		if tier.cfg.Backend == BackendStd || tier.name == "nobatch" {
			continue
		}
		t.Run(tier.name, func(t *testing.T) {
			opts := goleak.IgnoreCurrent()
			fds := countFDs(t)
			cfg := tier.cfg
			cfg.Backend = BackendUring
			rt, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ln, err := rt.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go rt.Serve(ln, EchoHandler{})
			var conns []net.Conn
			for i := 0; i < 64; i++ {
				c, err := rt.Dial("tcp", ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				conns = append(conns, c)
			}
			var wg sync.WaitGroup
			start := make(chan struct{})
			for _, c := range conns {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					c.Close()
				}()
			}
			close(start)
			rt.Close()
			if n := countFDs(t); n > fds {
				t.Errorf("%d descriptors open when Runtime.Close returned, %d before: %s", n, fds, listFDs())
			}
			done := make(chan struct{})
			go func() {
				wg.Wait()
				ln.Close() // after Runtime.Close
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Conn.Close or Listener.Close hung across Runtime.Close")
			}
			goleak.VerifyNone(t, opts)
			waitFDs(t, fds)
		})
	}
}

// TestArmedExpiredOpWakesAtOnce: an op whose deadline passed between the
// goroutine's check and the loop's arm completes inside the loop's request
// handling; its goroutine must be woken before the loop sleeps. Before,
// the wake waited for the loop's next wake-up (its 1 s idle wait: a Write
// with a 1 ms deadline under experiment.PollRing took up to a second, and nettest's
// RacyWrite timed out under load); with that wait made an hour here, the
// op was never completed.
func TestArmedExpiredOpWakesAtOnce(t *testing.T) {
	old := loopIdleWait
	loopIdleWait = time.Hour
	t.Cleanup(func() { loopIdleWait = old })
	for _, pol := range []experiment.Pollable{experiment.PollRing, experiment.PollAsync} {
		rt := newRT(t, Config{Loops: 1, Switches: experiment.Switches{Pollable: pol}})
		c, _ := pair(t, rt, "tcp")
		fd := c.(*Conn).fd
		// The arm must be handled while the loop is awake (a request
		// posted to a sleeping loop is handled right after its wait, in
		// the same iteration as the wakes), so hold the loop busy while
		// posting it.
		held, release := make(chan struct{}), make(chan struct{})
		fd.l.post(request{kind: reqFunc, fn: func() { close(held); <-release }})
		<-held
		fd.wdl.expired.Store(true) // as if the deadline passed just after Write checked it
		fd.ringOps().wop.buf = []byte("x")
		fd.l.post(request{kind: reqArm, op: &fd.ringOps().wop})
		close(release)
		select {
		case <-fd.ringOps().wop.done:
			if fd.ringOps().wop.res != -int32(syscall.ECANCELED) {
				t.Errorf("%v: res %d, want -ECANCELED", pol, fd.ringOps().wop.res)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%v: the expired op's goroutine was not woken", pol)
		}
		fd.ringOps().wop.buf = nil
		fd.wdl.expired.Store(false)
	}
}

// TestConnCloseFINWithoutLoop: a TCP connection's Close with nothing unread
// shuts the socket down itself (shutClose), so the peer reads EOF even
// while the connection's loop is busy, and a peer that writes on is reset,
// as with Go's net. Before, Close waited for the loop to cancel the poll
// and close(2): with the loop held this timed out.
func TestConnCloseFINWithoutLoop(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	c, s := goClientPair(t, rt) // the peer must not need the held loop
	if _, err := s.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	l := rt.loops[0]
	held, release := make(chan struct{}), make(chan struct{})
	l.post(request{kind: reqFunc, fn: func() {
		close(held)
		select {
		case <-release:
		case <-time.After(10 * time.Second):
		}
	}})
	<-held
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		close(release)
		t.Fatal("Close waited for the busy loop")
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, 8)
	if n, err := c.Read(b); n != 1 || err != nil {
		close(release)
		t.Fatalf("first read: %d, %v; want the byte", n, err)
	}
	n, err := c.Read(b)
	close(release)
	if n != 0 || err != io.EOF {
		t.Fatalf("read after Close with the loop busy: %d, %v; want EOF", n, err)
	}
	if err := s.Close(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("second Close: %v, want net.ErrClosed", err)
	}
	// The peer writes on: the closed end resets it, as Go's net's does.
	if _, err := c.Write([]byte("more")); err != nil {
		t.Fatalf("first write after the peer's Close: %v (it should succeed, the reset comes after)", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := c.Write([]byte("more"))
		if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("writes after the peer's Close still succeed (last: %v): no reset", err)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestConnCloseUnreadResets: Close with data unread resets the peer (as
// Go's net's close(2) does), and so does SO_LINGER 0: neither takes
// shutClose's FIN.
func TestConnCloseUnreadResets(t *testing.T) {
	for _, linger := range []bool{false, true} {
		t.Run(map[bool]string{false: "unread", true: "linger0"}[linger], func(t *testing.T) {
			rt := newRT(t, Config{Loops: 1})
			c, s := goClientPair(t, rt)
			if linger {
				if err := s.(*Conn).SetLinger(0); err != nil {
					t.Fatal(err)
				}
			} else {
				if _, err := c.Write([]byte("unread")); err != nil {
					t.Fatal(err)
				}
				waitAcked(t, c) // in s's receive queue
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Read(make([]byte, 8)); !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("peer's read after Close: %v, want ECONNRESET", err)
			}
		})
	}
}

// waitAcked waits until the peer's kernel has acknowledged everything c
// (Go's net) sent (SIOCOUTQ 0): the bytes sit in the peer's receive queue.
func waitAcked(t *testing.T, c net.Conn) {
	t.Helper()
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		outq := -1
		rc.Control(func(fd uintptr) { outq, _ = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ) })
		if outq == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes still unacknowledged after 10 s", outq)
		}
	}
}

// TestConnCloseLingerFromControl: SO_LINGER 0 set by a Dialer's Control
// hook, not through SetLinger, still makes Close reset the peer (Go's net
// does): Close's shutdown fast path checks the option itself.
func TestConnCloseLingerFromControl(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	d := Dialer{Runtime: rt, Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) {
			unix.SetsockoptLinger(int(fd), unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
		})
	}}
	c, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	peer, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	peer.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := peer.Read(make([]byte, 8)); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("peer's read after Close with SO_LINGER 0: %v, want ECONNRESET", err)
	}
}

// TestConnCloseLingerFromListener: SO_LINGER 0 on the listening socket,
// set by its ListenConfig's Control hook or later through the listener's
// SyscallConn, is inherited by every accepted socket (Linux copies it), so
// an accepted conn's Close resets the peer as Go's net's does. Close skips
// asking SO_LINGER for sockets known plain at Listen; these two are not.
func TestConnCloseLingerFromListener(t *testing.T) {
	setLinger0 := func(fd uintptr) {
		unix.SetsockoptLinger(int(fd), unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
	}
	for _, how := range []string{"control", "syscallconn"} {
		t.Run(how, func(t *testing.T) {
			rt := newRT(t, Config{Loops: 1})
			lc := ListenConfig{Runtime: rt}
			if how == "control" {
				lc.Control = func(_, _ string, rc syscall.RawConn) error { return rc.Control(setLinger0) }
			}
			ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			if how == "syscallconn" {
				rc, err := ln.(syscall.Conn).SyscallConn()
				if err != nil {
					t.Fatal(err)
				}
				if err := rc.Control(setLinger0); err != nil {
					t.Fatal(err)
				}
			}
			peer, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer peer.Close()
			c, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			peer.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := peer.Read(make([]byte, 8)); !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("peer's read after Close with the listener's SO_LINGER 0: %v, want ECONNRESET", err)
			}
		})
	}
}
