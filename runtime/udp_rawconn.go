package uringrt

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// SyscallConn returns the socket as a syscall.RawConn, as *net.UDPConn's
// SyscallConn does: Control runs f with the descriptor (setsockopt and the
// like); Read and Write run f until it returns true, and each time it
// returns false (the call it made found EAGAIN) wait for readiness through
// the loop's poll, so libraries doing their own nonblocking I/O on the
// descriptor (golang.org/x/net/ipv4's recvmmsg batches, used by quic-go)
// park instead of blocking a thread. Read and Write honour the deadlines
// and Close, returning *net.OpError with Op "raw-read"/"raw-write"
// ("raw-control" for Control after Close).
func (c *PacketConn) SyscallConn() (syscall.RawConn, error) {
	if c.std != nil {
		return c.std.SyscallConn()
	}
	return packetRawConn{c}, nil
}

// errUDPRawRead is RawConn.Read's error under Config.UDPRecvMultishot.
var errUDPRawRead = fmt.Errorf("uringrt: RawConn.Read on a PacketConn under Config.UDPRecvMultishot: %w", errors.ErrUnsupported)

// packetRawConn is a PacketConn's syscall.RawConn.
type packetRawConn struct{ c *PacketConn }

// Control runs f with the descriptor, which stays open until f returns.
func (r packetRawConn) Control(f func(fd uintptr)) error {
	fd := r.c.fd
	if !fd.incref() {
		return r.c.setErr("raw-control", net.ErrClosed)
	}
	defer fd.decref()
	f(uintptr(fd.fd))
	return nil
}

// Read runs f until it returns true, parking on the loop's poll for
// readability after each false.
func (r packetRawConn) Read(f func(fd uintptr) bool) error {
	if r.c.ur != nil {
		// The multishot recvmsg takes the datagrams: f would find none.
		return r.c.setErr("raw-read", errUDPRawRead)
	}
	return r.c.fd.rawConnIO(false, f, r.c.setErr)
}

// Write runs f until it returns true, parking on the loop's POLLOUT after
// each false.
func (r packetRawConn) Write(f func(fd uintptr) bool) error {
	return r.c.fd.rawConnIO(true, f, r.c.setErr)
}
