package netpoll

import (
	"os"

	"golang.org/x/sys/unix"
)

// EventfdWake is a ring's wake-up from other threads: an eventfd(2) that
// the ring keeps a read armed on. A thread that wants the ring's owner out
// of its wait calls Signal; the read's CQE ends the wait, and the owner
// re-arms the read (PrepRead) for the next wake-up. Only the ring's owner
// preps the read; Signal is safe from any goroutine.
type EventfdWake struct {
	fd  int
	buf [8]byte // the read's destination (the kernel's until its CQE)
}

// NewEventfdWake makes a nonblocking, close-on-exec eventfd (Linux 2.6.27+).
// Errors are eventfd(2)'s (EMFILE, ENFILE, ENOMEM) as *os.SyscallError.
func NewEventfdWake() (*EventfdWake, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, os.NewSyscallError("eventfd", err)
	}
	return &EventfdWake{fd: fd}, nil
}

// Fd returns the eventfd's descriptor.
func (w *EventfdWake) Fd() int { return w.fd }

// PrepRead preps sqe as the 8-byte read whose CQE is the wake-up
// (IORING_OP_READ at the current position). The buffer is w's own.
func (w *EventfdWake) PrepRead(sqe *SQE) { sqe.PrepRead(w.fd, w.buf[:], ^uint64(0)) }

// Signal adds 1 to the eventfd, completing the armed read. It never
// blocks (EAGAIN, a counter at its maximum, already means a pending wake).
func (w *EventfdWake) Signal() {
	one := [8]byte{1}
	unix.Write(w.fd, one[:])
}

// Close closes the eventfd; call it once no read of it is in flight.
func (w *EventfdWake) Close() error { return unix.Close(w.fd) }
