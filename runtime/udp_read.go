package uringrt

import (
	"net"
	"net/netip"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// readMsg reads one datagram: nonblock try, then park on the loop's poll.
// call names the syscall in errors, as Go's net names it.
func (c *ringUDP) readMsg(p, oob []byte, flags int, from *unix.RawSockaddrAny, op, call string) (n, oobn, rflags int, err error) {
	c.fd.rmu.Lock()
	defer c.fd.rmu.Unlock()
	n, oobn, rflags, _, err = c.readMsgLocked(p, oob, flags, from, op, call, true)
	return n, oobn, rflags, err
}

// readMsgLocked is readMsg with the read lock held. With park false it
// does not wait: a socket with nothing queued gives ok false.
func (c *ringUDP) readMsgLocked(p, oob []byte, flags int, from *unix.RawSockaddrAny, op, call string, park bool) (n, oobn, rflags int, ok bool, err error) {
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
			fd.waitRead()
			continue
		case syscall.EINTR:
			continue
		}
		return 0, 0, 0, false, c.opErr(op, nil, sysError(call, errno))
	}
}

func (c *ringUDP) ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error) {
	var from unix.RawSockaddrAny
	n, _, _, err := c.readMsg(b, nil, 0, &from, "read", "recvfrom")
	if err != nil {
		return 0, netip.AddrPort{}, err
	}
	ap, _ := rawAddrPort(&from)
	return n, ap, nil
}

func (c *ringUDP) ReadFromUDP(b []byte) (int, *net.UDPAddr, error) {
	var from unix.RawSockaddrAny
	n, _, _, err := c.readMsg(b, nil, 0, &from, "read", "recvfrom")
	if err != nil {
		return 0, nil, err
	}
	return n, rawUDPAddr(&from), nil
}

func (c *ringUDP) ReadMsgUDPAddrPort(b, oob []byte) (n, oobn, flags int, addr netip.AddrPort, err error) {
	var from unix.RawSockaddrAny
	n, oobn, flags, err = c.readMsg(b, oob, 0, &from, "read", "recvmsg")
	if err != nil {
		return 0, 0, 0, netip.AddrPort{}, err
	}
	addr, _ = rawAddrPort(&from)
	return n, oobn, flags, addr, nil
}

func (c *ringUDP) ReadMsgUDP(b, oob []byte) (n, oobn, flags int, addr *net.UDPAddr, err error) {
	var from unix.RawSockaddrAny
	n, oobn, flags, err = c.readMsg(b, oob, 0, &from, "read", "recvmsg")
	if err != nil {
		return 0, 0, 0, nil, err
	}
	return n, oobn, flags, rawUDPAddr(&from), nil
}

func (c *ringUDP) Read(b []byte) (int, error) {
	if len(b) == 0 {
		if c.fd.closing.Load() {
			return 0, c.opErr("read", nil, net.ErrClosed)
		}
		return 0, nil
	}
	n, _, _, err := c.readMsg(b, nil, 0, nil, "read", "read")
	return n, err
}
