package uringrt

import "syscall"

// pollHybrid is experiment.PollHybrid, the default: the caller tries recv(2) or
// send(2) nonblocking and, on EAGAIN, parks on the fd's pollDesc until a
// poll CQE of the loop's completion batch wakes it. Reads park on the
// multishot POLLIN armed when the connection opened; writes post a
// one-shot POLLOUT.
type pollHybrid struct{}

func (pollHybrid) pollsForLife() bool { return true }

func (pollHybrid) read(fd *netFD, b []byte) (n int, errno syscall.Errno, waited, again bool) {
	if fd.rdDrained {
		// The last recv returned less than asked: the socket's
		// queue was empty then, and any byte since has posted a
		// poll CQE. Wait for it instead of paying a recv that
		// would only say EAGAIN.
		fd.rdDrained = false
		fd.waitRead()
		return 0, 0, true, true
	}
	if !fd.incref() {
		return 0, 0, false, true
	}
	if fd.gp.Load() != 0 {
		fd.goPollReset()
	}
	n, errno = rawRecv(fd.fd, b)
	fd.decref()
	if errno == syscall.EAGAIN {
		fd.waitRead()
		return 0, 0, true, true
	}
	// Not with Go's netpoller (goPollMode): its events carry no POLLRDHUP, and
	// a FIN that came with the last bytes, before the reader was woken,
	// posts no event of its own, so a wait after that short read would
	// never end.
	fd.rdDrained = !fd.goPollMode() && errno == 0 && n > 0 && n < len(b) && !fd.rdHup.Load()
	return n, errno, false, false
}

func (pollHybrid) write(fd *netFD, b []byte) (n int, errno syscall.Errno, waited, again bool) {
	if !fd.incref() {
		return 0, 0, false, true
	}
	n, errno = rawSend(fd.fd, b)
	fd.decref()
	if errno == syscall.EAGAIN {
		fd.waitWrite()
		return 0, 0, true, true
	}
	return n, errno, false, false
}
