package uringrt

import "syscall"

// pollRing is experiment.PollRing and experiment.PollAsync: the caller submits IORING_OP_RECV
// or IORING_OP_SEND into b through the loop (ringOp in op_rw.go; with
// IOSQE_ASYNC under experiment.PollAsync, so an io-wq worker blocks on the socket)
// and waits for its CQE. b belongs to the kernel until then.
type pollRing struct{}

func (pollRing) pollsForLife() bool { return false }

func (pollRing) read(fd *netFD, b []byte) (n int, errno syscall.Errno, waited, again bool) {
	n, errno, ok := fd.ringOp(&fd.ringOps().rop, b)
	return n, errno, ok, !ok
}

func (pollRing) write(fd *netFD, b []byte) (n int, errno syscall.Errno, waited, again bool) {
	n, errno, ok := fd.ringOp(&fd.ringOps().wop, b)
	return n, errno, ok, !ok
}
