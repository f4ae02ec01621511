package uringrt

import (
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// accept4(2), getsockname(2) and getpeername(2) with the address parsed
// here. x/sys/unix's Accept4, Getsockname and Getpeername turn every
// AF_INET and AF_INET6 address into a Sockaddr through anyToSockaddr, which
// first asks the socket's SO_PROTOCOL with getsockopt(2) (to tell an L2TP
// socket from TCP): one more syscall per accepted connection, and per
// address read, for a protocol this package never drives. A connection
// under churn paid it twice (accept4 and its remote address, or
// getsockname for a listener on a wildcard address); strace of
// bench/cmd/http-server under `Connection: close` showed it.

// accept4 accepts a connection on listening socket fd with flags
// (SOCK_NONBLOCK|SOCK_CLOEXEC); the peer's address as accept4(2) wrote it.
// Errors are the raw errno (EAGAIN, EINTR, ECONNABORTED, EMFILE, ...).
// A Syscall, not a RawSyscall: a listener whose File's Fd was taken is
// blocking again (os.File.Fd clears O_NONBLOCK on the shared open file),
// and a blocked accept must hand its P off as Go's net's does.
func accept4(fd, flags int) (int, unix.Sockaddr, error) {
	var rsa unix.RawSockaddrAny
	nfd, err := accept4Raw(fd, flags, &rsa)
	if err != nil {
		return -1, nil, err
	}
	return nfd, rawToSockaddr(&rsa), nil
}

// accept4Raw is accept4 with the peer's address left in rsa, unparsed.
func accept4Raw(fd, flags int, rsa *unix.RawSockaddrAny) (int, error) {
	n := uint32(unix.SizeofSockaddrAny)
	nfd, _, e := syscall.Syscall6(unix.SYS_ACCEPT4, uintptr(fd), uintptr(unsafe.Pointer(rsa)), uintptr(unsafe.Pointer(&n)), uintptr(flags), 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(nfd), nil
}

// rawToAddr is the net.Addr of rsa on network (nil for a family this
// package's sockets do not have): a TCP address in one allocation, with
// no unix.Sockaddr made on the way.
func rawToAddr(network string, rsa *unix.RawSockaddrAny) net.Addr {
	switch rsa.Addr.Family {
	case unix.AF_INET:
		pp := (*unix.RawSockaddrInet4)(unsafe.Pointer(rsa))
		p := (*[2]byte)(unsafe.Pointer(&pp.Port))
		return newTCPAddr4(pp.Addr, int(p[0])<<8|int(p[1]))
	case unix.AF_INET6:
		pp := (*unix.RawSockaddrInet6)(unsafe.Pointer(rsa))
		if pp.Scope_id == 0 {
			p := (*[2]byte)(unsafe.Pointer(&pp.Port))
			return newTCPAddr6(pp.Addr, int(p[0])<<8|int(p[1]))
		}
	}
	if sa := rawToSockaddr(rsa); sa != nil {
		return sockaddrToAddr(network, sa)
	}
	return nil
}

// getsockname is getsockname(2) of fd (one syscall); errors are the errno.
func getsockname(fd int) (unix.Sockaddr, error) {
	return sockaddrCall(unix.SYS_GETSOCKNAME, fd)
}

// getpeername is getpeername(2) of fd (one syscall); errors are the errno
// (ENOTCONN once the peer is gone).
func getpeername(fd int) (unix.Sockaddr, error) {
	return sockaddrCall(unix.SYS_GETPEERNAME, fd)
}

func sockaddrCall(trap uintptr, fd int) (unix.Sockaddr, error) {
	var rsa unix.RawSockaddrAny
	n := uint32(unix.SizeofSockaddrAny)
	_, _, e := syscall.RawSyscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&rsa)), uintptr(unsafe.Pointer(&n)))
	if e != 0 {
		return nil, e
	}
	sa := rawToSockaddr(&rsa)
	if sa == nil {
		return nil, unix.EAFNOSUPPORT
	}
	return sa, nil
}

// rawToSockaddr converts the families this package's sockets have, as
// x/sys/unix does for them (an abstract unix name's leading NUL shown as
// '@', a path ending at its first NUL); nil for any other family.
func rawToSockaddr(rsa *unix.RawSockaddrAny) unix.Sockaddr {
	switch rsa.Addr.Family {
	case unix.AF_INET:
		pp := (*unix.RawSockaddrInet4)(unsafe.Pointer(rsa))
		sa := &unix.SockaddrInet4{Addr: pp.Addr}
		p := (*[2]byte)(unsafe.Pointer(&pp.Port))
		sa.Port = int(p[0])<<8 | int(p[1])
		return sa
	case unix.AF_INET6:
		pp := (*unix.RawSockaddrInet6)(unsafe.Pointer(rsa))
		sa := &unix.SockaddrInet6{Addr: pp.Addr, ZoneId: pp.Scope_id}
		p := (*[2]byte)(unsafe.Pointer(&pp.Port))
		sa.Port = int(p[0])<<8 | int(p[1])
		return sa
	case unix.AF_UNIX:
		pp := (*unix.RawSockaddrUnix)(unsafe.Pointer(rsa))
		if pp.Path[0] == 0 {
			pp.Path[0] = '@'
		}
		n := 0
		for n < len(pp.Path) && pp.Path[n] != 0 {
			n++
		}
		return &unix.SockaddrUnix{Name: string(unsafe.Slice((*byte)(unsafe.Pointer(&pp.Path[0])), n))}
	}
	return nil
}
