package uringrt

import (
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Conn is a connected socket driven by a uringrt loop. It implements
// net.Conn, and CloseRead/CloseWrite like *net.TCPConn. Its methods are
// safe for concurrent use; concurrent Reads (or Writes) are serialized.
//
// Errors are those of the standard library: *net.OpError wrapping
// os.ErrDeadlineExceeded after a deadline (Timeout() reports true),
// net.ErrClosed after Close (also for a Read or Write blocked when Close
// came), *os.SyscallError with the errno (ECONNRESET, EPIPE, ...)
// otherwise, and io.EOF from Read on the peer's orderly close.
type Conn struct {
	fd *netFD
}

var _ net.Conn = (*Conn)(nil)

// Read reads up to len(b) bytes. Under experiment.PollHybrid it tries recv(2)
// nonblocking first and, on EAGAIN, parks until the loop's multishot poll
// reports the socket readable; under experiment.PollRing/experiment.PollAsync it submits
// IORING_OP_RECV into b (b then belongs to the kernel until that CQE, which
// Read always waits for: no byte the kernel took is lost); under
// experiment.PollBlocking a fixed worker blocks on the socket. Read(nil) returns 0, nil.
func (c *Conn) Read(b []byte) (int, error) {
	fd := c.fd
	fd.rmu.Lock()
	defer fd.rmu.Unlock()
	if fd.closing.Load() {
		return 0, fd.opError("read", net.ErrClosed)
	}
	if len(b) == 0 {
		return 0, nil
	}
	waited := false
	for {
		if fd.closing.Load() {
			return 0, fd.opError("read", net.ErrClosed)
		}
		if fd.rdl.expired.Load() {
			return 0, fd.opError("read", os.ErrDeadlineExceeded)
		}
		n, errno, w, again := fd.rt.pol.read(fd, b)
		if fd.settle(n, errno, w, again, &waited) {
			continue
		}
		if errno != 0 {
			return 0, fd.opError("read", sysError("read", errno))
		}
		fd.l.countRead(n, waited)
		if n == 0 {
			return 0, io.EOF
		}
		return n, nil
	}
}

// settle folds one try of the pollable policy into Read's or Write's
// loop: it notes that the try waited, marks progress for IdleTimeout, and
// reports whether to try again (the policy asked to, or a transient
// errno). Otherwise errno is 0 or the error that ends the call.
func (fd *netFD) settle(n int, errno syscall.Errno, w, again bool, waited *bool) (retry bool) {
	if w {
		*waited = true
	}
	switch {
	case again:
		return true
	case errno == 0:
		if n > 0 {
			fd.touch()
		}
		return false
	}
	return errno == syscall.EINTR || errno == syscall.EAGAIN || errno == syscall.ECANCELED
}

// Write writes all of b, or returns the count written and an error (the
// io.Writer contract). Under experiment.PollHybrid it tries send(2) nonblocking first;
// on a short write or EAGAIN the loop arms POLLOUT and Write parks. A write
// to a reset peer fails with EPIPE or ECONNRESET, never SIGPIPE.
func (c *Conn) Write(b []byte) (int, error) {
	fd := c.fd
	fd.wmu.Lock()
	defer fd.wmu.Unlock()
	nn := 0
	waited := false
	for {
		if fd.closing.Load() {
			return nn, fd.opError("write", net.ErrClosed)
		}
		if fd.wdl.expired.Load() {
			return nn, fd.opError("write", os.ErrDeadlineExceeded)
		}
		if nn == len(b) && nn > 0 {
			fd.l.countWrite(nn, waited)
			return nn, nil
		}
		if len(b) == 0 {
			return 0, nil
		}
		n, errno, w, again := fd.rt.pol.write(fd, b[nn:])
		if fd.settle(n, errno, w, again, &waited) {
			continue
		}
		if errno != 0 {
			return nn, fd.opError("write", sysError("write", errno))
		}
		nn += n
	}
}

// Close closes the connection: blocked Reads and Writes return
// net.ErrClosed, in-flight ring ops are cancelled and their CQEs awaited,
// then the fd is closed. A TCP connection with nothing unread (no
// SO_LINGER, however set, and no RawConn or File use) is shut down (shutdown(2) SHUT_RDWR)
// by Close itself, which then returns without waiting for its loop to
// close the descriptor: the peer sees the FIN at once, and a reset if it
// writes on, as with *net.TCPConn. With data unread the peer is reset, as
// by Go's net. A second Close returns net.ErrClosed.
func (c *Conn) Close() error {
	if err := c.fd.close(); err != nil {
		return c.fd.opError("close", err)
	}
	return nil
}

// CloseWrite shuts down the writing side (shutdown(2) SHUT_WR): the peer
// reads io.EOF after the bytes already written.
func (c *Conn) CloseWrite() error { return c.shutdown(unix.SHUT_WR, "close") }

// CloseRead shuts down the reading side (shutdown(2) SHUT_RD).
func (c *Conn) CloseRead() error { return c.shutdown(unix.SHUT_RD, "close") }

func (c *Conn) shutdown(how int, op string) error {
	fd := c.fd
	if !fd.incref() {
		return fd.opError(op, net.ErrClosed)
	}
	defer fd.decref()
	if err := unix.Shutdown(fd.fd, how); err != nil {
		return fd.opError(op, sysError("shutdown", err.(syscall.Errno)))
	}
	return nil
}

// LocalAddr returns the local address (*net.TCPAddr or *net.UnixAddr).
func (c *Conn) LocalAddr() net.Addr { return c.fd.laddr() }

// RemoteAddr returns the peer's address (*net.TCPAddr or *net.UnixAddr).
func (c *Conn) RemoteAddr() net.Addr { return c.fd.raddr() }

// SetDeadline sets the read and write deadlines (see net.Conn). A zero t
// clears them. A deadline that passes wakes a blocked Read or Write, which
// returns an error wrapping os.ErrDeadlineExceeded.
func (c *Conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// SetReadDeadline sets the deadline for Read calls, pending ones included.
func (c *Conn) SetReadDeadline(t time.Time) error {
	return c.setDeadline(&c.fd.rdl, t, false)
}

// SetWriteDeadline sets the deadline for Write calls, pending ones included.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	return c.setDeadline(&c.fd.wdl, t, true)
}

// setDeadline sets d, the read or write deadline, to t; when it passes,
// deadlinePassed runs.
func (c *Conn) setDeadline(d *deadline, t time.Time, write bool) error {
	fd := c.fd
	if fd.closing.Load() {
		return fd.opError("set", net.ErrClosed)
	}
	if d.setFast(t) {
		return nil // the connection's own fire, kept by the first set
	}
	d.setConn(t, fd, write)
	return nil
}

// deadlinePassed wakes the goroutine parked on the read (or write) side
// and cancels that side's op in flight, if any: what a Conn's read or
// write deadline does when it passes.
func (n *netFD) deadlinePassed(write bool) {
	if write {
		n.wr.interrupt()
		n.cancelIO(true)
		return
	}
	n.rd.interrupt()
	if n.gp.Load() != 0 {
		n.goPollExpire()
	}
	n.cancelIO(false)
}

// SetNoDelay sets TCP_NODELAY (on by default, as in Go's net).
func (c *Conn) SetNoDelay(noDelay bool) error {
	v := 0
	if noDelay {
		v = 1
	}
	return c.setsockopt(unix.IPPROTO_TCP, unix.TCP_NODELAY, v)
}

// SetReadBuffer sets SO_RCVBUF in bytes.
func (c *Conn) SetReadBuffer(bytes int) error {
	return c.setsockopt(unix.SOL_SOCKET, unix.SO_RCVBUF, bytes)
}

// SetWriteBuffer sets SO_SNDBUF in bytes.
func (c *Conn) SetWriteBuffer(bytes int) error {
	return c.setsockopt(unix.SOL_SOCKET, unix.SO_SNDBUF, bytes)
}

func (c *Conn) setsockopt(level, opt, v int) error {
	fd := c.fd
	if !fd.incref() {
		return fd.opError("set", net.ErrClosed)
	}
	defer fd.decref()
	if err := unix.SetsockoptInt(fd.fd, level, opt, v); err != nil {
		return fd.opError("set", sysError("setsockopt", err.(syscall.Errno)))
	}
	return nil
}

// SetLinger sets SO_LINGER as *net.TCPConn.SetLinger does: sec < 0 is the
// default (close returns at once, the kernel sends the rest), 0 discards
// unsent data and resets the connection on Close, > 0 lingers sec seconds.
func (c *Conn) SetLinger(sec int) error {
	fd := c.fd
	if !fd.incref() {
		return fd.opError("set", net.ErrClosed)
	}
	defer fd.decref()
	fd.rawTouched.Store(true)
	l := unix.Linger{}
	if sec >= 0 {
		l.Onoff, l.Linger = 1, int32(sec)
	}
	if err := unix.SetsockoptLinger(fd.fd, unix.SOL_SOCKET, unix.SO_LINGER, &l); err != nil {
		return fd.opError("set", sysError("setsockopt", err.(syscall.Errno)))
	}
	return nil
}
