package uringrt

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/uringrt/uringrt/runtime/experiment"
	"golang.org/x/sys/unix"
)

// TestNetpollReadiness: with experiment.Switches.NetpollReadiness a
// net.Conn reader parked in Go's netpoller wakes for data, for its
// deadline, for a deadline moved after it passed (net/http's abort of
// its background read, then the next request), for Close and for the
// peer's FIN right after the last bytes; Accept honours its deadline; and
// a socket the ring never saw is closed by Close itself.
func TestNetpollReadiness(t *testing.T) {
	rt := newRT(t, Config{Loops: 1, Switches: experiment.Switches{NetpollReadiness: true}})
	c, s := pair(t, rt, "tcp")
	sc := s.(*Conn)
	if !sc.fd.goPollMode() {
		t.Fatal("accepted connection not in Go's netpoller")
	}
	b := make([]byte, 16)

	// A deadline in the past wakes a parked reader; cleared, the next
	// read waits for data again instead of timing out.
	go func() {
		time.Sleep(50 * time.Millisecond)
		s.SetReadDeadline(time.Unix(1, 0))
	}()
	if _, err := s.Read(b); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read with its deadline set in the past: %v", err)
	}
	s.SetReadDeadline(time.Time{})
	go func() {
		time.Sleep(50 * time.Millisecond)
		c.Write([]byte("ping"))
	}()
	if n, err := s.Read(b); err != nil || string(b[:n]) != "ping" {
		t.Fatalf("read after the deadline was cleared: %q, %v", b[:n], err)
	}

	// A deadline that passes on its own.
	s.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
	if _, err := s.Read(b); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past its deadline: %v", err)
	}
	s.SetReadDeadline(time.Time{})

	// Bytes and the FIN together, after a short read.
	c.Write([]byte("last"))
	time.Sleep(20 * time.Millisecond)
	c.Close()
	got, err := io.ReadAll(s)
	if err != nil || string(got) != "last" {
		t.Fatalf("ReadAll after the peer's last bytes and FIN: %q, %v", got, err)
	}

	// Close wakes a parked reader, and closes the descriptor itself.
	c2, s2 := pair(t, rt, "tcp")
	defer c2.Close()
	done := make(chan error, 1)
	go func() {
		_, err := s2.Read(b)
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	s2.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("read interrupted by Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not wake the parked reader")
	}
	select {
	case <-s2.(*Conn).fd.closed:
	default:
		t.Fatal("Close returned with the descriptor still open")
	}

	// Accept's deadline.
	ln, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if ln.(*listener).fd.gp.Load() == 0 {
		t.Fatal("listener not in Go's netpoller")
	}
	ln.(*listener).SetDeadline(time.Now().Add(30 * time.Millisecond))
	if _, err := ln.Accept(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Accept past its deadline: %v", err)
	}
}

// TestReadinessDefault: net.Conn readers and Accept wait in Go's netpoller
// by default from GOMAXPROCS 2 and on their loop's POLLIN with GOMAXPROCS
// 1 or LockedLoops; experiment.Switches.NetpollReadiness chooses the
// netpoller whatever GOMAXPROCS is, and LoopReadiness the loop, winning
// over NetpollReadiness.
func TestReadinessDefault(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, tc := range []struct {
		name    string
		procs   int
		sw      experiment.Switches
		locked  bool
		netpoll bool
	}{
		{"default-2", 2, experiment.Switches{}, false, true},
		{"default-1", 1, experiment.Switches{}, false, false},
		{"netpoll-1", 1, experiment.Switches{NetpollReadiness: true}, false, true},
		{"loop-2", 2, experiment.Switches{LoopReadiness: true}, false, false},
		{"both-2", 2, experiment.Switches{NetpollReadiness: true, LoopReadiness: true}, false, false},
		{"ring-2", 2, experiment.Switches{Pollable: experiment.PollRing}, false, false},
		{"locked-2", 2, experiment.Switches{}, true, false},
		{"locked-netpoll-2", 2, experiment.Switches{NetpollReadiness: true}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runtime.GOMAXPROCS(tc.procs)
			rt := newRT(t, Config{LockedLoops: tc.locked, Switches: tc.sw})
			c, s := pair(t, rt, "tcp")
			if got := s.(*Conn).fd.goPollMode(); got != tc.netpoll {
				t.Errorf("accepted connection in Go's netpoller: %v, want %v", got, tc.netpoll)
			}
			if got := c.(*Conn).fd.goPollMode(); got != tc.netpoll {
				t.Errorf("dialed connection in Go's netpoller: %v, want %v", got, tc.netpoll)
			}
			ln, err := rt.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			if got := ln.(*listener).fd.gp.Load() != 0; got != tc.netpoll {
				t.Errorf("listener in Go's netpoller: %v, want %v", got, tc.netpoll)
			}
			// A reader that waits (for bytes written after it parked)
			// wakes on either path.
			go func() {
				time.Sleep(20 * time.Millisecond)
				c.Write([]byte("ping"))
			}()
			s.SetReadDeadline(time.Now().Add(10 * time.Second))
			b := make([]byte, 8)
			if n, err := s.Read(b); err != nil || string(b[:n]) != "ping" {
				t.Fatalf("read: %q, %v", b[:n], err)
			}
		})
	}
}

