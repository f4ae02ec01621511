package uringrt

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/uringrt/uringrt/runtime/experiment"
)

// optTiers are the configurations the option tests run in: the net.Conn
// policies that wait differently, and Go's net.
var optTiers = []struct {
	name string
	cfg  Config
}{
	{"hybrid", Config{Loops: 2}},
	{"ring", Config{Loops: 1, Switches: experiment.Switches{Pollable: experiment.PollRing}}},
	{"blocking", Config{Loops: 1, Workers: 4, Switches: experiment.Switches{Pollable: experiment.PollBlocking}}},
	{"std", Config{Backend: BackendStd}},
}

// kaState is a socket's keep-alive settings as the kernel has them.
type kaState struct{ on, idle, intvl, cnt int }

// keepAliveState reads SO_KEEPALIVE, TCP_KEEPIDLE, TCP_KEEPINTVL and
// TCP_KEEPCNT through c's SyscallConn.
func keepAliveState(t *testing.T, c net.Conn) kaState {
	t.Helper()
	sc, ok := c.(syscall.Conn)
	if !ok {
		t.Fatalf("%T is not a syscall.Conn", c)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var s kaState
	var gerr error
	get := func(fd, level, opt int) int {
		v, err := unix.GetsockoptInt(fd, level, opt)
		if err != nil && gerr == nil {
			gerr = err
		}
		return v
	}
	if err := rc.Control(func(fd uintptr) {
		s.on = get(int(fd), unix.SOL_SOCKET, unix.SO_KEEPALIVE)
		s.idle = get(int(fd), unix.IPPROTO_TCP, unix.TCP_KEEPIDLE)
		s.intvl = get(int(fd), unix.IPPROTO_TCP, unix.TCP_KEEPINTVL)
		s.cnt = get(int(fd), unix.IPPROTO_TCP, unix.TCP_KEEPCNT)
	}); err != nil {
		t.Fatal(err)
	}
	if gerr != nil {
		t.Fatal(gerr)
	}
	return s
}

// stdKeepAlive is what Go's net sets on a dialed connection with nd's
// options and on one accepted by a listener with nl's: the reference.
func stdKeepAlive(t *testing.T, nd *net.Dialer, nl *net.ListenConfig) (dialed, accepted kaState) {
	t.Helper()
	ln, err := nl.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, s := dialAccept(t, ln, func(addr string) (net.Conn, error) { return nd.Dial("tcp", addr) })
	defer c.Close()
	defer s.Close()
	return keepAliveState(t, c), keepAliveState(t, s)
}

// optPair connects a Dialer to a ListenConfig's listener, both on rt.
func optPair(t *testing.T, rt *Runtime, d *Dialer, lc *ListenConfig) (client, server net.Conn) {
	t.Helper()
	d.Runtime, lc.Runtime = rt, rt
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return pairOn(t, ln, func(addr string) (net.Conn, error) { return d.Dial("tcp", addr) })
}

// TestKeepAliveLikeStd: accepted and dialed TCP connections get Go's
// keep-alive (on, 15 s idle and interval, 9 probes) by default, and the
// Dialer's and ListenConfig's KeepAlive / KeepAliveConfig mean what
// net.Dialer's and net.ListenConfig's do: compared with Go's net.
func TestKeepAliveLikeStd(t *testing.T) {
	custom := net.KeepAliveConfig{Enable: true, Idle: 31 * time.Second, Interval: 7 * time.Second, Count: 4}
	cases := []struct {
		name   string
		ka     time.Duration
		kaCfg  net.KeepAliveConfig
		lka    time.Duration
		lkaCfg net.KeepAliveConfig
	}{
		{name: "defaults"},
		{name: "off", ka: -1, lka: -1},
		{name: "period", ka: 20 * time.Second, lka: 1500 * time.Millisecond},
		{name: "config", kaCfg: custom, lkaCfg: custom},
	}
	for _, tier := range optTiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					wantD, wantA := stdKeepAlive(t,
						&net.Dialer{KeepAlive: tc.ka, KeepAliveConfig: tc.kaCfg},
						&net.ListenConfig{KeepAlive: tc.lka, KeepAliveConfig: tc.lkaCfg})
					c, s := optPair(t, rt,
						&Dialer{KeepAlive: tc.ka, KeepAliveConfig: tc.kaCfg},
						&ListenConfig{KeepAlive: tc.lka, KeepAliveConfig: tc.lkaCfg})
					if got := keepAliveState(t, c); got != wantD {
						t.Errorf("dialed: %+v, Go's net: %+v", got, wantD)
					}
					if got := keepAliveState(t, s); got != wantA {
						t.Errorf("accepted: %+v, Go's net: %+v", got, wantA)
					}
				})
			}
			// The package-shaped Listen and Dial too.
			c, s := pair(t, rt, "tcp")
			want, _ := stdKeepAlive(t, &net.Dialer{}, &net.ListenConfig{})
			for _, x := range []net.Conn{c, s} {
				if got := keepAliveState(t, x); got != want || got.on != 1 {
					t.Errorf("Listen/Dial: %+v, Go's net: %+v", got, want)
				}
			}
		})
	}
}

