package uringrt

import (
	"net"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/uringrt/uringrt/runtime/experiment"
)

// TestAcceptedConnAllocs counts the heap allocations of one accepted
// net.Conn's life as net/http lives it: Accept, its remote address, a read
// deadline set and cleared, a write deadline cleared, Close. The client is
// raw syscalls, which allocate nothing here, so the count is the server
// side's. Go's net makes 6 for the same (its netFD, TCPConn, sockaddr and
// TCPAddr, the read deadline's timer; its pollDesc comes from a cache);
// this path made 14 (the Conn, netFD and connIO apart, the address parsed
// through a unix.Sockaddr into a TCPAddr whose IP was copied twice, a
// closure and timer state for each deadline, even one only cleared).
func TestAcceptedConnAllocs(t *testing.T) {
	// Readers in Go's netpoller, as with the defaults from two Ps up
	// (with one P they wait on the loop's poll, whose ops are made at
	// once: one more allocation).
	rt := newRT(t, Config{Loops: 1, Switches: experiment.Switches{NetpollReadiness: true}})
	ln, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	sa := &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}
	one := func() {
		cfd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Connect(cfd, sa); err != nil {
			t.Fatal(err)
		}
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		_ = c.RemoteAddr()
		c.SetReadDeadline(time.Now().Add(time.Hour))
		c.SetReadDeadline(time.Time{})
		c.SetWriteDeadline(time.Time{})
		c.Close()
		unix.Close(cfd)
	}
	for i := 0; i < 50; i++ {
		one()
	}
	const n = 500
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	for i := 0; i < n; i++ {
		one()
	}
	runtime.ReadMemStats(&m1)
	per := float64(m1.Mallocs-m0.Mallocs) / n
	t.Logf("%.2f allocations, %.0f bytes per accepted connection", per, float64(m1.TotalAlloc-m0.TotalAlloc)/n)
	// fdAlloc, its closed channel, the remote address, the read
	// deadline's timer state, and its time.Timer with the callback: 6. A
	// little slack for the runtime's own.
	if per > 6.5 {
		t.Fatalf("%.2f allocations per accepted connection, want at most 6", per)
	}
}
