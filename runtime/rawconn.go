package runtime

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// rawConn is the syscall.RawConn of a Conn or listener: the callbacks run
// on the socket's descriptor while it is held open, and Read and Write wait
// for readiness through the loop as Conn.Read and Conn.Write do (a
// nonblock try, then a poll armed on the ring and the goroutine parked
// until its CQE), so libraries that poll a socket themselves (go-redis's
// health check, sockopt helpers) work unchanged.
type rawConn struct {
	fd *netFD
	// polled: the fd's multishot POLLIN is armed for its life (listeners,
	// and connections under PollHybrid)
	polled bool
}

var _ syscall.RawConn = rawConn{}

// Control runs f with the socket's descriptor, which stays open until f
// returns. f must not close it or make it blocking.
func (c rawConn) Control(f func(fd uintptr)) error {
	fd := c.fd
	if !fd.incref() {
		return c.opError("raw-control", net.ErrClosed)
	}
	defer fd.decref()
	f(uintptr(fd.fd))
	return nil
}

// Read runs f until it returns true, waiting for the socket to become
// readable (POLLIN through the loop) each time it returns false. It
// returns an error wrapping os.ErrDeadlineExceeded after the read
// deadline, net.ErrClosed after Close. Reads are serialized with
// Conn.Read.
func (c rawConn) Read(f func(fd uintptr) (done bool)) error {
	fd := c.fd
	fd.rmu.Lock()
	defer fd.rmu.Unlock()
	for {
		if err := c.check(&fd.rdl); err != nil {
			return c.opError("raw-read", err)
		}
		if !fd.incref() {
			continue
		}
		done := f(uintptr(fd.fd))
		fd.decref()
		if done {
			return nil
		}
		c.waitRead()
	}
}

// Write runs f until it returns true, waiting for the socket to become
// writable (POLLOUT through the loop) each time it returns false. Errors
// as Read's, for the write deadline. Writes are serialized with
// Conn.Write.
func (c rawConn) Write(f func(fd uintptr) (done bool)) error {
	fd := c.fd
	fd.wmu.Lock()
	defer fd.wmu.Unlock()
	for {
		if err := c.check(&fd.wdl); err != nil {
			return c.opError("raw-write", err)
		}
		if !fd.incref() {
			continue
		}
		done := f(uintptr(fd.fd))
		fd.decref()
		if done {
			return nil
		}
		fd.l.post(request{kind: reqArm, op: &fd.pollOut})
		fd.wr.wait(fd.abortWrite)
	}
}

func (c rawConn) check(dl *deadline) error {
	switch {
	case c.fd.closing.Load():
		return net.ErrClosed
	case dl.expired.Load():
		return os.ErrDeadlineExceeded
	}
	return nil
}

// waitRead parks until the socket's multishot POLLIN fires. Under
// PollHybrid it is armed for the socket's life; under the other policies,
// which read through the ring, the first raw Read arms it (and it stays
// armed, re-armed like the hybrid one when the kernel ends it).
func (c rawConn) waitRead() {
	fd := c.fd
	if !c.polled && fd.rawPollIn.CompareAndSwap(false, true) {
		fd.l.post(request{kind: reqArm, op: &fd.pollIn})
	} else {
		fd.rearmPollIn()
	}
	fd.rd.wait(fd.abortRead)
}

func (c rawConn) opError(op string, err error) error {
	e := c.fd.opError(op, err).(*net.OpError)
	if op == "raw-control" { // net names only the local address here
		e.Source, e.Addr = nil, c.fd.laddr()
	}
	return e
}

// dupFile is net's File: a duplicate descriptor (close-on-exec) in an
// *os.File named like net's ("tcp:local->remote"); closing one does not
// close the other. Errors are *net.OpError with Op "file".
func (fd *netFD) dupFile(remote bool) (*os.File, error) {
	if !fd.incref() {
		return nil, fd.opError("file", net.ErrClosed)
	}
	defer fd.decref()
	nfd, err := unix.FcntlInt(uintptr(fd.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fd.opError("file", sysError("fcntl", err.(syscall.Errno)))
	}
	var ls, rs string
	if a := fd.laddr(); a != nil {
		ls = a.String()
	}
	if remote {
		if a := fd.raddr(); a != nil {
			rs = a.String()
		}
	}
	return os.NewFile(uintptr(nfd), fd.net+":"+ls+"->"+rs), nil
}

// SyscallConn returns the connection's syscall.RawConn (a syscall.Conn,
// as *net.TCPConn is). Its Read and Write wait for readiness through the
// loop's ring; the descriptor is nonblocking and owned by the runtime. As
// with net, it never fails: after Close the RawConn's methods return
// net.ErrClosed.
func (c *Conn) SyscallConn() (syscall.RawConn, error) {
	return rawConn{fd: c.fd, polled: c.fd.rt.pol.pollsForLife()}, nil
}

// File returns a duplicate of the connection's descriptor as an *os.File,
// as *net.TCPConn.File does. Closing either does not close the other. The
// duplicate shares the socket's nonblocking mode.
func (c *Conn) File() (*os.File, error) { return c.fd.dupFile(true) }

// SyscallConn returns the listening socket's syscall.RawConn; Read waits
// for a pending connection through the loop.
func (ln *listener) SyscallConn() (syscall.RawConn, error) {
	return rawConn{fd: ln.fd, polled: true}, nil
}

// File returns a duplicate of the listening socket's descriptor, as
// *net.TCPListener.File does.
func (ln *listener) File() (*os.File, error) { return ln.fd.dupFile(false) }

// BackendStd: Go's connections and listeners have these already; the
// wrappers that track them pass them through.

// SyscallConn is the wrapped connection's (an error if it has none).
func (c *stdConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errUnsupported("SyscallConn", c.Conn)
}

// File is the wrapped connection's File.
func (c *stdConn) File() (*os.File, error) {
	if fc, ok := c.Conn.(interface{ File() (*os.File, error) }); ok {
		return fc.File()
	}
	return nil, errUnsupported("File", c.Conn)
}

// SyscallConn is the wrapped listener's.
func (l *stdListener) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := l.Listener.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errUnsupported("SyscallConn", l.Listener)
}

// File is the wrapped listener's File.
func (l *stdListener) File() (*os.File, error) {
	if fc, ok := l.Listener.(interface{ File() (*os.File, error) }); ok {
		return fc.File()
	}
	return nil, errUnsupported("File", l.Listener)
}

func errUnsupported(method string, v any) error {
	return fmt.Errorf("uringrt: %s unsupported on %T: %w", method, v, errors.ErrUnsupported)
}
