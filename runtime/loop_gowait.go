package uringrt

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Waiting in Go's scheduler (the default; Config.LockedLoops turns it off): the loop is an ordinary
// goroutine, not a locked OS thread, and it sleeps by parking on the
// ring's fd in Go's own netpoller (epoll) instead of in io_uring_enter.
// io_uring_poll reports the ring readable when CQEs are ready, so the loop
// is woken exactly as a Go net reader is: by the thread that runs the
// scheduler when it has nothing else to do. With GOMAXPROCS=1 the loop and
// the goroutines it wakes then share one thread: a completion batch costs
// no hand-off of the P between the loop's thread and the handlers' thread,
// which is what a locked loop pays twice per batch.
//
// The ring has no SINGLE_ISSUER (the goroutine moves between threads), so
// no DEFER_TASKRUN either: COOP_TASKRUN, where the kernel runs a
// completion's task_work on the thread that submitted it at its next
// system call (or wakes it if it sleeps). The registered ring fd is
// per-thread, so it is not used.

// goWaiter is a loop's park on its ring's fd.
type goWaiter struct {
	f        *os.File // a dup of the ring's fd, registered with Go's netpoller
	rc       syscall.RawConn
	deadline time.Time // the read deadline currently set on f
	// ready is rc.Read's callback, made once: a closure built per wait
	// would be an allocation per wake-up.
	ready func(uintptr) bool
}

// setupGoWait registers a dup of the ring's fd with Go's netpoller. It
// fails if the fd is not pollable there (then New falls back to the locked
// loop).
func (l *loop) setupGoWait() error {
	fd, err := unix.FcntlInt(uintptr(l.ring.FD()), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return os.NewSyscallError("fcntl", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return os.NewSyscallError("fcntl", err)
	}
	f := os.NewFile(uintptr(fd), "io_uring")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return err
	}
	if err := netpollable(f); err != nil {
		f.Close()
		return err
	}
	l.gw = &goWaiter{f: f, rc: rc}
	l.gw.ready = func(uintptr) bool { return l.ring.CQReady() > 0 || l.posted.Load() }
	return nil
}

// netpollable reports whether f is registered with Go's netpoller: a
// pollable os.File accepts a deadline, one that Go could not add refuses
// it with os.ErrNoDeadline, which the error wraps.
func netpollable(f *os.File) error {
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		return fmt.Errorf("ring fd not pollable by Go's netpoller: %w", err)
	}
	return nil
}

// goWait parks the loop goroutine in Go's netpoller until a CQE is ready,
// a request is posted (its eventfd read completes: a CQE), or timeout
// passes. It submits what is prepared first.
func (l *loop) goWait(timeout time.Duration) {
	if _, err := l.ring.Submit(); err != nil {
		l.enterError(err)
		return
	}
	if l.ring.CQReady() > 0 || l.posted.Load() {
		return
	}
	w := l.gw
	now := time.Now()
	if want := now.Add(timeout); w.deadline.IsZero() || want.Before(w.deadline) || w.deadline.Sub(now) < timeout/2 {
		// Refreshed only when it would end too early or too late by
		// half, not per wait: a deadline is a timer operation.
		w.deadline = want
		w.f.SetReadDeadline(want)
	}
	err := w.rc.Read(w.ready)
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		l.rt.logger.Error("loop wait in Go's netpoller failed", "loop", l.id, "err", err)
		time.Sleep(time.Millisecond)
	}
	if err != nil {
		w.deadline = time.Time{}
	}
	// Completions still held as task_work are flushed by reap (Reap
	// enters once when the kernel flags them).
}

func (l *loop) closeGoWait() {
	if l.gw != nil {
		l.gw.f.Close()
	}
}
