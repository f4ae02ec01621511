package runtime

import (
	"context"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"
	"unsafe"

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
	c := &PacketConn{rt: rt, connected: connected}
	if rt.backend == BackendStd {
		c.std = uc
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
		c.fd, c.family = nfd, family
		if rt.cfg.UDPRecvMultishot {
			c.ur = startUDPRing(nfd)
		}
		if c.ur == nil {
			nfd.start(true)
		}
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

// opErr builds *net.UDPConn's error for op; addr is the peer named by the
// call (nil: the connected peer, if any).
func (c *PacketConn) opErr(op string, addr net.Addr, err error) error {
	e := &net.OpError{Op: op, Net: c.fd.net, Source: c.fd.local, Addr: addr, Err: err}
	if addr == nil && c.connected {
		e.Addr = c.fd.remot
	}
	if e.Source == nil {
		e.Source = nil // keep the interface nil, not a typed nil
	}
	if e.Addr == nil {
		e.Addr = nil
	}
	return e
}

// setErr builds *net.UDPConn's error for an option or raw-conn call ("set",
// "raw-control", "raw-read", "raw-write"): Go's net names the local
// address as Addr there, and no Source.
func (c *PacketConn) setErr(op string, err error) error {
	e := &net.OpError{Op: op, Net: c.fd.net, Addr: c.fd.local, Err: err}
	if e.Addr == nil {
		e.Addr = nil
	}
	return e
}

// readMsg reads one datagram: nonblock try, then park on the loop's poll.
// call names the syscall in errors, as Go's net names it.
func (c *PacketConn) readMsg(p, oob []byte, flags int, from *unix.RawSockaddrAny, op, call string) (n, oobn, rflags int, err error) {
	c.fd.rmu.Lock()
	defer c.fd.rmu.Unlock()
	n, oobn, rflags, _, err = c.readMsgLocked(p, oob, flags, from, op, call, true)
	return n, oobn, rflags, err
}

// readMsgLocked is readMsg with the read lock held. With park false it
// does not wait: a socket with nothing queued gives ok false.
func (c *PacketConn) readMsgLocked(p, oob []byte, flags int, from *unix.RawSockaddrAny, op, call string, park bool) (n, oobn, rflags int, ok bool, err error) {
	fd := c.fd
	polled := false
	for {
		if fd.closing.Load() {
			return 0, 0, 0, false, c.opErr(op, nil, net.ErrClosed)
		}
		if fd.rdl.expired.Load() {
			return 0, 0, 0, false, c.opErr(op, nil, os.ErrDeadlineExceeded)
		}
		if c.ur != nil {
			r, got := c.ur.pop()
			if !got {
				c.ur.rearm()
				if !park {
					return 0, 0, 0, false, nil
				}
				polled = true
				fd.rd.wait(fd.abortRead)
				continue
			}
			if r.errno != 0 {
				return 0, 0, 0, false, c.opErr(op, nil, sysError(call, r.errno))
			}
			n, oobn, rflags = c.ur.copyOut(r, p, oob, from)
			fd.l.udp.countIn(c.rt, n, oob[:oobn], rflags, polled)
			return n, oobn, rflags, true, nil
		}
		if !fd.incref() {
			continue
		}
		var errno syscall.Errno
		n, oobn, rflags, errno = rawRecvmsg(fd.fd, p, oob, flags, from)
		fd.decref()
		switch errno {
		case 0:
			fd.l.udp.countIn(c.rt, n, oob[:oobn], rflags, polled)
			return n, oobn, rflags, true, nil
		case syscall.EAGAIN:
			if !park {
				return 0, 0, 0, false, nil
			}
			polled = true
			fd.rearmPollIn()
			fd.rd.wait(fd.abortRead)
			continue
		case syscall.EINTR:
			continue
		}
		return 0, 0, 0, false, c.opErr(op, nil, sysError(call, errno))
	}
}

// writeMsg sends one datagram to to (nil: the connected peer).
func (c *PacketConn) writeMsg(p, oob []byte, to *udpSockaddr, addr net.Addr, op, call string) (int, error) {
	fd := c.fd
	fd.wmu.Lock()
	defer fd.wmu.Unlock()
	var sa unsafe.Pointer
	var salen uint32
	if to != nil {
		sa, salen = unsafe.Pointer(&to.raw), to.len
	}
	polled := false
	for {
		if fd.closing.Load() {
			return 0, c.opErr(op, addr, net.ErrClosed)
		}
		if fd.wdl.expired.Load() {
			return 0, c.opErr(op, addr, os.ErrDeadlineExceeded)
		}
		if !fd.incref() {
			continue
		}
		n, errno := rawSendmsg(fd.fd, p, oob, sa, salen)
		fd.decref()
		switch errno {
		case 0:
			fd.l.udp.countOut(c.rt, n, oob, polled)
			return n, nil
		case syscall.EAGAIN:
			polled = true
			fd.l.post(request{kind: reqArm, op: &fd.pollOut})
			fd.wr.wait(fd.abortWrite)
			continue
		case syscall.EINTR:
			continue
		}
		return 0, c.opErr(op, addr, sysError(call, errno))
	}
}

// ReadFromUDPAddrPort reads one datagram into b and returns its length (at
// most len(b); the rest of a longer datagram is discarded) and sender.
func (c *PacketConn) ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error) {
	if c.std != nil {
		return c.std.ReadFromUDPAddrPort(b)
	}
	var from unix.RawSockaddrAny
	n, _, _, err := c.readMsg(b, nil, 0, &from, "read", "recvfrom")
	if err != nil {
		return 0, netip.AddrPort{}, err
	}
	ap, _ := rawAddrPort(&from)
	return n, ap, nil
}

// ReadFromUDP is ReadFromUDPAddrPort with the sender as *net.UDPAddr.
func (c *PacketConn) ReadFromUDP(b []byte) (int, *net.UDPAddr, error) {
	if c.std != nil {
		return c.std.ReadFromUDP(b)
	}
	var from unix.RawSockaddrAny
	n, _, _, err := c.readMsg(b, nil, 0, &from, "read", "recvfrom")
	if err != nil {
		return 0, nil, err
	}
	return n, rawUDPAddr(&from), nil
}

// ReadFrom implements net.PacketConn: ReadFromUDP with a net.Addr (a
// *net.UDPAddr).
func (c *PacketConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, a, err := c.ReadFromUDP(b)
	if a == nil {
		return n, nil, err
	}
	return n, a, err
}

// ReadMsgUDPAddrPort reads one datagram into b and its control messages
// into oob (IP_PKTINFO, IP_TOS, UDP_GRO, ... as enabled on the socket).
// flags are the kernel's msg_flags: MSG_TRUNC when the datagram was longer
// than b, MSG_CTRUNC when oob was too short.
func (c *PacketConn) ReadMsgUDPAddrPort(b, oob []byte) (n, oobn, flags int, addr netip.AddrPort, err error) {
	if c.std != nil {
		return c.std.ReadMsgUDPAddrPort(b, oob)
	}
	var from unix.RawSockaddrAny
	n, oobn, flags, err = c.readMsg(b, oob, 0, &from, "read", "recvmsg")
	if err != nil {
		return 0, 0, 0, netip.AddrPort{}, err
	}
	addr, _ = rawAddrPort(&from)
	return n, oobn, flags, addr, nil
}

// ReadMsgUDP is ReadMsgUDPAddrPort with the sender as *net.UDPAddr.
func (c *PacketConn) ReadMsgUDP(b, oob []byte) (n, oobn, flags int, addr *net.UDPAddr, err error) {
	if c.std != nil {
		return c.std.ReadMsgUDP(b, oob)
	}
	var from unix.RawSockaddrAny
	n, oobn, flags, err = c.readMsg(b, oob, 0, &from, "read", "recvmsg")
	if err != nil {
		return 0, 0, 0, nil, err
	}
	return n, oobn, flags, rawUDPAddr(&from), nil
}

// Read reads one datagram on a connected socket (see ReadFromUDP).
// Read(nil) returns 0, nil at once, as *net.UDPConn's does.
func (c *PacketConn) Read(b []byte) (int, error) {
	if c.std != nil {
		return c.std.Read(b)
	}
	if len(b) == 0 {
		if c.fd.closing.Load() {
			return 0, c.opErr("read", nil, net.ErrClosed)
		}
		return 0, nil
	}
	n, _, _, err := c.readMsg(b, nil, 0, nil, "read", "read")
	return n, err
}

// WriteToUDPAddrPort sends b as one datagram to addr. It returns len(b) or
// an error; on a connected socket it fails with net.ErrWriteToConnected.
func (c *PacketConn) WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error) {
	if c.std != nil {
		return c.std.WriteToUDPAddrPort(b, addr)
	}
	ua := net.UDPAddrFromAddrPort(addr)
	if c.connected {
		return 0, c.opErr("write", ua, net.ErrWriteToConnected)
	}
	var to udpSockaddr
	if err := to.set(c.family, addr); err != nil {
		return 0, c.opErr("write", ua, err)
	}
	return c.writeMsg(b, nil, &to, ua, "write", "sendto")
}

