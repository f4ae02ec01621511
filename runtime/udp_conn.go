package uringrt

import (
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
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
	sock udpSocket // *ringUDP, or stdUDP under BackendStd
	rt   *Runtime
}

var (
	_ net.PacketConn = (*PacketConn)(nil)
	_ net.Conn       = (*PacketConn)(nil)
	_ udpSocket      = (*ringUDP)(nil)
	_ udpSocket      = stdUDP{}
)

// udpSocket is the one seam between a PacketConn and what drives it: a
// loop (*ringUDP) or, under BackendStd, Go's *net.UDPConn (stdUDP).
type udpSocket interface {
	Close() error
	LocalAddr() net.Addr
	RemoteAddr() net.Addr
	SetDeadline(t time.Time) error
	SetReadDeadline(t time.Time) error
	SetWriteDeadline(t time.Time) error
	SetReadBuffer(bytes int) error
	SetWriteBuffer(bytes int) error
	File() (*os.File, error)
	ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error)
	ReadFromUDP(b []byte) (int, *net.UDPAddr, error)
	ReadMsgUDPAddrPort(b, oob []byte) (n, oobn, flags int, addr netip.AddrPort, err error)
	ReadMsgUDP(b, oob []byte) (n, oobn, flags int, addr *net.UDPAddr, err error)
	Read(b []byte) (int, error)
	WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error)
	WriteToUDP(b []byte, addr *net.UDPAddr) (int, error)
	WriteTo(b []byte, addr net.Addr) (int, error)
	WriteMsgUDPAddrPort(b, oob []byte, addr netip.AddrPort) (n, oobn int, err error)
	WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (n, oobn int, err error)
	Write(b []byte) (int, error)
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
	SyscallConn() (syscall.RawConn, error)
}

// stdUDP is BackendStd's PacketConn: Go's *net.UDPConn, plus the batch
// read of golang.org/x/net/ipv4.
type stdUDP struct{ *net.UDPConn }

// ReadBatch reads up to len(ms) datagrams with recvmmsg(2).
func (s stdUDP) ReadBatch(ms []ipv4.Message, flags int) (int, error) {
	return ipv4.NewPacketConn(s.UDPConn).ReadBatch(ms, flags)
}

// Close closes the socket: blocked reads and writes return net.ErrClosed,
// then the fd is closed once the loop's poll on it is cancelled. A second
// Close returns an error wrapping net.ErrClosed.
func (c *PacketConn) Close() error {
	c.rt.mu.Lock()
	delete(c.rt.listeners, c)
	c.rt.mu.Unlock()
	return c.sock.Close()
}

// LocalAddr returns the local address, a *net.UDPAddr.
func (c *PacketConn) LocalAddr() net.Addr {
	return c.sock.LocalAddr()
}

// RemoteAddr returns the connected peer's *net.UDPAddr, or nil when the
// socket is not connected.
func (c *PacketConn) RemoteAddr() net.Addr {
	return c.sock.RemoteAddr()
}

// SetDeadline sets the read and write deadlines (see net.Conn). A zero t
// clears them. A deadline that passes wakes a blocked call, which returns
// an error wrapping os.ErrDeadlineExceeded.
func (c *PacketConn) SetDeadline(t time.Time) error {
	return c.sock.SetDeadline(t)
}

// SetReadDeadline sets the deadline for reads, pending ones included.
func (c *PacketConn) SetReadDeadline(t time.Time) error {
	return c.sock.SetReadDeadline(t)
}

// SetWriteDeadline sets the deadline for writes, pending ones included.
func (c *PacketConn) SetWriteDeadline(t time.Time) error {
	return c.sock.SetWriteDeadline(t)
}

// SetReadBuffer sets SO_RCVBUF in bytes (the kernel doubles it, capped by
// net.core.rmem_max).
func (c *PacketConn) SetReadBuffer(bytes int) error {
	return c.sock.SetReadBuffer(bytes)
}

// SetWriteBuffer sets SO_SNDBUF in bytes (the kernel doubles it, capped by
// net.core.wmem_max).
func (c *PacketConn) SetWriteBuffer(bytes int) error {
	return c.sock.SetWriteBuffer(bytes)
}

// File returns a duplicate of the socket (F_DUPFD_CLOEXEC) as an *os.File,
// as *net.UDPConn's File does; closing one does not close the other. The
// duplicate shares the socket's file status, nonblocking included.
func (c *PacketConn) File() (*os.File, error) {
	return c.sock.File()
}

