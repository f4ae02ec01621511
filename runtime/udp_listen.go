package uringrt

import (
	"context"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// ListenPacket is Default().ListenPacket: net.ListenPacket for UDP over
// io_uring.
func ListenPacket(network, address string) (*PacketConn, error) {
	rt, err := Default()
	if err != nil {
		return nil, err
	}
	return rt.ListenPacket(network, address)
}

// ListenUDP is Default().ListenUDP.
func ListenUDP(network string, laddr *net.UDPAddr) (*PacketConn, error) {
	rt, err := Default()
	if err != nil {
		return nil, err
	}
	return rt.ListenUDP(network, laddr)
}

// DialUDP is Default().DialUDP.
func DialUDP(network string, laddr, raddr *net.UDPAddr) (*PacketConn, error) {
	rt, err := Default()
	if err != nil {
		return nil, err
	}
	return rt.DialUDP(network, laddr, raddr)
}

// ListenPacket announces on the local address for networks "udp", "udp4"
// and "udp6", like net.ListenPacket (address resolution, dual stack and
// SO_BROADCAST are Go's net's, then the socket is driven by one of this
// runtime's loops). Runtime.Shutdown and Close close it. Errors are
// *net.OpError with Op "listen", as from net.ListenPacket (EADDRINUSE,
// EACCES, an unknown network, ...), or net.ErrClosed once the runtime is
// closed.
func (rt *Runtime) ListenPacket(network, address string) (*PacketConn, error) {
	if err := rt.udpCheck("listen", network); err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	pc, err := lc.ListenPacket(context.Background(), network, address)
	if err != nil {
		return nil, err
	}
	return rt.adoptUDP(pc.(*net.UDPConn), network, "listen", false)
}

// ListenUDP is ListenPacket with the address as *net.UDPAddr (nil or port
// 0: an ephemeral port), like net.ListenUDP.
func (rt *Runtime) ListenUDP(network string, laddr *net.UDPAddr) (*PacketConn, error) {
	if err := rt.udpCheck("listen", network); err != nil {
		return nil, err
	}
	uc, err := net.ListenUDP(network, laddr)
	if err != nil {
		return nil, err
	}
	return rt.adoptUDP(uc, network, "listen", false)
}

// DialUDP connects a UDP socket to raddr (from laddr, when not nil), like
// net.DialUDP: Read, Write and RemoteAddr then apply, the kernel drops
// datagrams from other senders, and an ICMP port unreachable makes the next
// read or write fail with ECONNREFUSED. Errors are *net.OpError with Op
// "dial".
func (rt *Runtime) DialUDP(network string, laddr, raddr *net.UDPAddr) (*PacketConn, error) {
	if err := rt.udpCheck("dial", network); err != nil {
		if raddr != nil {
			err.(*net.OpError).Addr = raddr
		}
		return nil, err
	}
	uc, err := net.DialUDP(network, laddr, raddr)
	if err != nil {
		return nil, err
	}
	return rt.adoptUDP(uc, network, "dial", true)
}

func (rt *Runtime) udpCheck(op, network string) error { // *net.OpError or nil
	switch network {
	case "udp", "udp4", "udp6":
	default:
		return &net.OpError{Op: op, Net: network, Err: net.UnknownNetworkError(network)}
	}
	rt.mu.Lock()
	closed := rt.closed
	rt.mu.Unlock()
	if closed {
		return &net.OpError{Op: op, Net: network, Err: net.ErrClosed}
	}
	return nil
}

// adoptUDP takes uc's socket into a loop (a nonblocking duplicate; uc is
// closed), or keeps uc under BackendStd. The PacketConn is closed with the
// runtime.
func (rt *Runtime) adoptUDP(uc *net.UDPConn, network, op string, connected bool) (*PacketConn, error) {
	c := &PacketConn{rt: rt}
	if rt.backend == BackendStd {
		c.sock = stdUDP{uc}
	} else {
		laddr, raddr := uc.LocalAddr(), uc.RemoteAddr()
		fd, err := detachUDP(uc)
		if err != nil {
			return nil, &net.OpError{Op: op, Net: network, Addr: raddr, Err: err}
		}
		family, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
		if err != nil {
			unix.Close(fd)
			return nil, &net.OpError{Op: op, Net: network, Addr: raddr, Err: os.NewSyscallError("getsockopt", err)}
		}
		nfd := newNetFD(rt, rt.pickLoop(), fd, family, network)
		nfd.local = laddr
		if connected {
			nfd.remot = raddr
		}
		r := &ringUDP{fd: nfd, rt: rt, family: family, connected: connected}
		if rt.cfg.UDPRecvMultishot {
			r.ur = startUDPRing(nfd)
		}
		if r.ur == nil {
			nfd.start(true)
		}
		c.sock = r
	}
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		c.Close()
		return nil, &net.OpError{Op: op, Net: network, Err: net.ErrClosed}
	}
	rt.listeners[c] = struct{}{}
	rt.mu.Unlock()
	return c, nil
}

// detachUDP takes a nonblocking, close-on-exec duplicate of uc's socket and
// closes uc.
func detachUDP(uc *net.UDPConn) (int, error) {
	f, err := uc.File()
	uc.Close()
	if err != nil {
		return -1, err
	}
	defer f.Close()
	fd, err := unix.Dup(int(f.Fd()))
	if err != nil {
		return -1, os.NewSyscallError("dup", err)
	}
	unix.CloseOnExec(fd)
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return -1, os.NewSyscallError("setnonblock", err)
	}
	return fd, nil
}