// TestKeepAliveTimerInSS: the kernel's view (ss -tno) shows the keep-alive
// timer on an idle accepted connection, as for Go's net.
func TestKeepAliveTimerInSS(t *testing.T) {
	if _, err := exec.LookPath("ss"); err != nil {
		t.Skip("ss (iproute2) not installed")
	}
	rt := newRT(t, Config{Loops: 1})
	c, s := pair(t, rt, "tcp")
	for _, x := range []net.Conn{c, s} {
		port := x.LocalAddr().(*net.TCPAddr).Port
		out, err := exec.Command("ss", "-tnoH", "state", "established", "sport = :"+strconv.Itoa(port)).CombinedOutput()
		if err != nil {
			t.Fatalf("ss: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "timer:(keepalive") {
			t.Errorf("no keep-alive timer on %v: %q", x.LocalAddr(), out)
		}
	}
}

// TestConnKeepAliveSetters: SetKeepAlive, SetKeepAlivePeriod and
// SetKeepAliveConfig change what the kernel has, as on *net.TCPConn.
func TestConnKeepAliveSetters(t *testing.T) {
	type setter interface {
		SetKeepAlive(bool) error
		SetKeepAlivePeriod(time.Duration) error
		SetKeepAliveConfig(net.KeepAliveConfig) error
	}
	steps := []struct {
		name string
		do   func(setter) error
	}{
		{"off", func(c setter) error { return c.SetKeepAlive(false) }},
		{"on", func(c setter) error { return c.SetKeepAlive(true) }},
		{"period", func(c setter) error { return c.SetKeepAlivePeriod(42 * time.Second) }},
		{"config", func(c setter) error {
			return c.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: 5 * time.Second, Interval: 3 * time.Second, Count: 2})
		}},
		{"config-defaults", func(c setter) error { return c.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true}) }},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acceptHold(ln)
	ref, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	for _, tier := range optTiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			c, err := rt.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for _, st := range steps {
				if err := st.do(c.(setter)); err != nil {
					t.Fatalf("%s: %v", st.name, err)
				}
				if err := st.do(ref.(setter)); err != nil {
					t.Fatalf("%s on Go's net: %v", st.name, err)
				}
				if got, want := keepAliveState(t, c), keepAliveState(t, ref); got != want {
					t.Errorf("after %s: %+v, Go's net: %+v", st.name, got, want)
				}
			}
			c.Close()
			if err := c.(setter).SetKeepAlive(true); !errors.Is(err, net.ErrClosed) {
				t.Errorf("SetKeepAlive after Close: %v, want net.ErrClosed", err)
			}
		})
	}
}

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

