package uringrt

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

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
