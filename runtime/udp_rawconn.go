package uringrt

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

func (c *ringUDP) SyscallConn() (syscall.RawConn, error) {
	return packetRawConn{c}, nil
}

// errUDPRawRead is RawConn.Read's error under Config.UDPRecvMultishot.
var errUDPRawRead = fmt.Errorf("uringrt: RawConn.Read on a PacketConn under Config.UDPRecvMultishot: %w", errors.ErrUnsupported)

// packetRawConn is a PacketConn's syscall.RawConn.
type packetRawConn struct{ c *ringUDP }

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
