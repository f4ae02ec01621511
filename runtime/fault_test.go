package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// countFDs returns the number of open descriptors of the process.
func countFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// listFDs describes the open descriptors (for failure messages): each
// fd, what it points at and, for a TCP socket, its local and remote
// address and state (hex, as /proc/net/tcp has them; st 08 is CLOSE_WAIT).
func listFDs() string {
	ents, _ := os.ReadDir("/proc/self/fd")
	var b strings.Builder
	for _, e := range ents {
		target, _ := os.Readlink("/proc/self/fd/" + e.Name())
		fmt.Fprintf(&b, "%s->%s ", e.Name(), target)
		if ino, ok := strings.CutPrefix(target, "socket:["); ok {
			ino = strings.TrimSuffix(ino, "]")
			for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
				data, _ := os.ReadFile(f)
				for _, line := range strings.Split(string(data), "\n") {
					if fs := strings.Fields(line); len(fs) > 9 && fs[9] == ino {
						fmt.Fprintf(&b, "(%s %s st %s) ", fs[1], fs[2], fs[3])
					}
				}
			}
		}
	}
	return b.String()
}

// waitFDs waits (up to 5 s) until no more than want descriptors are open.
func waitFDs(t testing.TB, want int) {
	t.Helper()
	end := time.Now().Add(5 * time.Second)
	for {
		n := countFDs(t)
		if n <= want {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%d descriptors open after Close, %d before: %s", n, want, listFDs())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// lockedBuffer is a bytes.Buffer safe for a logger and a test to share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

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

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
			ln, err := rt.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
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
			reg := prometheus.NewRegistry()
			cfg.Registerer = reg
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
				if n := gatherCounter(t, reg, "uringrt_accept_errors_total", "errno", "EMFILE"); n < 1 {
					t.Errorf("uringrt_accept_errors_total{errno=EMFILE} = %v, want >= 1", n)
				}
			}
			rawEcho(t, cs, "pending connection")
			echoOnce(t, rt, ln.Addr().String(), "new connection")
		})
	}
}

// gatherCounter returns the value of the series of name with label=value.
func gatherCounter(t testing.TB, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label && lp.GetValue() == value {
					if c := m.GetCounter(); c != nil {
						return c.GetValue()
					}
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return -1
}

// TestPeerResetMidRead: a Read parked on an idle connection returns
// ECONNRESET when the peer resets; a write to the reset peer then fails
// with EPIPE or ECONNRESET and raises no SIGPIPE. The callback API reports
// the reset in OnClose.
func TestPeerResetMidRead(t *testing.T) {
	sigpipe := make(chan os.Signal, 8)
	signal.Notify(sigpipe, syscall.SIGPIPE)
	defer signal.Stop(sigpipe)
	for _, tier := range tiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			c, s := pair(t, rt, "tcp")
			done := make(chan error, 1)
			go func() {
				_, err := s.Read(make([]byte, 64))
				done <- err
			}()
			time.Sleep(30 * time.Millisecond) // let Read park
			setLinger0(t, c)
			c.Close()
			var err error
			select {
			case err = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("parked Read not woken by the peer's reset")
			}
			var oe *net.OpError
			if !errors.Is(err, syscall.ECONNRESET) || !errors.As(err, &oe) || oe.Op != "read" {
				t.Fatalf("Read across peer reset: %v, want *net.OpError{Op: read} wrapping ECONNRESET", err)
			}
			var werr error
			for i := 0; i < 10 && werr == nil; i++ {
				_, werr = s.Write(bytes.Repeat([]byte("x"), 4096))
			}
			if !errors.Is(werr, syscall.EPIPE) && !errors.Is(werr, syscall.ECONNRESET) {
				t.Fatalf("Write to reset peer: %v, want EPIPE or ECONNRESET", werr)
			}
			if !errors.As(werr, &oe) || oe.Op != "write" {
				t.Fatalf("Write to reset peer: %v, want *net.OpError{Op: write}", werr)
			}
			if tier.name == "std" {
				// Go's net writes without MSG_NOSIGNAL: the kernel raises
				// SIGPIPE, which the Go runtime discards (fd not 1 or 2).
				drainSignals(sigpipe)
				return
			}
			select {
			case <-sigpipe:
				t.Fatal("SIGPIPE raised by a write to a reset peer")
			case <-time.After(20 * time.Millisecond):
			}
			// Callback API: OnClose gets the reset.
			ln, err := rt.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			closed := make(chan error, 1)
			h := HandlerFuncs{
				Data:  func(c *CallbackConn, b []byte) { c.Write(b) },
				Close: func(c *CallbackConn, err error) { closed <- err },
			}
			go rt.Serve(ln, h)
			defer ln.Close()
			cc, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			cc.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := cc.Write([]byte("hi")); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(cc, make([]byte, 2)); err != nil {
				t.Fatal(err)
			}
			cc.(*net.TCPConn).SetLinger(0)
			cc.Close()
			select {
			case err := <-closed:
				if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
					t.Fatalf("OnClose after reset: %v, want ECONNRESET", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("OnClose not called after the peer's reset")
			}
			select {
			case <-sigpipe:
				t.Fatal("SIGPIPE raised by a callback send to a reset peer")
			case <-time.After(20 * time.Millisecond):
			}
		})
	}
}

