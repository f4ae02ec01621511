package netpoll

import (
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Submit publishes prepared SQEs and submits them with one io_uring_enter
// (none when SQPOLL runs and is awake). It does not wait; on a
// DEFER_TASKRUN ring it runs the pending task_work (and flushes overflowed
// CQEs) only when the kernel flagged some (IORING_SQ_TASKRUN,
// IORING_SQ_CQ_OVERFLOW), so CQEs may be ready after it. It returns how many SQEs the kernel
// consumed. EINTR is retried; EAGAIN/EBUSY (the kernel is short of memory or
// holds overflowed CQEs) return the error with the SQEs still queued.
func (r *Ring) Submit() (int, error) {
	return r.SubmitAndWait(0, 0, 0)
}

// SubmitAndWait publishes prepared SQEs and, in the same io_uring_enter,
// waits until at least minComplete CQEs are ready (IORING_ENTER_GETEVENTS).
// On a DEFER_TASKRUN ring this is where the kernel runs the batch of
// task_work, so one wake-up brings minComplete completions instead of one.
//
// timeout > 0 bounds the wait (IORING_ENTER_EXT_ARG, 5.11+); it ending is
// not an error: SubmitAndWait returns with whatever is ready. minWait > 0
// (FeatMinTimeout, 6.12+) lets the kernel return after minWait as soon as
// one CQE is ready even if fewer than minComplete are; on older kernels it is
// ignored. With minComplete 0 it only submits (and, with GETEVENTS skipped,
// returns at once).
//
// When there are SQEs to submit (at most SetRawSubmitMax of them) or
// task_work pending, SubmitAndWait (on a ring without SQPOLL) first submits
// them and runs the task_work in up to 4 enters that do not sleep, and
// waits in a further one only if fewer than minComplete CQEs are ready by
// then; that wait then submits nothing, so its timeout counts in
// Stats.Timeouts and an EINTR restarts it.
//
// It returns how many SQEs were submitted. EINTR is retried (the wait starts
// again with the whole timeout). EAGAIN and EBUSY come back as *Error for the caller to reap
// CQEs and retry; EEXIST means the ring has SINGLE_ISSUER and the calling
// thread is not its submitter.
func (r *Ring) SubmitAndWait(minComplete uint32, timeout, minWait time.Duration) (int, error) {
	return r.submitAndWait(minComplete, timeout, minWait, false)
}

// SubmitAndWaitHoldP is SubmitAndWait with the wait made as a raw system
// call (RawSyscall6): the calling goroutine keeps its P (its slot in Go's
// scheduler) while the thread sleeps in the kernel, so Go's sysmon does not
// hand the P to another thread when the wait passes its 20 µs tick, and the
// thread comes back without asking for a P. Other goroutines cannot use
// that P meanwhile: keep timeout short (a few hundred µs). Go's
// preemption (sysmon after 10 ms, a GC stop-the-world) still interrupts the
// wait with a signal (EINTR); SubmitAndWaitHoldP then returns at once
// (nil error, what is ready is in the CQ) so that the preemption happens
// in the caller's next function call. Otherwise it returns what
// SubmitAndWait returns.
func (r *Ring) SubmitAndWaitHoldP(minComplete uint32, timeout, minWait time.Duration) (int, error) {
	return r.submitAndWait(minComplete, timeout, minWait, true)
}

func (r *Ring) submitAndWait(minComplete uint32, timeout, minWait time.Duration, holdP bool) (int, error) {
	if r.closed {
		return 0, ErrClosed
	}
	toSubmit := r.flushSQ()
	var flags uint32
	if r.flags&SetupSQPoll != 0 {
		if atomic.LoadUint32(r.sqFlags)&sqNeedWakeup != 0 {
			flags |= enterSQWakeup
		}
		toSubmit = 0 // the SQPOLL thread consumes them
	}
	if minComplete > 0 || r.cqNeedsEnter() {
		flags |= enterGetEvents
	}
	if flags == 0 && toSubmit == 0 {
		return 0, nil
	}
	var argp unsafe.Pointer
	argSz := uintptr(0)
	if flags&enterGetEvents != 0 && minComplete > 0 && timeout > 0 && r.features&FeatExtArg != 0 {
		r.ts = Timespec{Sec: int64(timeout / time.Second), Nsec: int64(timeout % time.Second)}
		r.arg = getEventsArg{ts: uint64(uintptr(unsafe.Pointer(&r.ts)))}
		if minWait > 0 && r.features&FeatMinTimeout != 0 {
			r.arg.minWaitUsec = uint32(minWait / time.Microsecond)
		}
		argp = unsafe.Pointer(&r.arg)
		argSz = unsafe.Sizeof(r.arg)
		flags |= enterExtArg
	}
	submitted := 0
	if minComplete > 0 && !holdP && r.flags&SetupSQPoll == 0 {
		n, done, err := r.flushBeforeWait(toSubmit, minComplete)
		submitted, toSubmit = n, toSubmit-uint32(n)
		if done || err != nil {
			return submitted, err
		}
	}
	for {
		n, errno := r.enter(toSubmit, minComplete, flags|r.enterFlg, argp, argSz, holdP)
		if n > 0 {
			submitted += n
			r.stat.SQEsSubmitted += uint64(n)
		}
		switch errno {
		case 0:
			return submitted, nil
		case syscall.EINTR:
			if holdP {
				return submitted, nil
			}
			toSubmit -= uint32(n)
			continue
		case syscall.ETIME:
			r.stat.Timeouts++
			return submitted, nil
		default:
			return submitted, enterErr(errno)
		}
	}
}

// flushBeforeWait submits a wait's SQEs (at most rawMax of them) and runs
// the pending task_work first, in up to preWaitFlushes enters that do not
// sleep (min_complete 0; since Linux 6.13 the kernel runs a bounded number
// of task_work items per such enter, IO_LOCAL_TW_DEFAULT_MAX, 20) and so
// are raw system calls (see enter). It returns the SQEs submitted and
// whether minComplete CQEs are ready, so that the wait need not sleep.
func (r *Ring) flushBeforeWait(toSubmit, minComplete uint32) (submitted int, done bool, err error) {
	for i := 0; i < preWaitFlushes && (toSubmit > 0 || r.cqFlagged()) && toSubmit <= r.rawMax; i++ {
		n, errno := r.enter(toSubmit, 0, enterGetEvents|r.enterFlg, nil, 0, false)
		if n > 0 {
			submitted += n
			r.stat.SQEsSubmitted += uint64(n)
			toSubmit -= uint32(n)
		}
		if errno != 0 && errno != syscall.EINTR {
			return submitted, false, enterErr(errno) // EAGAIN, EBUSY: the caller reaps and retries
		}
		if r.CQReady() >= minComplete {
			return submitted, true, nil
		}
	}
	return submitted, false, nil
}

// enterErr is the *Error of a failed io_uring_enter.
func enterErr(errno syscall.Errno) error {
	e := newError("io_uring_enter", errno)
	if errno == syscall.EEXIST {
		e.Detail = "SINGLE_ISSUER ring entered from a thread other than its submitter"
	}
	return e
}

// cqNeedsEnter reports whether the kernel holds completions that only an
// enter with GETEVENTS brings into the CQ: overflowed CQEs
// (IORING_SQ_CQ_OVERFLOW) or pending task_work (IORING_SQ_TASKRUN).
func (r *Ring) cqNeedsEnter() bool {
	f := atomic.LoadUint32(r.sqFlags)
	if f&sqCQOverflow != 0 {
		r.stat.CQOverflows++
		return true
	}
	return f&sqTaskrun != 0
}

// cqFlagged is cqNeedsEnter without counting an overflow (a wait asks it
// up to preWaitFlushes times).
func (r *Ring) cqFlagged() bool {
	return atomic.LoadUint32(r.sqFlags)&(sqTaskrun|sqCQOverflow) != 0
}

// CQPending reports, without a syscall, whether the loop has anything to reap:
// CQEs in the CQ, or completions the kernel holds until the next enter with
// GETEVENTS (deferred task_work flagged by IORING_SQ_TASKRUN, which needs
// TASKRUN_FLAG, 5.19+; or overflowed CQEs, IORING_SQ_CQ_OVERFLOW). A loop
// polls it before it sleeps (busy-poll); it is two atomic loads.
func (r *Ring) CQPending() bool {
	if atomic.LoadUint32(r.cqTail) != *r.cqHead {
		return true
	}
	return r.cqFlagged()
}

// preWaitFlushes bounds the enters a wait makes before it sleeps.
const preWaitFlushes = 4

// DefaultRawSubmitMax is a new Ring's SetRawSubmitMax: 64 SQEs.
const DefaultRawSubmitMax = 64

// SetRawSubmitMax sets the most SQEs (n >= 0) an enter that cannot sleep
// submits as a raw system call (RawSyscall6, which keeps the calling
// goroutine's P); an enter submitting more goes through Syscall6, where
// Go's scheduler may give the P to another thread while the kernel works.
// A wait (SubmitAndWait with minComplete > 0) whose SQEs are within the
// limit submits them first in up to 4 such raw enters and sleeps in a
// further one only if they left fewer than minComplete CQEs. While a raw
// enter runs, its goroutine counts as running: a GC stop-the-world waits
// for it, so keep n to what the kernel submits in about a millisecond.
//
// What the limit trades: the time an enter takes submitting SQEs is the
// calling thread's CPU work (the kernel sends a batch of SENDs, arms
// polls, runs task_work), not a sleep. If no other goroutine needs the P,
// a hand-off only lets sysmon retake it after 20 µs and wake an idle
// thread that finds nothing to run, and resets sysmon to its 20 µs tick:
// at 1000 connections that made most of the callback API's context
// switches, and a loop with 10 busy connections (whose waits asked for one
// CQE) paid it on every iteration (BENCHMARKS.md). If other
// goroutines are runnable on that P (parked net.Conn readers the loop just
// woke), the hand-off lets them run during a long submission.
func (r *Ring) SetRawSubmitMax(n uint32) { r.rawMax = n }

func (r *Ring) enter(toSubmit, minComplete, flags uint32, arg unsafe.Pointer, argSz uintptr, holdP bool) (int, syscall.Errno) {
	r.stat.Enters++
	if flags&enterGetEvents != 0 && minComplete > 0 {
		r.stat.Waits++
	}
	var n uintptr
	var errno syscall.Errno
	if (flags&enterGetEvents == 0 || minComplete == 0 || holdP) && toSubmit <= r.rawMax {
		// Submit only, or a flush without waiting (it never sleeps), or
		// a wait that keeps the P: skip the scheduler hand-off
		// (SetRawSubmitMax says when that pays).
		n, _, errno = unix.RawSyscall6(unix.SYS_IO_URING_ENTER, uintptr(r.enterFD), uintptr(toSubmit), uintptr(minComplete), uintptr(flags), uintptr(arg), argSz)
	} else {
		n, _, errno = unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.enterFD), uintptr(toSubmit), uintptr(minComplete), uintptr(flags), uintptr(arg), argSz)
	}
	if errno != 0 {
		return 0, errno
	}
	return int(n), 0
}