// TestDialerControlAndLocalAddr: Control runs with the network and address
// Go's net gives it, before connect; LocalAddr is bound; the listener's
// Control too; a Control error aborts the dial with it.
func TestDialerControlAndLocalAddr(t *testing.T) {
	type call struct{ network, address string }
	record := func(calls *[]call) func(string, string, syscall.RawConn) error {
		return func(network, address string, c syscall.RawConn) error {
			*calls = append(*calls, call{network, address})
			var cerr error
			if err := c.Control(func(fd uintptr) {
				// Something libraries do in Control: a socket option.
				cerr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 64<<10)
			}); err != nil {
				return err
			}
			return cerr
		}
	}
	for _, tier := range optTiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			var stdL, stdD, ourL, ourD []call
			// Go's net, for the reference arguments.
			nl := net.ListenConfig{Control: record(&stdL)}
			gl, err := nl.Listen(context.Background(), "tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer gl.Close()
			nd := net.Dialer{Control: record(&stdD)}
			gc, err := nd.Dial("tcp", gl.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			gc.Close()

			lc := &ListenConfig{Runtime: rt, Control: record(&ourL)}
			ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}
			d := &Dialer{Runtime: rt, Control: record(&ourD), LocalAddr: local}
			c, s := dialAccept(t, ln, func(addr string) (net.Conn, error) { return d.Dial("tcp", addr) })
			defer c.Close()
			defer s.Close()

			if len(ourL) != 1 || ourL[0].network != stdL[0].network || ourL[0].address != "127.0.0.1:0" {
				t.Errorf("listen Control calls %v, Go's net %v", ourL, stdL)
			}
			if len(ourD) != 1 || ourD[0].network != stdD[0].network || ourD[0].address != ln.Addr().String() {
				t.Errorf("dial Control calls %v, Go's net %v (to %v)", ourD, stdD, gl.Addr())
			}
			if got := c.LocalAddr().(*net.TCPAddr).IP; !got.Equal(local.IP) {
				t.Errorf("LocalAddr %v, want bound to %v", c.LocalAddr(), local.IP)
			}
			if got := s.RemoteAddr().(*net.TCPAddr).IP; !got.Equal(local.IP) {
				t.Errorf("server sees the client at %v, want %v", s.RemoteAddr(), local.IP)
			}

			// A failing Control aborts the dial with its error.
			boom := errors.New("control refused")
			bad := &Dialer{Runtime: rt, Control: func(string, string, syscall.RawConn) error { return boom }}
			if _, err := bad.Dial("tcp", ln.Addr().String()); !errors.Is(err, boom) {
				t.Errorf("dial with a failing Control: %v", err)
			}
			// A refused dial from LocalAddr reads as net's, naming both ends.
			dead, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			deadAddr := dead.Addr().String()
			dead.Close()
			_, want := (&net.Dialer{LocalAddr: local}).Dial("tcp", deadAddr)
			_, got := (&Dialer{Runtime: rt, LocalAddr: local}).Dial("tcp", deadAddr)
			if got == nil || want == nil || got.Error() != want.Error() {
				t.Errorf("refused dial from %v: %v; Go's net: %v", local, got, want)
			}
			// An IPv6 LocalAddr has no IPv4 peer to reach.
			v6 := &Dialer{Runtime: rt, LocalAddr: &net.TCPAddr{IP: net.IPv6loopback}}
			if _, err := v6.Dial("tcp", ln.Addr().String()); err == nil {
				t.Error("dial from [::1] to an IPv4 address succeeded")
			}
		})
	}
}