// epollHas reports whether fd is registered in any epoll instance of this
// process (Go's netpoller's among them), from /proc/self/fdinfo.
func epollHas(t *testing.T, fd int) bool {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("tfd: %8d ", fd)
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err != nil || l != "anon_inode:[eventpoll]" {
			continue
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err != nil {
			continue
		}
		if strings.Contains(string(info), want) {
			return true
		}
	}
	return false
}

// TestNetpollLazyRegistration: a net.Conn whose readers wait in Go's
// netpoller is registered there (epoll_ctl ADD) only when a read first has
// to wait: reads that find their bytes, writes and Close never register it
// (no ADD, no DEL), and bytes that come between that read's EAGAIN and the
// registration still wake it.
func TestNetpollLazyRegistration(t *testing.T) {
	rt := newRT(t, Config{Loops: 1, Switches: experiment.Switches{NetpollReadiness: true}})
	c, s := pair(t, rt, "tcp")
	sc := s.(*Conn)
	if !sc.fd.goPollMode() {
		t.Fatal("accepted connection not in Go's netpoller")
	}
	if epollHas(t, sc.fd.fd) {
		t.Fatal("accepted connection registered in an epoll before any read waited")
	}
	// Bytes already there: read without waiting, answer, stay unregistered.
	c.Write([]byte("req"))
	b := make([]byte, 16)
	deadline := time.Now().Add(5 * time.Second)
	for {
		// Wait for the bytes to be in the socket before reading, so the
		// read does not have to wait.
		n, err := unix.IoctlGetInt(sc.fd.fd, unix.SIOCINQ)
		if err != nil {
			t.Fatal(err)
		}
		if n == 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if n, err := s.Read(b); err != nil || string(b[:n]) != "req" {
		t.Fatalf("read: %q, %v", b[:n], err)
	}
	if _, err := s.Write([]byte("resp")); err != nil {
		t.Fatal(err)
	}
	if epollHas(t, sc.fd.fd) {
		t.Fatal("registered after a read that did not wait")
	}
	if sc.fd.gp.Load() != 0 {
		t.Fatal("netpoll entry made after a read that did not wait")
	}
	// A read that waits registers it, and wakes for bytes written later.
	go func() {
		time.Sleep(30 * time.Millisecond)
		c.Write([]byte("more"))
	}()
	s.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := s.Read(b); err != nil || string(b[:n]) != "more" {
		t.Fatalf("read that waited: %q, %v", b[:n], err)
	}
	if !epollHas(t, sc.fd.fd) {
		t.Fatal("not registered after a read waited")
	}
	fd := sc.fd.fd
	s.Close()
	if epollHas(t, fd) {
		t.Fatal("still registered after Close")
	}
	c.Close()

	// Many connections whose first read races with the peer's bytes:
	// each read must end with the bytes, whether they came before the
	// EAGAIN, between it and the registration, or after it.
	for i := 0; i < 200; i++ {
		c, s := pair(t, rt, "tcp")
		go c.Write([]byte("x"))
		s.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := s.Read(b); err != nil || n != 1 {
			t.Fatalf("connection %d: read %d, %v", i, n, err)
		}
		c.Close()
		s.Close()
	}
}