// WriteToUDP is WriteToUDPAddrPort with addr as *net.UDPAddr.
func (c *PacketConn) WriteToUDP(b []byte, addr *net.UDPAddr) (int, error) {
	if c.std != nil {
		return c.std.WriteToUDP(b, addr)
	}
	if c.connected {
		return 0, c.opErr("write", addr, net.ErrWriteToConnected)
	}
	if addr == nil {
		return 0, c.opErr("write", nil, errMissingAddress)
	}
	var to udpSockaddr
	if err := to.set(c.family, udpAddrPort(addr)); err != nil {
		return 0, c.opErr("write", addr, err)
	}
	return c.writeMsg(b, nil, &to, addr, "write", "sendto")
}

// errMissingAddress is Go's net's error for a write with no address.
var errMissingAddress = &net.AddrError{Err: "missing address"}

// WriteTo implements net.PacketConn: addr must be a *net.UDPAddr
// (otherwise EINVAL, as *net.UDPConn answers).
func (c *PacketConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	if c.std != nil {
		return c.std.WriteTo(b, addr)
	}
	a, ok := addr.(*net.UDPAddr)
	if !ok {
		return 0, c.opErr("write", addr, syscall.EINVAL)
	}
	return c.WriteToUDP(b, a)
}

// WriteMsgUDPAddrPort sends b as one datagram with the control messages in
// oob (IP_PKTINFO for the source address, IP_TOS, UDP_SEGMENT for GSO:
// one sendmsg then leaves as several datagrams of that size). On a
// connected socket addr must be the zero AddrPort; on an unconnected one
// it is required. It returns len(b) and len(oob), or an error.
func (c *PacketConn) WriteMsgUDPAddrPort(b, oob []byte, addr netip.AddrPort) (n, oobn int, err error) {
	if c.std != nil {
		return c.std.WriteMsgUDPAddrPort(b, oob, addr)
	}
	var ua net.Addr
	if addr.IsValid() {
		ua = net.UDPAddrFromAddrPort(addr)
	}
	if c.connected && addr.IsValid() {
		return 0, 0, c.opErr("write", ua, net.ErrWriteToConnected)
	}
	if !c.connected && !addr.IsValid() {
		return 0, 0, c.opErr("write", nil, errMissingAddress)
	}
	var to *udpSockaddr
	if addr.IsValid() {
		to = new(udpSockaddr)
		if err := to.set(c.family, addr); err != nil {
			return 0, 0, c.opErr("write", ua, err)
		}
	}
	n, err = c.writeMsg(b, oob, to, ua, "write", "sendmsg")
	if err != nil {
		return n, 0, err
	}
	return n, len(oob), nil
}