// TestDialCanceledLikeStd: a cancelled or expired context fails a dial
// with the words of Go's net ("operation was canceled", "i/o timeout"),
// still matching errors.Is(err, context.Canceled) / the timeout checks.
func TestDialCanceledLikeStd(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	ctxs := []struct {
		name string
		ctx  context.Context
	}{{"canceled", cancelled}, {"expired", expired}}
	unixPath := t.TempDir() + "/s.sock"
	uln, err := net.Listen("unix", unixPath)
	if err != nil {
		t.Fatal(err)
	}
	defer uln.Close()
	targets := []struct{ network, addr string }{{"tcp", addr}, {"unix", unixPath}}
	for _, tier := range optTiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			for _, cc := range ctxs {
				for _, tg := range targets {
					checkDialErrLikeStd(t, rt, cc.name, cc.ctx, tg.network, tg.addr)
				}
			}
		})
	}
}

// checkDialErrLikeStd dials network/addr with ctx through rt and through
// Go's net and compares the errors' text and classification.
func checkDialErrLikeStd(t *testing.T, rt *Runtime, name string, ctx context.Context, network, addr string) {
	t.Helper()
	name += "/" + network
	var nd net.Dialer
	_, want := nd.DialContext(ctx, network, addr)
	c, got := (&Dialer{Runtime: rt}).DialContext(ctx, network, addr)
	if got == nil {
		c.Close()
		t.Fatalf("%s: dial succeeded; Go's net: %v", name, want)
	}
	if got.Error() != want.Error() {
		t.Errorf("%s: %q, Go's net: %q", name, got, want)
	}
	if errors.Is(got, context.Canceled) != errors.Is(want, context.Canceled) ||
		errors.Is(got, os.ErrDeadlineExceeded) != errors.Is(want, os.ErrDeadlineExceeded) ||
		errors.Is(got, context.DeadlineExceeded) != errors.Is(want, context.DeadlineExceeded) {
		t.Errorf("%s: errors.Is differs from Go's net: %v", name, got)
	}
	var ne net.Error
	if errors.As(got, &ne) != errors.As(want, new(net.Error)) || ne != nil && ne.Timeout() != want.(net.Error).Timeout() {
		t.Errorf("%s: Timeout differs from Go's net: %v", name, got)
	}
}