// ReadFromUDPAddrPort reads one datagram into b and returns its length (at
// most len(b); the rest of a longer datagram is discarded) and sender.
func (c *PacketConn) ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error) {
	return c.sock.ReadFromUDPAddrPort(b)
}

// ReadFromUDP is ReadFromUDPAddrPort with the sender as *net.UDPAddr.
func (c *PacketConn) ReadFromUDP(b []byte) (int, *net.UDPAddr, error) {
	return c.sock.ReadFromUDP(b)
}

// ReadFrom implements net.PacketConn: ReadFromUDP with a net.Addr (a
// *net.UDPAddr).
func (c *PacketConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, a, err := c.sock.ReadFromUDP(b)
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
	return c.sock.ReadMsgUDPAddrPort(b, oob)
}

// ReadMsgUDP is ReadMsgUDPAddrPort with the sender as *net.UDPAddr.
func (c *PacketConn) ReadMsgUDP(b, oob []byte) (n, oobn, flags int, addr *net.UDPAddr, err error) {
	return c.sock.ReadMsgUDP(b, oob)
}

// Read reads one datagram on a connected socket (see ReadFromUDP).
// Read(nil) returns 0, nil at once, as *net.UDPConn's does.
func (c *PacketConn) Read(b []byte) (int, error) {
	return c.sock.Read(b)
}

// WriteToUDPAddrPort sends b as one datagram to addr. It returns len(b) or
// an error; on a connected socket it fails with net.ErrWriteToConnected.
func (c *PacketConn) WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error) {
	return c.sock.WriteToUDPAddrPort(b, addr)
}

// WriteToUDP is WriteToUDPAddrPort with addr as *net.UDPAddr.
func (c *PacketConn) WriteToUDP(b []byte, addr *net.UDPAddr) (int, error) {
	return c.sock.WriteToUDP(b, addr)
}

// WriteTo implements net.PacketConn: addr must be a *net.UDPAddr
// (otherwise EINVAL, as *net.UDPConn answers).
func (c *PacketConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	return c.sock.WriteTo(b, addr)
}

// WriteMsgUDPAddrPort sends b as one datagram with the control messages in
// oob (IP_PKTINFO for the source address, IP_TOS, UDP_SEGMENT for GSO:
// one sendmsg then leaves as several datagrams of that size). On a
// connected socket addr must be the zero AddrPort; on an unconnected one
// it is required. It returns len(b) and len(oob), or an error.
func (c *PacketConn) WriteMsgUDPAddrPort(b, oob []byte, addr netip.AddrPort) (n, oobn int, err error) {
	return c.sock.WriteMsgUDPAddrPort(b, oob, addr)
}

// WriteMsgUDP is WriteMsgUDPAddrPort with addr as *net.UDPAddr (nil on a
// connected socket).
func (c *PacketConn) WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (n, oobn int, err error) {
	return c.sock.WriteMsgUDP(b, oob, addr)
}

// Write sends b as one datagram on a connected socket; on an unconnected
// one it fails with EDESTADDRREQ, as *net.UDPConn's does.
func (c *PacketConn) Write(b []byte) (int, error) {
	return c.sock.Write(b)
}

// ReadBatch reads up to len(ms) datagrams, as golang.org/x/net/ipv4's
// PacketConn.ReadBatch does with recvmmsg(2): it waits (through the loop,
// like ReadFrom) for the first, then takes those already queued without
// waiting, and returns how many it filled. Each message gets its datagram
// in Buffers[0] (further buffers are left alone), N, its control messages
// in OOB and NN, Flags (MSG_TRUNC, MSG_CTRUNC) and Addr (*net.UDPAddr).
// flags are recvmsg(2) flags (0 usually; ignored under
// Config.UDPRecvMultishot). quic-go reads through this method when it is
// there, so it works under Config.UDPRecvMultishot too, where SyscallConn's
// Read cannot. Errors are ReadMsgUDP's, for the first datagram; a later
// one's error (a pending ICMP error such as ECONNREFUSED) ends the batch
// and is dropped, as the socket's pending error is consumed by the read.
func (c *PacketConn) ReadBatch(ms []ipv4.Message, flags int) (int, error) {
	return c.sock.ReadBatch(ms, flags)
}

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
	return c.sock.SyscallConn()
}
