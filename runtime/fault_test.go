package uringrt

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fdHog runs a test out of descriptors. limitFDs lowers RLIMIT_NOFILE's
// soft limit to a little above the highest open descriptor (before a
// multishot accept is armed: the kernel reads the limit when it preps the
// accept); fill then takes every free slot with a dup of /dev/null, so the
// next accept fails with EMFILE; release closes them and restores the
// limit (it is also a cleanup; calling it twice is fine).
type fdHog struct {
	t    testing.TB
	orig unix.Rlimit
	held []int
	once sync.Once
}

func limitFDs(t testing.TB) *fdHog {
	t.Helper()
	h := &fdHog{t: t}
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &h.orig); err != nil {
		t.Fatal(err)
	}
	maxFD := 0
	ents, _ := os.ReadDir("/proc/self/fd")
	for _, e := range ents {
		var n int
		fmt.Sscan(e.Name(), &n)
		maxFD = max(maxFD, n)
	}
	lim := h.orig
	if soft := uint64(maxFD + 256); soft < lim.Cur {
		lim.Cur = soft
	}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.release)
	return h
}

func (h *fdHog) fill() {
	h.t.Helper()
	devnull, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		h.release()
		h.t.Fatal(err)
	}
	h.held = append(h.held, devnull)
	for {
		fd, err := unix.FcntlInt(uintptr(devnull), unix.F_DUPFD_CLOEXEC, 0)
		if err == unix.EMFILE {
			return
		}
		if err != nil {
			h.release()
			h.t.Fatalf("dup: %v", err)
		}
		h.held = append(h.held, fd)
	}
}

func (h *fdHog) release() {
	h.once.Do(func() {
		for _, fd := range h.held {
			unix.Close(fd)
		}
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &h.orig); err != nil {
			h.t.Errorf("restore RLIMIT_NOFILE: %v", err)
		}
	})
}

// rawClient makes a blocking TCP socket now (while descriptors are free);
// connect later lands the connection in the listener's backlog without
// needing a new descriptor.
func rawClient(t testing.TB) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

func rawConnect(t testing.TB, fd int, addr net.Addr) {
	t.Helper()
	a := addr.(*net.TCPAddr)
	sa := &unix.SockaddrInet4{Port: a.Port}
	copy(sa.Addr[:], a.IP.To4())
	if err := unix.Connect(fd, sa); err != nil {
		t.Fatalf("connect: %v", err)
	}
	tv := unix.Timeval{Sec: 5}
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
}

// rawEcho writes msg on a blocking socket and expects it back.
func rawEcho(t testing.TB, fd int, msg string) {
	t.Helper()
	if _, err := unix.Write(fd, []byte(msg)); err != nil {
		t.Fatalf("write: %v", err)
	}
	got := make([]byte, 0, len(msg))
	buf := make([]byte, len(msg))
	for len(got) < len(msg) {
		n, err := unix.Read(fd, buf[:len(msg)-len(got)])
		if err == unix.EINTR {
			// A read with SO_RCVTIMEO returns EINTR when the thread is
			// interrupted (Go's preemption signal, or io_uring task_work
			// queued to this thread by a COOP_TASKRUN ring).
			continue
		}
		if err != nil || n == 0 {
			t.Fatalf("echo after recovery: got %q, %v", got, err)
		}
		got = append(got, buf[:n]...)
	}
	if string(got) != msg {
		t.Fatalf("echo: got %q, want %q", got, msg)
	}
}

// A spinning accept loop burns a whole core; a backing-off one a few
// wake-ups. These bound a 600 ms window of EMFILE.
const (
	emfileWindow   = 600 * time.Millisecond
	emfileMaxCalls = 30                    // 5 ms doubling to 1 s: about 8 in 600 ms
	emfileMaxCPU   = emfileWindow * 4 / 10 // a spin would use ~100%
)

