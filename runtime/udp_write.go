package uringrt

import (
	"net"
	"net/netip"
	"syscall"
	"unsafe"
)

// writeMsg sends one datagram to to (nil: the connected peer).
func (c *ringUDP) writeMsg(p, oob []byte, to *udpSockaddr, addr net.Addr, op, call string) (int, error) {
	fd := c.fd
	fd.wmu.Lock()
	defer fd.wmu.Unlock()
	var sa unsafe.Pointer
	var salen uint32
	if to != nil {
		sa, salen = unsafe.Pointer(&to.raw), to.len
	}
	polled := false
	var n int
	var errno syscall.Errno
	err := fd.rawIO(true, func(sysfd int) rawResult {
		n, errno = rawSendmsg(sysfd, p, oob, sa, salen)
		switch errno {
		case syscall.EAGAIN:
			polled = true
			return rawWait
		case syscall.EINTR:
			return rawMore
		}
		return rawDone
	})
	switch {
	case err != nil:
		return 0, c.opErr(op, addr, err)
	case errno != 0:
		return 0, c.opErr(op, addr, sysError(call, errno))
	}
	fd.l.udp.countOut(c.rt, n, oob, polled)
	return n, nil
}

func (c *ringUDP) WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error) {
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

func (c *ringUDP) WriteToUDP(b []byte, addr *net.UDPAddr) (int, error) {
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

func (c *ringUDP) WriteTo(b []byte, addr net.Addr) (int, error) {
	a, ok := addr.(*net.UDPAddr)
	if !ok {
		return 0, c.opErr("write", addr, syscall.EINVAL)
	}
	return c.WriteToUDP(b, a)
}

func (c *ringUDP) WriteMsgUDPAddrPort(b, oob []byte, addr netip.AddrPort) (n, oobn int, err error) {
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

func (c *ringUDP) WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (n, oobn int, err error) {
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

func (c *ringUDP) Write(b []byte) (int, error) {
	return c.writeMsg(b, nil, nil, nil, "write", "write")
}