// WriteMsgUDP is WriteMsgUDPAddrPort with addr as *net.UDPAddr (nil on a
// connected socket).
func (c *PacketConn) WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (n, oobn int, err error) {
	if c.std != nil {
		return c.std.WriteMsgUDP(b, oob, addr)
	}
	if addr == nil {
		return c.WriteMsgUDPAddrPort(b, oob, netip.AddrPort{})
	}
	if c.connected {
		return 0, 0, c.opErr("write", addr, net.ErrWriteToConnected)
	}
	var to udpSockaddr
	if err := to.set(c.family, udpAddrPort(addr)); err != nil {
		return 0, 0, c.opErr("write", addr, err)
	}
	n, err = c.writeMsg(b, oob, &to, addr, "write", "sendmsg")
	if err != nil {
		return n, 0, err
	}
	return n, len(oob), nil
}

// Write sends b as one datagram on a connected socket; on an unconnected
// one it fails with EDESTADDRREQ, as *net.UDPConn's does.
func (c *PacketConn) Write(b []byte) (int, error) {
	if c.std != nil {
		return c.std.Write(b)
	}
	return c.writeMsg(b, nil, nil, nil, "write", "write")
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
	fd := c.fd
	if fd.closing.Load() {
		return c.setErr("set", net.ErrClosed)
	}
	fd.rdl.set(t, fd.rd.interrupt)
	return nil
}

// SetWriteDeadline sets the deadline for writes, pending ones included.
func (c *PacketConn) SetWriteDeadline(t time.Time) error {
	if c.std != nil {
		return c.std.SetWriteDeadline(t)
	}
	fd := c.fd
	if fd.closing.Load() {
		return c.setErr("set", net.ErrClosed)
	}
	fd.wdl.set(t, fd.wr.interrupt)
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
