package uringrt

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Loop sends: a flush of few connections (a loop at partial load, woken
// for one or two messages) sends their queued output with one nonblocking
// send(2) each from the loop, as the net.Conn writer tries its bytes
// first, and arms a ring send only for what the socket did not take (a
// full socket: the kernel then waits for POLLOUT), after an error (the
// ring's send meets it again and reports it as it does for any send), or
// for larger flushes, whose sends leave in one submission.
//
// A ring send of a small message completes inline in the enter that
// submits it, but it still costs an SQE and its CQE, the loop iteration
// that reaps it, and, on a loop parked in Go's netpoller, a wake-up of the
// ring's fd in epoll for the CQE posted after the loop last looked. A
// send(2) whose bytes all go posts nothing: the loop reaps the recvs,
// runs OnData, sends and parks.
//
// The socket's send side is the loop's here as for a ring send: a
// writer's direct send (callback_direct.go) has been waited out
// (directWait) and cannot start while queued is above 0, which flushCB
// published before.

// loopSendMax is the most connections with output a flush sends from the
// loop (each loop's loopSends, which tests may set to 0: never); a flush
// of more submits ring sends (one enter for all of them).
const loopSendMax = 2

// loopSendOK reports whether this flush, of n dirty connections, sends
// from the loop.
func (l *loop) loopSendOK(n int) bool {
	return n <= l.loopSends && !l.stopping
}

// sendFromLoop sends c's queued output with one nonblocking send(2) (a
// sendmsg(2) of up to maxSendIov chunks) and accounts for what it took, as
// onSend does for a ring send's CQE. It reports true when nothing is left
// to send; false when c's peer was not keeping up (the last send was
// short: its socket is likely still full), the socket did not take all of
// it (EAGAIN, or a short send), it failed, or more is queued than one
// sendmsg covers: the caller then arms a ring send for the rest (loop
// only; c has no send in flight).
func (c *CallbackConn) sendFromLoop() bool {
	if c.sendShort {
		return false
	}
	l := c.l
	q := &c.outq
	var m int
	var errno syscall.Errno
	if len(q.chunks) <= 1 {
		m, errno = loopSend(c.fd.fd, q.next())
	} else {
		var total int
		l.sendIov, total = q.nextVec(l.sendIov)
		if total == 0 {
			q.inflight = 0
			return false
		}
		m, errno = loopSendmsg(c.fd.fd, l.sendIov, &l.sendMsg)
		clear(l.sendIov) // no chunk stays reachable from here
		l.sendIov = l.sendIov[:0]
		if errno == 0 && m > total {
			m = total // (never: the kernel sends at most the iovecs' bytes)
		}
	}
	if errno != 0 {
		// EAGAIN: the socket is full; an error: the ring's send meets it
		// and fails c as it does for any send.
		q.inflight = 0
		l.stats.loopRest.Add(1)
		return false
	}
	l.stats.loopSent.Add(1)
	l.stats.writtenBytes.Add(uint64(m))
	if m > 0 {
		c.active = true
		if c.tm != nil {
			c.tm.lastWrite = monoNow() // callback_deadline.go
		}
	}
	short := q.sent(l, m)
	c.sendShort = short // budget.go: stalled
	if short {
		l.stats.loopRest.Add(1)
		if !c.paused && !c.closing && q.n > c.pauseMark() {
			c.pauseRead(pauseConn) // the socket is full: stop reading now
		}
		return false
	}
	if q.n > 0 {
		// More chunks than one sendmsg(2) covers (maxSendIov), all of
		// whose bytes went: a ring send takes the rest, and its CQE does
		// what follows below.
		l.stats.loopRest.Add(1)
		return false
	}
	c.queued.Store(0)
	c.maybeResume()
	if c.hasDrainer {
		c.checkDrain() // callback_drain.go
	}
	c.maybeFinalize()
	return true
}

// loopSend is one send(2) of b that never blocks (MSG_DONTWAIT), raising
// no SIGPIPE (MSG_NOSIGNAL): a raw system call, which keeps the loop's P.
func loopSend(fd int, b []byte) (int, syscall.Errno) {
	n, _, e := syscall.RawSyscall6(syscall.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), unix.MSG_NOSIGNAL|unix.MSG_DONTWAIT, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}

// loopSendmsg is loopSend of the iovecs iov, with msg (the loop's, so that
// no msghdr is allocated per call) pointed at them.
func loopSendmsg(fd int, iov []unix.Iovec, msg *unix.Msghdr) (int, syscall.Errno) {
	*msg = unix.Msghdr{Iov: &iov[0]}
	msg.SetIovlen(len(iov))
	n, _, e := syscall.RawSyscall(syscall.SYS_SENDMSG, uintptr(fd), uintptr(unsafe.Pointer(msg)), unix.MSG_NOSIGNAL|unix.MSG_DONTWAIT)
	*msg = unix.Msghdr{}
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}
