package uringrt

import (
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/uringrt/uringrt/netpoll"
	"github.com/uringrt/uringrt/runtime/experiment"
)

// The net.Conn recv and send of the ring and async policies: the caller's
// buffer goes to the kernel with IORING_OP_RECV/SEND (IOSQE_ASYNC under
// experiment.PollAsync) and the caller waits for the CQE (finish wakes it).

// prepRW preps a recv into, or a send of, o.buf (MSG_NOSIGNAL: a reset
// peer gives EPIPE, never SIGPIPE).
func prepRW(sqe *netpoll.SQE, o *op) {
	if o.kind == opRecv {
		sqe.PrepRecv(o.fd, o.buf, 0)
	} else {
		sqe.PrepSend(o.fd, o.buf, unix.MSG_NOSIGNAL)
	}
}

// ringOp submits o (recv or send of b) through the loop and waits for its
// CQE. ok is false when fd is closing (nothing was submitted).
func (fd *netFD) ringOp(o *op, b []byte) (int, syscall.Errno, bool) {
	if !fd.incref() {
		return 0, 0, false
	}
	o.buf = b
	o.sqeFlags = 0
	if fd.rt.cfg.Pollable == experiment.PollAsync {
		o.sqeFlags = sqeAsync
	}
	fd.l.post(request{kind: reqArm, op: o})
	<-o.done
	o.buf = nil
	res := o.res
	fd.decref()
	if res < 0 {
		return 0, ioErrno(res), true
	}
	return int(res), 0, true
}

const sqeAsync = netpoll.SQEAsync
