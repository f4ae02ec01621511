package uringrt

import (
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// PacketConn is a UDP socket driven by a uringrt loop, the counterpart of
// *net.UDPConn. It implements net.PacketConn and net.Conn (Read, Write and
// RemoteAddr are for a connected socket, from DialUDP), and has
// *net.UDPConn's ReadFromUDP, WriteToUDP, ReadMsgUDP, WriteMsgUDP (with
// control messages), their netip.AddrPort forms, SetReadBuffer,
// SetWriteBuffer, SyscallConn and File, plus golang.org/x/net/ipv4's
// ReadBatch, so that libraries which look for those methods (quic-go's
// OOBCapablePacketConn and batch reads, miekg/dns) use them.
//
// Every read and write is tried nonblocking in the caller's goroutine
// (recvmsg(2)/sendmsg(2)); on EAGAIN the goroutine parks until the loop's
// multishot poll (IORING_OP_POLL_ADD, needs Linux 5.13+ for multishot,
// single-shot re-armed before) reports the socket ready, so no goroutine
// blocks an OS thread. This holds whatever Config.Pollable says. With
// Config.UDPRecvMultishot reads instead take datagrams that a multishot
// IORING_OP_RECVMSG put in a provided buffer ring (Linux 6.0+).
//
// Datagram boundaries are kept: a read returns one datagram, cut to the
// buffer's length when longer (ReadMsgUDP reports MSG_TRUNC in flags); a
// write sends one datagram whole or fails (EMSGSIZE when too large).
// UDP GSO and GRO go through control messages as with Go's net:
// WriteMsgUDP with a UDP_SEGMENT cmsg (Linux 4.18+) sends one buffer as
// several datagrams; after setting UDP_GRO (Linux 5.0+) through
// SyscallConn, ReadMsgUDP may return coalesced datagrams with a UDP_GRO
// cmsg giving the segment size.
//
// Errors are those of *net.UDPConn: *net.OpError wrapping
// os.ErrDeadlineExceeded after a deadline (Timeout() reports true),
// net.ErrClosed after Close (also for a call blocked when Close came),
// net.ErrWriteToConnected for WriteTo on a connected socket, and
// *os.SyscallError with the errno otherwise (ECONNREFUSED on a connected
// socket after an ICMP port unreachable, EMSGSIZE, ...). Its methods are
// safe for concurrent use; concurrent reads (or writes) are serialized.
//
// With BackendStd, a PacketConn wraps a *net.UDPConn and forwards to it.
type PacketConn struct {
	fd        *netFD
	std       *net.UDPConn // BackendStd
	rt        *Runtime
	family    int      // AF_INET or AF_INET6
	connected bool     // from DialUDP
	ur        *udpRing // Config.UDPRecvMultishot: the multishot recvmsg
}

var (
	_ net.PacketConn = (*PacketConn)(nil)
	_ net.Conn       = (*PacketConn)(nil)
)

// opErr builds *net.UDPConn's error for op; addr is the peer named by the
// call (nil: the connected peer, if any).
func (c *PacketConn) opErr(op string, addr net.Addr, err error) error {
	e := &net.OpError{Op: op, Net: c.fd.net, Source: c.fd.local, Addr: addr, Err: err}
	if addr == nil && c.connected {
		e.Addr = c.fd.remot
	}
	return e
}

// setErr builds *net.UDPConn's error for an option or raw-conn call ("set",
// "raw-control", "raw-read", "raw-write"): Go's net names the local
// address as Addr there, and no Source.
func (c *PacketConn) setErr(op string, err error) error {
	return &net.OpError{Op: op, Net: c.fd.net, Addr: c.fd.local, Err: err}
}

// Close closes the socket: blocked reads and writes return net.ErrClosed,
// then the fd is closed once the loop's poll on it is cancelled. A second
// Close returns an error wrapping net.ErrClosed.
func (c *PacketConn) Close() error {
	c.rt.mu.Lock()
	delete(c.rt.listeners, c)
	c.rt.mu.Unlock()
	if c.std != nil {
		return c.std.Close()
	}
	if err := c.fd.close(); err != nil {
		return c.opErr("close", nil, err)
	}
	if c.ur != nil {
		c.ur.close()
	}
	return nil
}

// LocalAddr returns the local address, a *net.UDPAddr.
func (c *PacketConn) LocalAddr() net.Addr {
	if c.std != nil {
		return c.std.LocalAddr()
	}
	return c.fd.local
}

// RemoteAddr returns the connected peer's *net.UDPAddr, or nil when the
// socket is not connected.
func (c *PacketConn) RemoteAddr() net.Addr {
	if c.std != nil {
		return c.std.RemoteAddr()
	}
	if !c.connected || c.fd.remot == nil {
		return nil
	}
	return c.fd.remot
}

// SetDeadline sets the read and write deadlines (see net.Conn). A zero t
// clears them. A deadline that passes wakes a blocked call, which returns
// an error wrapping os.ErrDeadlineExceeded.
func (c *PacketConn) SetDeadline(t time.Time) error {
	if c.std != nil {
		return c.std.SetDeadline(t)
	}
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// SetReadDeadline sets the deadline for reads, pending ones included.
func (c *PacketConn) SetReadDeadline(t time.Time) error {
	if c.std != nil {
		return c.std.SetReadDeadline(t)
	}
	return c.setDeadline(&c.fd.rdl, t, c.fd.rd.interrupt)
}

// SetWriteDeadline sets the deadline for writes, pending ones included.
func (c *PacketConn) SetWriteDeadline(t time.Time) error {
	if c.std != nil {
		return c.std.SetWriteDeadline(t)
	}
	return c.setDeadline(&c.fd.wdl, t, c.fd.wr.interrupt)
}

// setDeadline sets d to t; when it passes, wake interrupts the parked
// reader or writer.
func (c *PacketConn) setDeadline(d *deadline, t time.Time, wake func()) error {
	if c.fd.closing.Load() {
		return c.setErr("set", net.ErrClosed)
	}
	d.set(t, wake)
	return nil
}

// SetReadBuffer sets SO_RCVBUF in bytes (the kernel doubles it, capped by
// net.core.rmem_max).
func (c *PacketConn) SetReadBuffer(bytes int) error {
	if c.std != nil {
		return c.std.SetReadBuffer(bytes)
	}
	return c.setsockopt(unix.SOL_SOCKET, unix.SO_RCVBUF, bytes)
}

// SetWriteBuffer sets SO_SNDBUF in bytes (the kernel doubles it, capped by
// net.core.wmem_max).
func (c *PacketConn) SetWriteBuffer(bytes int) error {
	if c.std != nil {
		return c.std.SetWriteBuffer(bytes)
	}
	return c.setsockopt(unix.SOL_SOCKET, unix.SO_SNDBUF, bytes)
}

func (c *PacketConn) setsockopt(level, opt, v int) error {
	fd := c.fd
	if !fd.incref() {
		return c.setErr("set", net.ErrClosed)
	}
	defer fd.decref()
	if err := unix.SetsockoptInt(fd.fd, level, opt, v); err != nil {
		return c.setErr("set", sysError("setsockopt", err.(syscall.Errno)))
	}
	return nil
}

// File returns a duplicate of the socket (F_DUPFD_CLOEXEC) as an *os.File,
// as *net.UDPConn's File does; closing one does not close the other. The
// duplicate shares the socket's file status, nonblocking included.
func (c *PacketConn) File() (*os.File, error) {
	if c.std != nil {
		return c.std.File()
	}
	fd := c.fd
	if !fd.incref() {
		return nil, c.opErr("file", nil, net.ErrClosed)
	}
	defer fd.decref()
	nfd, err := unix.FcntlInt(uintptr(fd.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, c.opErr("file", nil, sysError("fcntl", err.(syscall.Errno)))
	}
	return os.NewFile(uintptr(nfd), "udp:"+c.fd.local.String()), nil
}
