package uringrt

import (
	"errors"
	"net"
	"syscall"
)

// rawEnd is one side of a splice: the connection's descriptor, run through
// f until f reports rawDone, waiting for readiness on rawWait. Errors are
// net.ErrClosed and os.ErrDeadlineExceeded (or those of a std conn's
// syscall.RawConn, unwrapped from their *net.OpError).
type rawEnd interface {
	rawRead(f func(sysfd int) rawResult) error
	rawWrite(f func(sysfd int) rawResult) error
	lockRead() func()
	lockWrite() func()
	doneRead(n int64, waited bool)
	doneWrite(n int64, waited bool)
}

// rawCapable reports whether fd waits for readiness the hybrid way (a
// multishot POLLIN and one-shot POLLOUT armed by the loop), which rawRead
// and rawWrite rely on.
func (fd *netFD) rawCapable() bool {
	return fd.connIO != nil && fd.rt.pol.pollsForLife()
}

// rawRead and rawWrite are rawIO for a splice end; the caller holds rmu
// (lockRead) or wmu (lockWrite).
func (fd *netFD) rawRead(f func(int) rawResult) error  { return fd.rawIO(false, f) }
func (fd *netFD) rawWrite(f func(int) rawResult) error { return fd.rawIO(true, f) }

func (fd *netFD) lockRead() func() {
	fd.rmu.Lock()
	return func() {
		// Bytes left the socket behind Read's back: its next Read tries
		// recv first rather than trusting the last short read.
		fd.rdDrained = false
		fd.rmu.Unlock()
	}
}

func (fd *netFD) lockWrite() func() {
	fd.wmu.Lock()
	return fd.wmu.Unlock
}

// doneRead and doneWrite count one chunk moved, as one Read or Write
// (waited: it needed a poll arm), and stamp progress for IdleTimeout.
func (fd *netFD) doneRead(n int64, waited bool) {
	if n > 0 {
		fd.touch()
	}
	fd.l.countRead(int(n), waited)
}

func (fd *netFD) doneWrite(n int64, waited bool) {
	if n > 0 {
		fd.touch()
	}
	fd.l.countWrite(int(n), waited)
}

// stdEnd is a *net.TCPConn or stream *net.UnixConn of Go's net as a splice
// end: its syscall.RawConn waits through Go's netpoller and holds its own
// locks.
type stdEnd struct{ rc syscall.RawConn }

func (s stdEnd) rawRead(f func(int) rawResult) error {
	return unwrapOpError(s.rc.Read(func(fd uintptr) bool { return runRaw(f, int(fd)) }))
}

func (s stdEnd) rawWrite(f func(int) rawResult) error {
	return unwrapOpError(s.rc.Write(func(fd uintptr) bool { return runRaw(f, int(fd)) }))
}

func (stdEnd) lockRead() func()      { return func() {} }
func (stdEnd) lockWrite() func()     { return func() {} }
func (stdEnd) doneRead(int64, bool)  {}
func (stdEnd) doneWrite(int64, bool) {}

// runRaw adapts f to syscall.RawConn's function: true when done, false to
// wait for readiness.
func runRaw(f func(int) rawResult, fd int) bool {
	for {
		switch f(fd) {
		case rawDone:
			return true
		case rawWait:
			return false
		}
	}
}

func unwrapOpError(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) {
		return oe.Err
	}
	return err
}

// rawEndOf returns v as a splice end: a *Conn under the hybrid policy, a
// *net.TCPConn, or a *net.UnixConn of network "unix" (a stream).
func rawEndOf(v any) (rawEnd, bool) {
	switch c := v.(type) {
	case *Conn:
		if c.fd.rawCapable() {
			return c.fd, true
		}
	case *net.TCPConn:
		if rc, err := c.SyscallConn(); err == nil {
			return stdEnd{rc}, true
		}
	case *net.UnixConn:
		if a, ok := c.LocalAddr().(*net.UnixAddr); ok && a.Net == "unix" {
			if rc, err := c.SyscallConn(); err == nil {
				return stdEnd{rc}, true
			}
		}
	}
	return nil, false
}