// TestAcceptEMFILEConn: net.Conn Accept under EMFILE returns a
// *net.OpError wrapping EMFILE (no retry loop inside), a caller backing off
// as net/http does uses next to no CPU, and once descriptors are free the
// pending and new connections are served.
func TestAcceptEMFILEConn(t *testing.T) {
	for _, tier := range tiers {
		if tier.name != "hybrid" && tier.name != "ring" && tier.name != "no-defer-taskrun" {
			continue
		}
		t.Run(tier.name, func(t *testing.T) {
			hog := limitFDs(t)
			rt := newRT(t, tier.cfg)
			ln := listenTCP(t, rt)
			var calls atomic.Int64
			firstErr := make(chan error, 1)
			go func() { // net/http's accept loop
				var backoff time.Duration
				for {
					c, err := ln.Accept()
					calls.Add(1)
					if err != nil {
						if errors.Is(err, net.ErrClosed) {
							return
						}
						select {
						case firstErr <- err:
						default:
						}
						if backoff == 0 {
							backoff = 5 * time.Millisecond
						} else if backoff *= 2; backoff > time.Second {
							backoff = time.Second
						}
						time.Sleep(backoff)
						continue
					}
					backoff = 0
					go func() {
						defer c.Close()
						io.Copy(c, c)
					}()
				}
			}()
			cs := rawClient(t)
			hog.fill()
			release := hog.release
			rawConnect(t, cs, ln.Addr())
			var err1 error
			select {
			case err1 = <-firstErr:
			case <-time.After(5 * time.Second):
				release()
				t.Fatal("Accept did not fail under EMFILE")
			}
			c0, cpu0 := calls.Load(), cpuTime()
			time.Sleep(emfileWindow)
			c1, cpu1 := calls.Load(), cpuTime()
			release()
			var oe *net.OpError
			if !errors.As(err1, &oe) || oe.Op != "accept" || !errors.Is(err1, syscall.EMFILE) {
				t.Fatalf("Accept under EMFILE: %#v (%v), want *net.OpError{Op: accept} wrapping EMFILE", err1, err1)
			}
			if ne, ok := err1.(net.Error); !ok || ne.Timeout() {
				t.Errorf("EMFILE error is not a non-timeout net.Error: %v", err1)
			}
			t.Logf("EMFILE window %v: %d Accept calls, %v CPU", emfileWindow, c1-c0, cpu1-cpu0)
			if c1-c0 > emfileMaxCalls {
				t.Errorf("%d Accept calls in %v: spinning", c1-c0, emfileWindow)
			}
			if cpu1-cpu0 > emfileMaxCPU {
				t.Errorf("%v CPU in %v of EMFILE: spinning", cpu1-cpu0, emfileWindow)
			}
			// Recovery: the connection that waited in the backlog, and a new one.
			rawEcho(t, cs, "pending connection")
			echoOnce(t, rt, ln.Addr().String(), "new connection")
		})
	}
}

// TestAcceptEMFILEServe: the callback API's accept loop itself backs off
// under EMFILE (a timer, 5 ms doubling to 1 s), without spinning, counts
// the errors, and serves again once descriptors are free.
func TestAcceptEMFILEServe(t *testing.T) {
	for _, tier := range tiers {
		if tier.name != "hybrid" && tier.name != "no-defer-taskrun" && tier.name != "std" {
			continue
		}
		t.Run(tier.name, func(t *testing.T) {
			hog := limitFDs(t) // before Serve arms its accept
			buf := new(lockedBuffer)
			cfg := tier.cfg
			cfg.Logger = slogTo(buf)
			cfg.Metrics = true
			rt := newRT(t, cfg)
			ln, err := rt.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			served := make(chan error, 1)
			go func() { served <- rt.Serve(ln, EchoHandler{}) }()
			defer func() {
				ln.Close()
				select {
				case <-served:
				case <-time.After(5 * time.Second):
					t.Error("Serve did not return after Close")
				}
			}()
			fds0 := countFDs(t)
			echoOnce(t, rt, ln.Addr().String(), "before") // Serve is running
			// The server closes its side of that connection on its loop,
			// after the client's Close returned: wait for it, or its
			// descriptor, freed after fill, lets the pending connection
			// be accepted without EMFILE (the test's flake under load).
			waitFDs(t, fds0)
			cs := rawClient(t)
			hog.fill()
			release := hog.release
			rawConnect(t, cs, ln.Addr())
			attempts := func() int { return strings.Count(buf.String(), "accept failed") }
			end := time.Now().Add(5 * time.Second)
			for attempts() == 0 {
				if time.Now().After(end) {
					release()
					t.Fatalf("no accept error logged under EMFILE:\n%s", buf.String())
				}
				time.Sleep(time.Millisecond)
			}
			a0, cpu0 := attempts(), cpuTime()
			time.Sleep(emfileWindow)
			a1, cpu1 := attempts(), cpuTime()
			release()
			t.Logf("EMFILE window %v: %d accept attempts, %v CPU", emfileWindow, a1-a0, cpu1-cpu0)
			if a1-a0 > emfileMaxCalls {
				t.Errorf("%d accept attempts in %v: spinning", a1-a0, emfileWindow)
			}
			if cpu1-cpu0 > emfileMaxCPU {
				t.Errorf("%v CPU in %v of EMFILE: spinning", cpu1-cpu0, emfileWindow)
			}
			if tier.name != "std" {
				if n := rt.Stats().AcceptErrors["EMFILE"]; n < 1 {
					t.Errorf("AcceptErrors[EMFILE] = %v, want >= 1", n)
				}
			}
			rawEcho(t, cs, "pending connection")
			echoOnce(t, rt, ln.Addr().String(), "new connection")
		})
	}
}
