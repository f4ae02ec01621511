package uringrt

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// rawResult is what a raw function reports to netFD.rawIO.
type rawResult int

const (
	rawDone rawResult = iota // finished (result or error stored by the function)
	rawWait                  // EAGAIN: wait for readiness, then call again
	rawMore                  // made progress or EINTR: call again at once
)

// rawIO is the one nonblock-try loop of a netFD, as every I/O method of
// Go's internal/poll.FD is one: check Close and the direction's deadline,
// run f on the descriptor while holding a reference (Close waits for it),
// and on rawWait park on the direction's pollDesc until the loop's poll
// CQE, the deadline or Close wakes it. Accept, a PacketConn's writes,
// RawConn.Read and Write, and the ends of a splice or sendfile run on it;
// Conn.Read and Conn.Write run a pollable policy instead (pollable.go),
// and a PacketConn's reads may take datagrams from a multishot recvmsg
// (udp_read.go). write picks the direction; the caller holds its lock (rmu
// or wmu). Errors are net.ErrClosed and os.ErrDeadlineExceeded, for the
// caller to wrap; f stores its own result and error.
func (fd *netFD) rawIO(write bool, f func(sysfd int) rawResult) error {
	dl := &fd.rdl
	if write {
		dl = &fd.wdl
	}
	for {
		if fd.closing.Load() {
			return net.ErrClosed
		}
		if dl.expired.Load() {
			return os.ErrDeadlineExceeded
		}
		if !fd.incref() {
			continue
		}
		r := f(fd.fd)
		fd.decref()
		switch {
		case r == rawDone:
			return nil
		case r == rawMore:
		case write:
			fd.waitWrite()
		default:
			fd.waitRawRead()
		}
	}
}

// waitRawRead parks a raw reader until the socket's multishot POLLIN
// fires. netFD.start arms it for the socket's life under experiment.PollHybrid, for
// listeners and for PacketConns; under the policies that read through the
// ring the first raw read arms it, and it stays armed (re-armed, like the
// hybrid one, when the kernel ends it).
func (fd *netFD) waitRawRead() {
	if !fd.goPollMode() && !fd.pollInArmed.Load() && fd.pollInArmed.CompareAndSwap(false, true) {
		fd.l.post(request{kind: reqArm, op: &fd.ringOps().pollIn})
	}
	fd.waitRead()
}

// rawConnIO is a syscall.RawConn's Read (write false) or Write: rawIO
// under the direction's lock, so that it is serialized with the socket's
// own reads or writes, with f's true as rawDone and false as rawWait. A
// Close or deadline error is returned as opError builds it for Op
// "raw-read" or "raw-write".
func (fd *netFD) rawConnIO(write bool, f func(fd uintptr) bool, opError func(op string, err error) error) error {
	mu, op := &fd.rmu, "raw-read"
	if write {
		mu, op = &fd.wmu, "raw-write"
	}
	mu.Lock()
	defer mu.Unlock()
	err := fd.rawIO(write, func(sysfd int) rawResult {
		if f(uintptr(sysfd)) {
			return rawDone
		}
		return rawWait
	})
	if err != nil {
		return opError(op, err)
	}
	return nil
}

// rawConn is the syscall.RawConn of a Conn or listener: the callbacks run
// on the socket's descriptor while it is held open, and Read and Write wait
// for readiness through the loop as Conn.Read and Conn.Write do (a
// nonblock try, then a poll armed on the ring and the goroutine parked
// until its CQE), so libraries that poll a socket themselves (go-redis's
// health check, sockopt helpers) work unchanged.
type rawConn struct{ fd *netFD }

var _ syscall.RawConn = rawConn{}

// Control runs f with the socket's descriptor, which stays open until f
// returns. f must not close it or make it blocking.
func (c rawConn) Control(f func(fd uintptr)) error {
	fd := c.fd
	if !fd.incref() {
		return c.opError("raw-control", net.ErrClosed)
	}
	defer fd.decref()
	fd.rawTouched.Store(true)
	f(uintptr(fd.fd))
	return nil
}

// Read runs f until it returns true, waiting for the socket to become
// readable (POLLIN through the loop) each time it returns false. It
// returns an error wrapping os.ErrDeadlineExceeded after the read
// deadline, net.ErrClosed after Close. Reads are serialized with
// Conn.Read.
func (c rawConn) Read(f func(fd uintptr) (done bool)) error {
	c.fd.rawTouched.Store(true)
	return c.fd.rawConnIO(false, f, c.opError)
}

// Write runs f until it returns true, waiting for the socket to become
// writable (POLLOUT through the loop) each time it returns false. Errors
// as Read's, for the write deadline. Writes are serialized with
// Conn.Write.
func (c rawConn) Write(f func(fd uintptr) (done bool)) error {
	c.fd.rawTouched.Store(true)
	return c.fd.rawConnIO(true, f, c.opError)
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
	fd.rawTouched.Store(true)
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
	return rawConn{fd: c.fd}, nil
}

// File returns a duplicate of the connection's descriptor as an *os.File,
// as *net.TCPConn.File does. Closing either does not close the other. The
// duplicate shares the socket's nonblocking mode.
func (c *Conn) File() (*os.File, error) { return c.fd.dupFile(true) }

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