func drainSignals(ch chan os.Signal) {
	for {
		select {
		case <-ch:
		case <-time.After(20 * time.Millisecond):
			return
		}
	}
}

// raiseNOFILE raises RLIMIT_NOFILE's soft limit to the hard limit (and,
// with CAP_SYS_RESOURCE, the hard limit to need) and restores it after t.
// It skips t when fewer than need descriptors can be had.
func raiseNOFILE(t *testing.T, need uint64) {
	var orig unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &orig); err != nil {
		t.Fatal(err)
	}
	lim := unix.Rlimit{Cur: orig.Max, Max: orig.Max}
	if lim.Max < need {
		try := unix.Rlimit{Cur: need, Max: need}
		if unix.Setrlimit(unix.RLIMIT_NOFILE, &try) == nil {
			lim = try
		}
	}
	if lim.Max < need {
		t.Skipf("RLIMIT_NOFILE hard limit %d < %d (raise it: ulimit -Hn %d)", lim.Max, need, need)
	}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("cannot raise RLIMIT_NOFILE to %d: %v", lim.Cur, err)
	}
	t.Cleanup(func() { unix.Setrlimit(unix.RLIMIT_NOFILE, &orig) })
}

// manyConns is 10,000 unless URINGRT_CONNS says otherwise.
func manyConns() int {
	if n, err := strconv.Atoi(os.Getenv("URINGRT_CONNS")); err == nil && n > 0 {
		return n
	}
	return 10000
}

// TestTenThousandConns holds 10,000 connections open at once and echoes a
// message on every one: against the callback API with Go's net clients,
// and against a goroutine-per-connection net.Conn server with uringrt
// clients (in a child process, so each process needs only ~10,000
// descriptors). Bounded to about 60 s; skipped with -short, and when
// RLIMIT_NOFILE cannot reach 12,000. URINGRT_CONNS=n changes the count.
func TestTenThousandConns(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 connections: skipped with -short")
	}
	manyConns := manyConns()
	raiseNOFILE(t, uint64(manyConns)+2000)
	for _, api := range []string{"callback", "netconn"} {
		t.Run(api, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			if d, ok := t.Deadline(); ok {
				ctx, cancel = context.WithDeadline(context.Background(), d.Add(-5*time.Second))
			}
			defer cancel()
			rt := newRT(t, Config{Loops: 2})
			ln, err := rt.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			var open, peak, opened atomic.Int64
			up := func() {
				opened.Add(1)
				n := open.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
			}
			switch api {
			case "callback":
				go rt.Serve(ln, HandlerFuncs{
					Open:  func(*CallbackConn) { up() },
					Data:  func(c *CallbackConn, b []byte) { c.Write(b) },
					Close: func(*CallbackConn, error) { open.Add(-1) },
				})
			case "netconn":
				go func() {
					for {
						c, err := ln.Accept()
						if err != nil {
							return
						}
						up()
						go func() {
							defer open.Add(-1)
							defer c.Close()
							io.Copy(c, c)
						}()
					}
				}()
			}
			defer ln.Close()
			// The clients live in a child process (TestMain's
			// URINGRT_MANY_CLIENT), so each process holds 10,000
			// descriptors, within a 20,000 hard limit.
			start := time.Now()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("URINGRT_MANY_CLIENT=%s,%d,%s", ln.Addr(), manyConns, api))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("client process: %v\n%s", err, out)
			}
			dialed := strings.TrimSpace(string(out))
			t.Logf("%s: %d conns (%s), all echoed in %v; server peak open %d", api, manyConns, dialed, time.Since(start), peak.Load())
			if peak.Load() < int64(manyConns) {
				t.Fatalf("server had at most %d connections open at once, want %d", peak.Load(), manyConns)
			}
		})
	}
}

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
func TestIdleReadableNoSpin(t *testing.T) {
	for _, tier := range tiers {
		if tier.cfg.Backend == BackendStd {
			continue
		}
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			c, s := pair(t, rt, "tcp")
			c2, s2 := pair(t, rt, "tcp")
			ln, err := rt.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
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
			cpu0 := cpuTime()
			time.Sleep(300 * time.Millisecond)
			cpu := cpuTime() - cpu0
			t.Logf("%v CPU in 300ms idle", cpu)
			if cpu > 60*time.Millisecond {
				t.Fatalf("%v CPU in 300ms with readable sockets nobody reads: the loop spins", cpu)
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
