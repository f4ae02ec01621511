package netpoll

import (
	"errors"
	"syscall"
)

// ErrSQFull is returned when the submission queue has no free SQE. The
// caller submits what is queued (Submit or SubmitAndWait) and tries again; the
// ring never spins or drops a request on its own.
var ErrSQFull = errors.New("netpoll: submission queue full")

// ErrClosed is returned by methods of a Ring after Close.
var ErrClosed = errors.New("netpoll: ring closed")

// Error is a failed io_uring syscall: Op names the operation
// ("io_uring_setup", "io_uring_enter", "register PBUF_RING", ...) and Err
// is the errno. errors.Is(err, os.ErrPermission) holds for EPERM/EACCES,
// and errors.Is(err, errors.ErrUnsupported) for a kernel lacking the opcode,
// flag or register command (ENOSYS, EOPNOTSUPP, or an EINVAL that a probe
// attributed to a missing feature).
type Error struct {
	Op          string
	Err         syscall.Errno
	Detail      string // optional hint: what to change
	unsupported bool
}

// Error returns "netpoll: OP: errno text (detail)".
func (e *Error) Error() string {
	s := "netpoll: " + e.Op + ": " + e.Err.Error()
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s
}

// Unwrap returns the errno.
func (e *Error) Unwrap() error { return e.Err }

// Is reports errors.ErrUnsupported for errors attributed to a missing kernel
// feature, in addition to what the errno matches.
func (e *Error) Is(target error) bool {
	return target == errors.ErrUnsupported && e.unsupported
}

func newError(op string, errno syscall.Errno) *Error {
	return &Error{Op: op, Err: errno}
}

func unsupportedError(op string, errno syscall.Errno, detail string) *Error {
	return &Error{Op: op, Err: errno, Detail: detail, unsupported: true}
}