// TestMultipathTCPLikeStd: a Dialer asking for MPTCP gets it where Go's
// net does (or falls back to TCP where Go's does).
func TestMultipathTCPLikeStd(t *testing.T) {
	var nl net.ListenConfig
	nl.SetMultipathTCP(true)
	gl, err := nl.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer gl.Close()
	acceptHold(gl)
	var nd net.Dialer
	nd.SetMultipathTCP(true)
	gc, err := nd.Dial("tcp", gl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	want, _ := gc.(*net.TCPConn).MultipathTCP()

	rt := newRT(t, Config{Loops: 1})
	d := &Dialer{Runtime: rt}
	d.SetMultipathTCP(true)
	c, err := d.Dial("tcp", gl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := c.(*Conn).MultipathTCP()
	if err != nil || got != want {
		t.Errorf("MultipathTCP() = %v, %v; Go's net: %v", got, err, want)
	}
	plain, _ := rt.Dial("tcp", gl.Addr().String())
	defer plain.Close()
	if used, _ := plain.(*Conn).MultipathTCP(); used {
		t.Error("a plain Dial uses MPTCP")
	}
}

// TestReusePortSpreadsAccepts: with ReusePort each loop has its own
// listening socket; the kernel spreads connections over them and each
// connection stays on the loop that accepted it (no hand-off). Checked
// for Serve (a multishot accept per loop), for Accept, and for
// Config.ReusePort.
func TestReusePortSpreadsAccepts(t *testing.T) {
	const conns = 64
	for _, api := range []string{"serve", "accept", "config"} {
		t.Run(api, func(t *testing.T) {
			cfg := Config{Loops: 2}
			if api == "config" {
				cfg.ReusePort = true
			}
			rt, reg := newMetricsRT(t, cfg)
			var ln net.Listener
			var err error
			if api == "config" {
				ln, err = rt.Listen("tcp", "127.0.0.1:0")
			} else {
				ln, err = (&ListenConfig{Runtime: rt, ReusePort: true}).Listen(context.Background(), "tcp", "127.0.0.1:0")
			}
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			rl, ok := ln.(*reuseListener)
			if !ok || len(rl.subs) != 2 {
				t.Fatalf("listener %T, want a ReusePort group of 2 sockets", ln)
			}
			var mu sync.Mutex
			var accepted []*netFD
			opened := make(chan struct{}, conns)
			if api == "serve" {
				go rt.Serve(ln, HandlerFuncs{Open: func(c *CallbackConn) {
					mu.Lock()
					accepted = append(accepted, c.fd)
					mu.Unlock()
					opened <- struct{}{}
				}})
			} else {
				go func() {
					for {
						c, err := ln.Accept()
						if err != nil {
							return
						}
						mu.Lock()
						accepted = append(accepted, c.(*Conn).fd)
						mu.Unlock()
						opened <- struct{}{}
					}
				}()
			}
			dialStd(t, ln.Addr().String(), conns)
			for range conns {
				select {
				case <-opened:
				case <-time.After(10 * time.Second):
					t.Fatal("connections not accepted")
				}
			}
			mu.Lock()
			defer mu.Unlock()
			perSocket := map[*listener]int{}
			for _, n := range accepted {
				perSocket[n.ln]++
				if n.l != n.ln.fd.l {
					t.Errorf("connection accepted on loop %d runs on loop %d (handed off)", n.ln.fd.l.id, n.l.id)
				}
			}
			for i, s := range rl.subs {
				if perSocket[s] == 0 {
					t.Errorf("socket of loop %d accepted none of %d connections: %v", i, conns, perSocket)
				}
			}
			f := gather(t, reg)
			for _, loop := range []string{"0", "1"} {
				if v := f.sum("uringrt_connections_accepted_total", "loop", loop); v <= 0 {
					t.Errorf("connections_accepted_total{loop=%s} = %v", loop, v)
				}
			}
		})
	}
}

// TestReusePortListenerLife: a ReusePort group's Accept honours deadlines
// and Close, and closing it frees the port (every socket of it closed).
func TestReusePortListenerLife(t *testing.T) {
	rt := newRT(t, Config{Loops: 2, ReusePort: true})
	ln, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.(interface{ SetDeadline(time.Time) error }).SetDeadline(time.Now().Add(30 * time.Millisecond))
	if _, err := ln.Accept(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("Accept past the deadline: %v", err)
	}
	ln.(interface{ SetDeadline(time.Time) error }).SetDeadline(time.Time{})
	done := make(chan error, 1)
	go func() { _, err := ln.Accept(); done <- err }()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not wake Accept")
	}
	if err := ln.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
	// Every socket of the group is gone: the port can be bound without
	// SO_REUSEPORT.
	l2, err := net.Listen("tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("port still held after Close: %v", err)
	}
	l2.Close()
}

// TestDefaultRuntimeReleased: the default runtime behind runtime.Listen
// and runtime.Dial starts lazily and CloseDefault releases it with every
// goroutine (goleak clean); the next use starts a new one.
func TestDefaultRuntimeReleased(t *testing.T) {
	CloseDefault() // whatever an earlier test left
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for round := range 2 {
		ln, err := Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			c, err := ln.Accept()
			if err == nil {
				c.Write([]byte("hi"))
				c.Close()
			}
		}()
		c, err := DialContext(context.Background(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 2)
		if _, err := c.Read(b); err != nil || string(b) != "hi" {
			t.Fatalf("round %d: read %q, %v", round, b, err)
		}
		c.Close()
		ln.Close()
		if err := CloseDefault(); err != nil {
			t.Fatal(err)
		}
	}
	if err := CloseDefault(); err != nil {
		t.Errorf("CloseDefault without a default runtime: %v", err)
	}
}

// TestReusePortShutdown: Shutdown (and Close) of the runtime reaches a
// ReusePort group: a blocked Accept returns net.ErrClosed, Serve returns.
func TestReusePortShutdown(t *testing.T) {
	for _, api := range []string{"accept", "serve"} {
		t.Run(api, func(t *testing.T) {
			rt, err := New(Config{Loops: 2, ReusePort: true, Backend: BackendUring})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			ln, err := rt.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			if api == "accept" {
				go func() { _, err := ln.Accept(); done <- err }()
			} else {
				go func() { done <- rt.Serve(ln, EchoHandler{}) }()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := rt.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if api == "accept" && !errors.Is(err, net.ErrClosed) {
					t.Errorf("Accept after Shutdown: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s still blocked after Shutdown", api)
			}
		})
	}
}

// TestDialerFallbackRace: for "tcp" with IPv6 and IPv4 addresses, the
// second family starts after FallbackDelay while the first is still
// connecting (Happy Eyeballs, as net.Dialer), and the first is cancelled
// once the second wins; with FallbackDelay < 0 the addresses are tried in
// order only.
func TestDialerFallbackRace(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	ln, err := rt.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	addrs := []net.Addr{&net.TCPAddr{IP: net.IPv6loopback, Port: port}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}}
	// The IPv6 attempt hangs in Control until its context ends, as a
	// connect to an unreachable address would.
	v6Cancelled := make(chan struct{}, 1)
	hang := func(ctx context.Context, network, address string, c syscall.RawConn) error {
		if network == "tcp6" {
			<-ctx.Done()
			v6Cancelled <- struct{}{}
			return ctx.Err()
		}
		return nil
	}

	d := &Dialer{Runtime: rt, FallbackDelay: 20 * time.Millisecond, ControlContext: hang}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := rt.dialRace(ctx, d, "tcp", addrs)
	if err != nil {
		t.Fatalf("racing dial: %v", err)
	}
	if ip := c.RemoteAddr().(*net.TCPAddr).IP; ip.To4() == nil {
		t.Errorf("connected to %v, want the IPv4 fallback", c.RemoteAddr())
	}
	c.Close()
	select {
	case <-v6Cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the losing IPv6 attempt was not cancelled")
	}

	// Serial: the IPv4 address is never reached before the context ends.
	serial := &Dialer{Runtime: rt, FallbackDelay: -1, ControlContext: hang}
	sctx, scancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer scancel()
	if c, err := rt.dialRace(sctx, serial, "tcp", addrs); err == nil {
		c.Close()
		t.Error("serial dial reached the IPv4 address past a hanging IPv6 one")
	}
	<-v6Cancelled
}

// TestReusePortMaxConns: Config.MaxConns caps a ReusePort group's open
// connections as it caps one listener's, not each socket's.
func TestReusePortMaxConns(t *testing.T) {
	const max, conns = 4, 12
	rt, reg := newMetricsRT(t, Config{Loops: 2, ReusePort: true, MaxConns: max})
	ln := listenTCP(t, rt)
	var mu sync.Mutex
	open := 0
	go rt.Serve(ln, HandlerFuncs{Open: func(*CallbackConn) { mu.Lock(); open++; mu.Unlock() }})
	dialStd(t, ln.Addr().String(), conns)
	// Every connection is either served or rejected (closed at once).
	eventually(t, 10*time.Second, func() (bool, string) {
		mu.Lock()
		o := open
		mu.Unlock()
		rej := gather(t, reg).sum("uringrt_connections_rejected_total")
		return o+int(rej) == conns, fmt.Sprintf("open %d + rejected %v != %d", o, rej, conns)
	})
	mu.Lock()
	defer mu.Unlock()
	if open != max {
		t.Errorf("%d connections served over a ReusePort group with MaxConns %d", open, max)
	}
}

// TestAcceptedInheritListenerOptions: every connection accepted from one
// listener, not only the first (whose options initAccepted checks), has
// TCP_NODELAY and the keep-alive settings Go's net gives it, on both APIs,
// with the kernel's keep-alive timer running: the later ones get them from
// the listening socket (Linux copies them on accept) instead of five
// setsockopt calls each.
func TestAcceptedInheritListenerOptions(t *testing.T) {
	custom := net.KeepAliveConfig{Enable: true, Idle: 31 * time.Second, Interval: 7 * time.Second, Count: 4}
	cases := []struct {
		name string
		lka  time.Duration
		cfg  net.KeepAliveConfig
	}{
		{name: "defaults"},
		{name: "off", lka: -1},
		{name: "config", cfg: custom},
	}
	rt := newRT(t, Config{Loops: 1})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, want := stdKeepAlive(t, &net.Dialer{}, &net.ListenConfig{KeepAlive: tc.lka, KeepAliveConfig: tc.cfg})
			ln, err := (&ListenConfig{Runtime: rt, KeepAlive: tc.lka, KeepAliveConfig: tc.cfg}).Listen(context.Background(), "tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			for i := 0; i < 3; i++ {
				c, s := dialAccept(t, ln, func(addr string) (net.Conn, error) { return net.Dial("tcp", addr) })
				if got := keepAliveState(t, s); got != want {
					t.Errorf("accepted #%d: %+v, Go's net: %+v", i, got, want)
				}
				if nd := noDelay(t, s); nd != 1 {
					t.Errorf("accepted #%d: TCP_NODELAY %d, want 1", i, nd)
				}
				c.Close()
				s.Close()
			}
			if got := ln.(*listener).inherit.Load(); got != inheritYes {
				t.Errorf("listener inherit state %d, want inheritYes (%d): accepted sockets should inherit on Linux", got, inheritYes)
			}
		})
	}
	t.Run("callback", func(t *testing.T) {
		ln, err := rt.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		_, want := stdKeepAlive(t, &net.Dialer{}, &net.ListenConfig{})
		got := make(chan kaState, 3)
		nds := make(chan int, 3)
		h := &HandlerFuncs{Open: func(c *CallbackConn) {
			var s kaState
			fd := c.fd.fd
			s.on, _ = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE)
			s.idle, _ = unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPIDLE)
			s.intvl, _ = unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPINTVL)
			s.cnt, _ = unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPCNT)
			nd, _ := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY)
			got <- s
			nds <- nd
		}}
		go rt.Serve(ln, h)
		defer ln.Close()
		for i := 0; i < 3; i++ {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			select {
			case s := <-got:
				if s != want {
					t.Errorf("callback accepted #%d: %+v, Go's net: %+v", i, s, want)
				}
				if nd := <-nds; nd != 1 {
					t.Errorf("callback accepted #%d: TCP_NODELAY %d, want 1", i, nd)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("callback accept #%d: OnOpen not called in 10s", i)
			}
		}
	})
}

// noDelay reads TCP_NODELAY through c's SyscallConn.
func noDelay(t *testing.T, c net.Conn) int {
	t.Helper()
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	v := -1
	rc.Control(func(fd uintptr) { v, _ = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY) })
	return v
}

// TestReusePortAcceptCloseRace: the first Accept of a ReusePort group
// (which starts the group's accept goroutines) and Close at the same time.
// Close's wait for those goroutines raced with their start (a WaitGroup Add
// unordered with its Wait; the race detector caught it in a stress run of
// TestReusePortShutdown).
func TestReusePortAcceptCloseRace(t *testing.T) {
	rt := newRT(t, Config{Loops: 2, ReusePort: true})
	for i := 0; i < 100; i++ {
		ln, err := rt.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := ln.Accept(); done <- err }()
		ln.Close()
		select {
		case err := <-done:
			if !errors.Is(err, net.ErrClosed) {
				t.Fatalf("Accept after Close: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Accept still blocked 10 s after Close")
		}
	}
}
