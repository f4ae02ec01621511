package uringrt

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// pollBlocking is experiment.PollBlocking, the behaviour the hybrid mode replaced:
// each operation runs on a worker of the fixed pool (Config.Workers) that
// blocks on the socket, keyed by descriptor.
type pollBlocking struct{}

func (pollBlocking) pollsForLife() bool { return false }

func (pollBlocking) read(fd *netFD, b []byte) (n int, errno syscall.Errno, waited, again bool) {
	n, errno, ok := fd.blockingOp(&fd.ringOps().rop, b, false)
	return n, errno, ok, !ok
}

func (pollBlocking) write(fd *netFD, b []byte) (n int, errno syscall.Errno, waited, again bool) {
	n, errno, ok := fd.blockingOp(&fd.ringOps().wop, b, true)
	return n, errno, ok, !ok
}

// blockingOp runs a recv or send of b on a fixed worker that blocks on this
// socket (poll(2), then the call): the pre-hybrid io-wq behaviour.
func (fd *netFD) blockingOp(o *op, b []byte, write bool) (int, syscall.Errno, bool) {
	if !fd.incref() {
		return 0, 0, false
	}
	dl, pd := &fd.rdl, int16(unix.POLLIN)
	if write {
		dl, pd = &fd.wdl, unix.POLLOUT
	}
	queued := time.Now()
	err := fd.rt.pool.GoKey(uint64(fd.fd), func() {
		fd.l.observeBlockingWait(time.Since(queued))
		o.res = blockingCall(fd, dl, pd, b, write)
		o.done <- struct{}{}
	})
	if err != nil {
		fd.decref()
		return 0, syscall.ECANCELED, true
	}
	<-o.done
	res := o.res
	fd.decref()
	if res < 0 {
		return 0, ioErrno(res), true
	}
	return int(res), 0, true
}

// blockingCall does the call and, on EAGAIN, waits in poll(2) on the socket
// for up to 10 ms holding its worker (the head-of-line blocking of the
// pre-hybrid io-wq), then tries once more. It returns -EAGAIN when the
// socket stayed unready, so the caller re-queues the operation and
// Close, deadlines and other connections' work are never starved forever.
func blockingCall(fd *netFD, dl *deadline, events int16, b []byte, write bool) int32 {
	for try := 0; ; try++ {
		if fd.closing.Load() || dl.expired.Load() {
			return -int32(syscall.ECANCELED)
		}
		var n int
		var errno syscall.Errno
		if write {
			n, errno = rawSend(fd.fd, b)
		} else {
			n, errno = rawRecv(fd.fd, b)
		}
		if errno == 0 {
			return int32(n)
		}
		if errno != syscall.EAGAIN || try == 1 {
			return -int32(errno)
		}
		pfd := []unix.PollFd{{Fd: int32(fd.fd), Events: events}}
		unix.Poll(pfd, 10)
	}
}
