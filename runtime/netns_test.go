package uringrt

import (
	"errors"
	"math/rand"
	"net"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestNetnsFaultMatrix runs the echo server in one network namespace and
// its clients in another, joined by a veth pair, under real network
// faults: 5% random packet loss each way (nft), a 20 Mbit/s rate limit
// (tc tbf), and the link down for the first 2 s of the transfer. For the callback
// API and the net.Conn API under every pollable policy: every byte is
// echoed once and in order, a read deadline of the runtime's own dialed
// conn fires on time, Shutdown returns within its bound, and no
// descriptor or goroutine is left. Skips when namespaces cannot be made,
// unless URINGRT_REQUIRE_NETNS=1 (CI).
func TestNetnsFaultMatrix(t *testing.T) {
	tn := newTestNet(t)
	type fault struct {
		name  string
		apply func() (stop func()) // nil: none
	}
	faults := []fault{
		{"loss5", func() func() { return tn.loss(5) }},
		{"tbf20mbit", func() func() { return tn.rate("20mbit") }},
		{"linkdown2s", func() func() {
			done := make(chan struct{})
			up := tn.linkDown() // the transfer starts on a dead link
			go func() {
				defer close(done)
				time.Sleep(2 * time.Second)
				up()
			}()
			return func() { <-done }
		}},
	}
	for _, f := range faults {
		for _, s := range faultServers() {
			t.Run(f.name+"/"+s.name, func(t *testing.T) {
				netnsCase(t, tn, s, f.apply)
			})
		}
	}
}

func netnsCase(t *testing.T, tn *testNet, s faultServer, apply func() func()) {
	const conns, size = 4, 256 << 10
	const deadline = 300 * time.Millisecond
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	fds0 := countFDs(t)
	srv := startFaultEcho(t, s, func(rt *Runtime) (ln net.Listener, err error) {
		tn.in(tn.srvNS, func() { ln, err = rt.Listen("tcp", tn.srvIP+":0") })
		return ln, err
	})
	defer srv.abort()
	rt, ln := srv.rt, srv.ln
	var err error
	// Clients: Go's net in the client namespace, and one conn dialed by
	// the runtime itself (its deadline is checked).
	cs := make([]net.Conn, conns)
	var own net.Conn
	tn.in(tn.cliNS, func() {
		d := net.Dialer{Timeout: 10 * time.Second}
		for i := range cs {
			if cs[i], err = d.Dial("tcp", ln.Addr().String()); err != nil {
				return
			}
		}
		own, err = rt.Dial("tcp", ln.Addr().String())
	})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	stop := apply()
	errs := make(chan error, conns)
	for i, c := range cs {
		go func() {
			errs <- relEchoCheck(c, size, time.Minute, rand.New(rand.NewSource(int64(i))))
		}()
	}
	// The runtime's own conn: a read with nothing to read ends at its
	// deadline, under the fault too.
	start := time.Now()
	own.SetReadDeadline(start.Add(deadline))
	_, rerr := own.Read(make([]byte, 1))
	took := time.Since(start)
	if !errors.Is(rerr, os.ErrDeadlineExceeded) {
		t.Errorf("own conn Read: %v, want a deadline error", rerr)
	} else if took < deadline || took > deadline+3*time.Second {
		t.Errorf("own conn's %v read deadline fired after %v", deadline, took)
	}
	for range cs {
		if err := <-errs; err != nil {
			t.Errorf("echo: %v", err)
		}
	}
	stop()
	for _, c := range cs {
		c.Close()
	}
	own.Close()
	srv.stop(t)
	waitFDs(t, fds0)
}
