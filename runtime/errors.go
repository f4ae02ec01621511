package uringrt

import (
	"context"
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
	return e
}

// sysError wraps an errno as os.NewSyscallError does (syscall name, errno).
func sysError(call string, errno syscall.Errno) error {
	return os.NewSyscallError(call, errno)
}

// ioErrno converts a negative CQE result into an errno.
func ioErrno(res int32) syscall.Errno { return syscall.Errno(-res) }

// canceledError is net's: the text Go's net gives a dial whose context was
// cancelled, still errors.Is(err, context.Canceled).
type canceledError struct{}

func (canceledError) Error() string     { return "operation was canceled" }
func (canceledError) Is(err error) bool { return err == context.Canceled }

// timeoutError is net's errTimeout: "i/o timeout" for a dial whose context
// expired, a net.Error with Timeout() true, errors.Is(err,
// context.DeadlineExceeded).
type timeoutError struct{}

func (timeoutError) Error() string     { return "i/o timeout" }
func (timeoutError) Timeout() bool     { return true }
func (timeoutError) Temporary() bool   { return true }
func (timeoutError) Is(err error) bool { return err == context.DeadlineExceeded }

// mapCtxErr maps a dial's context error to the error Go's net gives.
func mapCtxErr(err error) error {
	switch err {
	case context.DeadlineExceeded:
		return timeoutError{} // net's "i/o timeout"
	case context.Canceled:
		return canceledError{} // net's "operation was canceled"
	}
	return err
}
