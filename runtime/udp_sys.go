package uringrt

import (
	"net"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawRecvmsg is the nonblock try of a datagram read: one recvmsg(2) on a
// nonblocking socket into p (and oob for control messages), filling from
// with the sender's address. It never blocks, so it skips the scheduler's
// syscall hand-off. rflags are the kernel's msg_flags (MSG_TRUNC when the
// datagram was longer than p, MSG_CTRUNC when oob was too short).
func rawRecvmsg(fd int, p, oob []byte, flags int, from *unix.RawSockaddrAny) (n, oobn, rflags int, errno syscall.Errno) {
	var name unsafe.Pointer
	var namelen uint32
	if from != nil {
		name, namelen = unsafe.Pointer(from), uint32(unsafe.Sizeof(*from))
	}
	return rawMsg(syscall.SYS_RECVMSG, fd, p, oob, name, namelen, flags)
}

// rawSendmsg is the nonblock try of a datagram write: one sendmsg(2) of p
// (and oob) to the address to (nil on a connected socket). A datagram is
// sent whole or not at all (EAGAIN, EMSGSIZE). MSG_NOSIGNAL as in rawSend.
func rawSendmsg(fd int, p, oob []byte, to unsafe.Pointer, tolen uint32) (int, syscall.Errno) {
	n, _, _, errno := rawMsg(syscall.SYS_SENDMSG, fd, p, oob, to, tolen, unix.MSG_NOSIGNAL)
	return n, errno
}

// rawMsg is one recvmsg(2) or sendmsg(2) (trap) with flags on fd, of p
// and the control messages in oob, with name (namelen bytes; nil: none) as
// the peer's sockaddr. It returns the bytes moved, and the control length
// and msg_flags the kernel wrote back (recvmsg only).
func rawMsg(trap uintptr, fd int, p, oob []byte, name unsafe.Pointer, namelen uint32, flags int) (n, oobn, rflags int, errno syscall.Errno) {
	var iov unix.Iovec
	var msg unix.Msghdr
	if len(p) > 0 {
		iov.Base = unsafe.SliceData(p)
		iov.SetLen(len(p))
		msg.Iov = &iov
		msg.Iovlen = 1
	}
	if len(oob) > 0 {
		msg.Control = unsafe.SliceData(oob)
		msg.SetControllen(len(oob))
	}
	if name != nil {
		msg.Name = (*byte)(name)
		msg.Namelen = namelen
	}
	r, _, e := syscall.RawSyscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&msg)), uintptr(flags))
	if e != 0 {
		return 0, 0, 0, e
	}
	return int(r), int(msg.Controllen), int(msg.Flags), 0
}

// rawAddrPort reads a sockaddr the kernel filled in, as Go's net does for
// ReadFromUDPAddrPort: an AF_INET6 socket's IPv4 senders stay IPv4-mapped.
// ok is false when the kernel gave no address (a connected socket may).
func rawAddrPort(rsa *unix.RawSockaddrAny) (netip.AddrPort, bool) {
	switch rsa.Addr.Family {
	case unix.AF_INET:
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(rsa))
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), ntohs(sa.Port)), true
	case unix.AF_INET6:
		sa := (*unix.RawSockaddrInet6)(unsafe.Pointer(rsa))
		ip := netip.AddrFrom16(sa.Addr)
		if sa.Scope_id != 0 {
			ip = ip.WithZone(zoneName(sa.Scope_id))
		}
		return netip.AddrPortFrom(ip, ntohs(sa.Port)), true
	}
	return netip.AddrPort{}, false
}

// rawUDPAddr is rawAddrPort as *net.UDPAddr, shaped as Go's net shapes it
// (a 4-byte IP from an AF_INET socket, 16 bytes from AF_INET6).
func rawUDPAddr(rsa *unix.RawSockaddrAny) *net.UDPAddr {
	switch rsa.Addr.Family {
	case unix.AF_INET:
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(rsa))
		ip := make(net.IP, 4)
		copy(ip, sa.Addr[:])
		return &net.UDPAddr{IP: ip, Port: int(ntohs(sa.Port))}
	case unix.AF_INET6:
		sa := (*unix.RawSockaddrInet6)(unsafe.Pointer(rsa))
		ip := make(net.IP, 16)
		copy(ip, sa.Addr[:])
		a := &net.UDPAddr{IP: ip, Port: int(ntohs(sa.Port))}
		if sa.Scope_id != 0 {
			a.Zone = zoneName(sa.Scope_id)
		}
		return a
	}
	return nil
}

func zoneName(idx uint32) string {
	if ifi, err := net.InterfaceByIndex(int(idx)); err == nil {
		return ifi.Name
	}
	return ""
}

func zoneIndex(zone string) uint32 {
	if zone == "" {
		return 0
	}
	if ifi, err := net.InterfaceByName(zone); err == nil {
		return uint32(ifi.Index)
	}
	return 0
}

func ntohs(p uint16) uint16 { return p<<8 | p>>8 }

// udpSockaddr is a destination in the kernel's form, built on the caller's
// stack for one sendmsg.
type udpSockaddr struct {
	raw unix.RawSockaddrInet6 // large enough for either family
	len uint32
}

// set fills s with ap in the socket's family, as Go's net maps addresses:
// an IPv4 address on an AF_INET6 socket becomes IPv4-mapped; an IPv6
// address on an AF_INET socket is an *net.AddrError "non-IPv4 address".
func (s *udpSockaddr) set(family int, ap netip.AddrPort) error {
	ip := ap.Addr()
	switch family {
	case unix.AF_INET:
		if !ip.IsValid() {
			ip = netip.IPv4Unspecified()
		}
		if ip.Is4In6() {
			ip = ip.Unmap()
		}
		if !ip.Is4() {
			return &net.AddrError{Err: "non-IPv4 address", Addr: ip.String()}
		}
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(&s.raw))
		sa.Family = unix.AF_INET
		sa.Port = ntohs(ap.Port())
		sa.Addr = ip.As4()
		s.len = unix.SizeofSockaddrInet4
	default:
		if !ip.IsValid() || ip.Is4() && ip.IsUnspecified() {
			ip = netip.IPv6Unspecified() // 0.0.0.0 means any, as in Go's net
		}
		s.raw.Family = unix.AF_INET6
		s.raw.Port = ntohs(ap.Port())
		s.raw.Addr = ip.As16()
		s.raw.Scope_id = zoneIndex(ip.Zone())
		s.len = unix.SizeofSockaddrInet6
	}
	return nil
}

// udpAddrPort converts a *net.UDPAddr as Go's net does for WriteToUDP.
func udpAddrPort(a *net.UDPAddr) netip.AddrPort {
	ip, _ := netip.AddrFromSlice(a.IP)
	if a.Zone != "" {
		ip = ip.WithZone(a.Zone)
	}
	return netip.AddrPortFrom(ip, uint16(a.Port))
}
