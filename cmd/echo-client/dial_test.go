package main

import (
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// slowListener hands out one connection per pause: with a listen backlog of
// 0 the kernel queues one finished handshake and drops the SYNs beyond it,
// so every other dial waits for its SYN's first retransmission (1 s).
type slowListener struct {
	net.Listener
	pause time.Duration
}

func (l slowListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		time.Sleep(l.pause)
	}
	return c, err
}

// listenBacklog0 listens on 127.0.0.1:0 with a backlog of 0 (net.Listen
// always asks for net.core.somaxconn).
func listenBacklog0(t *testing.T) net.Listener {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		unix.Close(fd)
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 0); err != nil {
		unix.Close(fd)
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "listener")
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// TestDialTimeoutPerDial: -dial-timeout bounds each dial, not all of them
// together. Here each dial takes at most about 1 s (one SYN retransmission)
// and all 8 together 3 s or more, against a 2.5 s timeout. Before the fix
// -engine uring gave the whole dial phase -dial-timeout and failed with
// "timed out" (as it did at 15,000 connections against echo-server).
func TestDialTimeoutPerDial(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for SYN retransmissions (seconds)")
	}
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			addr := serveOn(t, slowListener{listenBacklog0(t), 100 * time.Millisecond}, echo)
			start := time.Now()
			sum := runJSON(t, addr, "-engine", eng, "-c", "8", "-dial-concurrency", "1", "-dial-timeout", "2500ms",
				"-d", "100ms", "-warmup", "0s")
			t.Logf("run took %v", time.Since(start))
			if sum.Conns != 8 || sum.Errors != 0 {
				t.Errorf("conns=%d errors=%d, want 8 and 0", sum.Conns, sum.Errors)
			}
		})
	}
}

// TestManyConnections: a few thousand connections open, carry traffic and
// close on both engines, in closed and open loop (the 15,000 of the
// README's check need a server in another process: the descriptor limit is
// per process).
func TestManyConnections(t *testing.T) {
	const conns = 2000
	addr := startServer(t, echo)
	for _, eng := range engines {
		for _, mode := range [][]string{nil, {"-rate", strconv.Itoa(10 * conns)}} {
			t.Run(eng+" "+strconv.Itoa(len(mode)), func(t *testing.T) {
				sum := runJSON(t, addr, append([]string{"-engine", eng, "-c", strconv.Itoa(conns), "-d", "500ms", "-warmup", "200ms"}, mode...)...)
				if sum.Conns != conns || sum.Errors != 0 || sum.TPS <= 0 {
					t.Errorf("conns=%d errors=%d tps=%d, want %d, 0, > 0", sum.Conns, sum.Errors, sum.TPS, conns)
				}
			})
		}
	}
}
