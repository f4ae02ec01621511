package uringrt

import (
	"errors"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestRawConnWaitsThroughRing: SyscallConn's Read and Write call back
// again only when the socket became ready (a parked wait, not a spin),
// honour deadlines and wake on Close, in each waiting policy.
func TestRawConnWaitsThroughRing(t *testing.T) {
	for _, tier := range optTiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			c, s := pair(t, rt, "tcp")
			rc, err := c.(syscall.Conn).SyscallConn()
			if err != nil {
				t.Fatal(err)
			}

			// Read: the callback finds EAGAIN, the peer writes, the
			// callback runs again and reads.
			calls := 0
			var got []byte
			readDone := make(chan error, 1)
			firstTry := make(chan struct{})
			go func() {
				readDone <- rc.Read(func(fd uintptr) bool {
					calls++
					if calls == 1 {
						defer close(firstTry)
					}
					b := make([]byte, 16)
					n, err := unix.Read(int(fd), b)
					if err == unix.EAGAIN {
						return false
					}
					got = b[:max(n, 0)]
					return true
				})
			}()
			<-firstTry
			if _, err := s.Write([]byte("ready")); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-readDone:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("RawConn.Read did not return after the peer wrote")
			}
			if string(got) != "ready" {
				t.Fatalf("read %q", got)
			}
			// A wait is one readiness, so a handful of calls at most (a
			// readiness remembered from before can add a spurious one);
			// a spinning Read would call thousands of times.
			if calls > 4 {
				t.Errorf("RawConn.Read called back %d times for one wait", calls)
			}

			// Read deadline: a callback that never finishes ends with
			// os.ErrDeadlineExceeded.
			c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			err = rc.Read(func(uintptr) bool { return false })
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("Read past the deadline: %v", err)
			}
			c.SetReadDeadline(time.Time{})

			// Write: fill the send buffer until EAGAIN, then the callback
			// runs again once the peer has read.
			c.(interface{ SetWriteBuffer(int) error }).SetWriteBuffer(4096)
			chunk := make([]byte, 64<<10)
			filled := false
			wcalls := 0
			writeDone := make(chan error, 1)
			full := make(chan struct{})
			go func() {
				writeDone <- rc.Write(func(fd uintptr) bool {
					wcalls++
					for {
						_, err := unix.Write(int(fd), chunk)
						if err == unix.EAGAIN {
							if !filled {
								filled = true
								close(full)
								return false
							}
							return true // writable again, and filled again
						}
						if err != nil {
							return true
						}
					}
				})
			}()
			<-full
			go func() {
				buf := make([]byte, 256<<10)
				for {
					if _, err := s.Read(buf); err != nil {
						return
					}
				}
			}()
			select {
			case err := <-writeDone:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("RawConn.Write did not return after the peer read")
			}
			if wcalls < 2 {
				t.Errorf("Write callback ran %d times, want a retry after the wait", wcalls)
			}

			// Close wakes a waiting Read with net.ErrClosed.
			blocked := make(chan error, 1)
			started := make(chan struct{})
			var once sync.Once
			go func() {
				blocked <- rc.Read(func(uintptr) bool { once.Do(func() { close(started) }); return false })
			}()
			<-started
			c.Close()
			select {
			case err := <-blocked:
				if !errors.Is(err, net.ErrClosed) {
					t.Errorf("Read after Close: %v, want net.ErrClosed", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Close did not wake RawConn.Read")
			}
			// As in net: SyscallConn after Close still answers, and the
			// RawConn's methods say net.ErrClosed.
			rc2, err := c.(syscall.Conn).SyscallConn()
			if err != nil {
				t.Fatalf("SyscallConn after Close: %v (Go's net returns a RawConn)", err)
			}
			if err := rc2.Control(func(uintptr) {}); !errors.Is(err, net.ErrClosed) {
				t.Errorf("Control after Close: %v, want net.ErrClosed", err)
			}
			if err := rc2.Write(func(uintptr) bool { return true }); !errors.Is(err, net.ErrClosed) {
				t.Errorf("RawConn.Write after Close: %v, want net.ErrClosed", err)
			}
		})
	}
}

// TestFileDupLikeStd: Conn.File and the listener's File return a
// duplicate descriptor of the same socket, named as Go's net names it.
func TestFileDupLikeStd(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	ln := listenTCP(t, rt)
	lf, err := ln.(interface{ File() (*os.File, error) }).File()
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	sa, err := unix.Getsockname(int(lf.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	if p := sa.(*unix.SockaddrInet4).Port; p != ln.Addr().(*net.TCPAddr).Port {
		t.Errorf("listener File bound to port %d, listener on %v", p, ln.Addr())
	}
	go func() {
		c, err := ln.Accept()
		if err == nil {
			defer c.Close()
			c.Write([]byte("x"))
		}
	}()
	c, err := rt.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.(*Conn).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if want := "tcp:" + c.LocalAddr().String() + "->" + c.RemoteAddr().String(); f.Name() != want {
		t.Errorf("File name %q, want %q", f.Name(), want)
	}
	var raw int
	c.(*Conn).fd.control(func(fd int) error { raw = fd; return nil })
	if int(f.Fd()) == raw {
		t.Error("File returned the connection's own descriptor, not a duplicate")
	}
	c.Close()
	// The duplicate outlives the connection's Close.
	b := make([]byte, 1)
	if n, err := unix.Read(int(f.Fd()), b); err != nil && err != unix.EAGAIN || n == 1 && b[0] != 'x' {
		t.Errorf("read through File after Close: %d %v", n, err)
	}
	if _, err := c.(*Conn).File(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("File after Close: %v", err)
	}
}
