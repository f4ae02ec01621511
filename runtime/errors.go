package runtime

import (
	"errors"
	"fmt"
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

// noIOUring wraps a ring setup failure in ErrNoIOUring and appends the fix
// for its errno, so that the error (and BackendAuto's warning) says what to
// change, also when the cause carries no hint of its own.
func noIOUring(err error) error {
	var errno syscall.Errno
	errors.As(err, &errno)
	var fix string
	switch errno {
	case syscall.EPERM, syscall.EACCES:
		fix = "io_uring is blocked: set the sysctl kernel.io_uring_disabled=0 (or add the user to kernel.io_uring_group), " +
			"or in a container use a seccomp profile that allows io_uring_setup, io_uring_enter and io_uring_register " +
			"(deploy/seccomp-io_uring.json); or use BackendStd"
	case syscall.ENOSYS:
		fix = "this kernel has no io_uring or a seccomp filter hides it: io_uring needs Linux 5.1+ (6.1+ recommended); or use BackendStd"
	case syscall.ENOMEM:
		fix = "raise RLIMIT_MEMLOCK (kernels before 5.12 charge rings to it) or lower Config.RingEntries; or use BackendStd"
	default:
		fix = "use BackendAuto to fall back to Go's net, or BackendStd"
	}
	return fmt.Errorf("%w: %w (fix: %s)", ErrNoIOUring, err, fix)
}
