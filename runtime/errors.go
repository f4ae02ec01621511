package uringrt

import (
	"errors"
	"net"
	"os"
	"syscall"
)

// errRuntimeClosed ends callback connections when the runtime closes.
var errRuntimeClosed = errors.New("uringrt: runtime closed")

// ErrNoIOUring is wrapped by New's error (BackendUring) and by the warning
// BackendAuto logs when no ring can be set up; errors.Is(err, ErrNoIOUring).
var ErrNoIOUring = errors.New("uringrt: io_uring unavailable")

// opError builds the error the standard library would return for op
// ("read", "write", "accept", "dial", "close") on fd.
func (fd *netFD) opError(op string, err error) error {
	if err == nil {
		return nil
	}
	e := &net.OpError{Op: op, Net: fd.net, Err: err}
	switch op {
	case "dial":
		e.Addr = fd.raddr()
	case "accept":
		e.Addr = fd.laddr()
	default:
		e.Source = fd.laddr()
		e.Addr = fd.raddr()
	}
	if e.Addr == nil {
		e.Addr = nil // keep the interface nil, not a typed nil
	}
	return e
}

// sysError wraps an errno as os.NewSyscallError does (syscall name, errno).
func sysError(call string, errno syscall.Errno) error {
	return os.NewSyscallError(call, errno)
}

// ioErrno converts a negative CQE result into an errno.
func ioErrno(res int32) syscall.Errno { return syscall.Errno(-res) }
