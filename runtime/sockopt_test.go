package uringrt

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// customKeepAlive is a KeepAliveConfig unlike Go's defaults in every field.
var customKeepAlive = net.KeepAliveConfig{Enable: true, Idle: 31 * time.Second, Interval: 7 * time.Second, Count: 4}

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

// TestKeepAliveLikeStd: accepted and dialed TCP connections get Go's
// keep-alive (on, 15 s idle and interval, 9 probes) by default, and the
// Dialer's and ListenConfig's KeepAlive / KeepAliveConfig mean what
// net.Dialer's and net.ListenConfig's do: compared with Go's net.
func TestKeepAliveLikeStd(t *testing.T) {
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
		{name: "config", kaCfg: customKeepAlive, lkaCfg: customKeepAlive},
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

// TestAcceptedInheritListenerOptions: every connection accepted from one
// listener, not only the first (whose options initAccepted checks), has
// TCP_NODELAY and the keep-alive settings Go's net gives it, on both APIs,
// with the kernel's keep-alive timer running: the later ones get them from
// the listening socket (Linux copies them on accept) instead of five
// setsockopt calls each.
func TestAcceptedInheritListenerOptions(t *testing.T) {
	cases := []struct {
		name string
		lka  time.Duration
		cfg  net.KeepAliveConfig
	}{
		{name: "defaults"},
		{name: "off", lka: -1},
		{name: "config", cfg: customKeepAlive},
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

// TestListenDeferAccept: ListenConfig.DeferAccept sets TCP_DEFER_ACCEPT on
// the listening socket, in whole seconds rounded up, with either backend
// and on every socket of a ReusePort group: a client that connects and
// says nothing is not accepted (its connect succeeds), and it is as soon as
// its first bytes come, which are then readable. A unix listener ignores it.
func TestListenDeferAccept(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   Config
		reuse bool
	}{
		{"uring", Config{Loops: 1}, false},
		{"uring-reuseport", Config{Loops: 2}, true},
		{"std", Config{Backend: BackendStd}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newRT(t, tc.cfg)
			lc := &ListenConfig{Runtime: rt, DeferAccept: 1500 * time.Millisecond, ReusePort: tc.reuse}
			ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			if tc.reuse {
				for i, sub := range ln.(*reuseListener).subs {
					if v := deferAcceptOf(t, sub); v <= 0 {
						t.Errorf("socket %d of the ReusePort group: TCP_DEFER_ACCEPT %d, want > 0", i, v)
					}
				}
			} else if v := deferAcceptOf(t, ln); v < 2 {
				// The kernel keeps retransmissions and reports them
				// back as seconds: 2 s (1.5 rounded up) reads 3.
				t.Errorf("TCP_DEFER_ACCEPT %d, want 2 s or more", v)
			}
			accepted := make(chan net.Conn, 1)
			go func() {
				c, err := ln.Accept()
				if err != nil {
					close(accepted)
					return
				}
				accepted <- c
			}()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			select {
			case s := <-accepted:
				s.Close()
				t.Fatal("a connection that sent nothing was accepted")
			case <-time.After(300 * time.Millisecond):
			}
			if _, err := c.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
			var s net.Conn
			select {
			case s = <-accepted:
			case <-time.After(10 * time.Second):
				t.Fatal("not accepted 10 s after its first byte")
			}
			if s == nil {
				t.Fatal("Accept failed")
			}
			defer s.Close()
			s.SetReadDeadline(time.Now().Add(10 * time.Second))
			b := make([]byte, 1)
			if _, err := s.Read(b); err != nil || b[0] != 'x' {
				t.Fatalf("first read: %q, %v", b, err)
			}
		})
	}
	t.Run("unix", func(t *testing.T) {
		rt := newRT(t, Config{Loops: 1})
		lc := &ListenConfig{Runtime: rt, DeferAccept: time.Second}
		ln, err := lc.Listen(context.Background(), "unix", t.TempDir()+"/s")
		if err != nil {
			t.Fatalf("a unix listener with DeferAccept: %v", err)
		}
		ln.Close()
	})
}

// deferAcceptOf reads TCP_DEFER_ACCEPT (seconds) of a listener.
func deferAcceptOf(t *testing.T, ln net.Listener) int {
	t.Helper()
	sc, ok := ln.(syscall.Conn)
	if !ok {
		t.Fatalf("%T is not a syscall.Conn", ln)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	v, gerr := -1, error(nil)
	if err := rc.Control(func(fd uintptr) { v, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_DEFER_ACCEPT) }); err != nil {
		t.Fatal(err)
	}
	if gerr != nil {
		t.Fatal(gerr)
	}
	return v
}
