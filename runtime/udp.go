package uringrt

import (
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ringUDP is a PacketConn driven by a loop: every read and write is tried
// nonblocking in the caller's goroutine, then parks on the loop's poll (or
// takes datagrams from the multishot recvmsg of Config.UDPRecvMultishot).
type ringUDP struct {
	fd        *netFD
	rt        *Runtime
	family    int      // AF_INET or AF_INET6
	connected bool     // from DialUDP
	ur        *udpRing // Config.UDPRecvMultishot: the multishot recvmsg
}

// opErr builds *net.UDPConn's error for op; addr is the peer named by the
// call (nil: the connected peer, if any).
func (c *ringUDP) opErr(op string, addr net.Addr, err error) error {
	e := &net.OpError{Op: op, Net: c.fd.net, Source: c.fd.local, Addr: addr, Err: err}
	if addr == nil && c.connected {
		e.Addr = c.fd.remot
	}
	return e
}

// setErr builds *net.UDPConn's error for an option or raw-conn call ("set",
// "raw-control", "raw-read", "raw-write"): Go's net names the local
// address as Addr there, and no Source.
func (c *ringUDP) setErr(op string, err error) error {
	return &net.OpError{Op: op, Net: c.fd.net, Addr: c.fd.local, Err: err}
}

func (c *ringUDP) Close() error {
	if err := c.fd.close(); err != nil {
		return c.opErr("close", nil, err)
	}
	if c.ur != nil {
		c.ur.close()
	}
	return nil
}

func (c *ringUDP) LocalAddr() net.Addr {
	return c.fd.local
}

func (c *ringUDP) RemoteAddr() net.Addr {
	if !c.connected || c.fd.remot == nil {
		return nil
	}
	return c.fd.remot
}

func (c *ringUDP) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

func (c *ringUDP) SetReadDeadline(t time.Time) error {
	return c.setDeadline(&c.fd.rdl, t, c.fd.rd.interrupt)
}

func (c *ringUDP) SetWriteDeadline(t time.Time) error {
	return c.setDeadline(&c.fd.wdl, t, c.fd.wr.interrupt)
}

// setDeadline sets d to t; when it passes, wake interrupts the parked
// reader or writer.
func (c *ringUDP) setDeadline(d *deadline, t time.Time, wake func()) error {
	if c.fd.closing.Load() {
		return c.setErr("set", net.ErrClosed)
	}
	if !d.setFast(t) {
		d.set(t, wake)
	}
	return nil
}

func (c *ringUDP) SetReadBuffer(bytes int) error {
	return c.setsockopt(unix.SOL_SOCKET, unix.SO_RCVBUF, bytes)
}

func (c *ringUDP) SetWriteBuffer(bytes int) error {
	return c.setsockopt(unix.SOL_SOCKET, unix.SO_SNDBUF, bytes)
}

func (c *ringUDP) setsockopt(level, opt, v int) error {
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

func (c *ringUDP) File() (*os.File, error) {
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
