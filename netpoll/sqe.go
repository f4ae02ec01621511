package netpoll

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// GetSQE returns the next free SQE, zeroed, or nil when the SQ is full (the
// caller submits and retries; GetSQE never spins). The SQE is published to
// the kernel by the next Submit or SubmitAndWait.
func (r *Ring) GetSQE() *SQE {
	head := r.sqeHead
	if r.flags&SetupSQPoll != 0 {
		head = atomic.LoadUint32(r.sqHead)
	} else if r.sqeTail-head >= r.sqEntries {
		// Unsubmitted SQEs fill the queue. The kernel may have consumed
		// published ones: check its head.
		head = atomic.LoadUint32(r.sqHead)
	}
	if r.sqeTail-head >= r.sqEntries {
		r.stat.SQFull++
		return nil
	}
	sqe := &r.sqes[r.sqeTail&r.sqMask]
	r.sqeTail++
	*sqe = SQE{}
	return sqe
}

// SQSpace returns how many SQEs GetSQE can hand out before the SQ is full.
func (r *Ring) SQSpace() uint32 {
	return r.sqEntries - (r.sqeTail - atomic.LoadUint32(r.sqHead))
}

// Pending returns the number of SQEs prepared but not yet submitted.
func (r *Ring) Pending() uint32 { return r.sqeTail - r.sqeHead }

// flushSQ publishes prepared SQEs with one release store of the SQ tail and
// returns how many SQEs the kernel has yet to consume.
func (r *Ring) flushSQ() uint32 {
	if r.sqeTail != r.sqeHead {
		r.sqeHead = r.sqeTail
		atomic.StoreUint32(r.sqTail, r.sqeTail)
	}
	return r.sqeTail - atomic.LoadUint32(r.sqHead)
}

// SetFlags ORs IOSQE_* flags (SQEAsync, SQEIOLink, SQEBufferSelect,
// SQEFixedFile, SQECQESkipSuccess) into the SQE.
func (s *SQE) SetFlags(f uint8) *SQE { s.Flags |= f; return s }

// SetUserData sets the value the CQE carries back.
func (s *SQE) SetUserData(u uint64) *SQE { s.UserData = u; return s }

// SetBufGroup selects buffers from provided buffer group bgid and sets
// IOSQE_BUFFER_SELECT. Needs Linux 5.7+ (buffer rings 5.19+).
func (s *SQE) SetBufGroup(bgid uint16) *SQE {
	s.BufIndex = bgid
	s.Flags |= SQEBufferSelect
	return s
}

func (s *SQE) prep(op Opcode, fd int, addr unsafe.Pointer, n uint32, off uint64) {
	s.Opcode = op
	s.FD = int32(fd)
	s.Addr = uint64(uintptr(addr))
	s.Len = n
	s.Off = off
}

func bufPtr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(unsafe.SliceData(b))
}

// Memory passed to a Prep method (buffers, sockaddrs, iovecs, msghdrs) is
// read or written by the kernel after the call returns: the caller keeps it
// reachable and untouched until the request's CQE arrives (the kernel copies
// timespecs and sockaddr lengths at submit; buffers it uses until completion).

// PrepNop prepares IORING_OP_NOP (5.1+): completes with res 0.
func (s *SQE) PrepNop() { s.prep(OpNop, -1, nil, 0, 0) }

// PrepAccept prepares IORING_OP_ACCEPT (5.5+) on listening socket fd.
// addr/addrLen may be nil; flags are accept4(2) flags (SOCK_NONBLOCK,
// SOCK_CLOEXEC). res is the new fd or -errno.
func (s *SQE) PrepAccept(fd int, addr unsafe.Pointer, addrLen *uint32, flags uint32) {
	s.prep(OpAccept, fd, addr, 0, uint64(uintptr(unsafe.Pointer(addrLen))))
	s.OpFlags = flags
}

// PrepAcceptMultishot prepares a multishot accept (5.19+): one CQE per
// accepted connection while IORING_CQE_F_MORE is set; re-arm when a CQE
// lacks it.
func (s *SQE) PrepAcceptMultishot(fd int, flags uint32) {
	s.PrepAccept(fd, nil, nil, flags)
	s.IOPrio |= acceptMultishot
}

// PrepConnect prepares IORING_OP_CONNECT (5.5+) to the raw sockaddr at addr
// of addrLen bytes. res is 0 or -errno (ECONNREFUSED, ETIMEDOUT, ...).
func (s *SQE) PrepConnect(fd int, addr unsafe.Pointer, addrLen uint32) {
	s.prep(OpConnect, fd, addr, 0, uint64(addrLen))
}

// PrepRecv prepares IORING_OP_RECV (5.6+) into buf with recv(2) flags.
// res is the byte count (0 at orderly EOF) or -errno.
func (s *SQE) PrepRecv(fd int, buf []byte, flags uint32) {
	s.prep(OpRecv, fd, bufPtr(buf), uint32(len(buf)), 0)
	s.OpFlags = flags
}

// PrepRecvDiscard prepares IORING_OP_RECV with no buffer and MSG_TRUNC:
// on a TCP socket the kernel drops up to n queued bytes without copying
// them anywhere (tcp(7), MSG_TRUNC). res is the count dropped, 0 at the
// peer's FIN, or -errno; like any recv it waits for data when none is
// queued. Other protocols read MSG_TRUNC differently (a datagram's real
// length): use it on TCP sockets only.
func (s *SQE) PrepRecvDiscard(fd int, n uint32) {
	s.prep(OpRecv, fd, nil, n, 0)
	s.OpFlags = unix.MSG_TRUNC
}

// PrepRecvSelect prepares a recv that picks its buffer from provided buffer
// group bgid (IOSQE_BUFFER_SELECT, 5.7+; ring groups 5.19+). The CQE
// carries the buffer id (CQE.BufferID); res ENOBUFS means the group was empty.
func (s *SQE) PrepRecvSelect(fd int, bgid uint16, flags uint32) {
	s.prep(OpRecv, fd, nil, 0, 0)
	s.OpFlags = flags
	s.SetBufGroup(bgid)
}

// PrepRecvMultishot prepares a multishot recv with buffer select (6.0+): one
// CQE per received chunk while IORING_CQE_F_MORE is set. It stops (no F_MORE)
// at EOF, on error, or with ENOBUFS when group bgid runs dry; re-arm then.
func (s *SQE) PrepRecvMultishot(fd int, bgid uint16, flags uint32) {
	s.PrepRecvSelect(fd, bgid, flags)
	s.IOPrio |= recvMultishot
}

// SetRecvLimit caps the bytes a multishot recv receives in all (sqe->optlen,
// IORING_RECV_MSHOT_LIM, Linux 6.17+): after total bytes it ends, its last
// CQE without IORING_CQE_F_MORE, and is re-armed by its owner. Kernels
// before 6.17 fail such a recv with EINVAL. total 0 means no limit.
func (s *SQE) SetRecvLimit(total uint32) { s.FileIndex = int32(total) }

// SetBundle asks a buffer-select recv or send to use as many provided
// buffers as are ready in one CQE (IORING_RECVSEND_BUNDLE, 6.10+,
// FeatRecvSendBundle).
func (s *SQE) SetBundle() { s.IOPrio |= recvsendBundle }

// SetPollFirst asks the kernel to skip its nonblock try and arm poll at once
// (IORING_RECVSEND_POLL_FIRST, 5.19+): for a recv that is known to be empty.
func (s *SQE) SetPollFirst() { s.IOPrio |= recvsendPollFirst }

// PrepSend prepares IORING_OP_SEND (5.6+) of buf with send(2) flags (use
// MSG_NOSIGNAL). res is the byte count, which may be short, or -errno.
func (s *SQE) PrepSend(fd int, buf []byte, flags uint32) {
	s.prep(OpSend, fd, bufPtr(buf), uint32(len(buf)), 0)
	s.OpFlags = flags
}

// PrepSendZC prepares IORING_OP_SEND_ZC (6.0+): a send whose pages the
// kernel pins instead of copying. It posts two CQEs: the send's result (res
// the byte count or -errno, with IORING_CQE_F_MORE when a notification
// follows), then a notification (CQE.Notif, res 0) once the kernel no
// longer reads buf; only then may buf be reused. Loopback and veth peers
// copy the pinned pages on receive (skb_orphan_frags_rx), so there it is a
// copy plus the pinning: BenchmarkSendLoopback measures both ops.
func (s *SQE) PrepSendZC(fd int, buf []byte, flags uint32) {
	s.prep(OpSendZC, fd, bufPtr(buf), uint32(len(buf)), 0)
	s.OpFlags = flags
}

// PrepRecvmsg prepares IORING_OP_RECVMSG (5.3+) with a struct msghdr.
func (s *SQE) PrepRecvmsg(fd int, msg unsafe.Pointer, flags uint32) {
	s.prep(OpRecvmsg, fd, msg, 1, 0)
	s.OpFlags = flags
}

// PrepRecvmsgMultishot prepares a multishot IORING_OP_RECVMSG with buffer
// select from group bgid (6.0+): one CQE per datagram while
// IORING_CQE_F_MORE is set. msg is a template read at submission: its
// msg_namelen and msg_controllen reserve that much room in each buffer,
// which then holds struct io_uring_recvmsg_out (16 bytes: namelen,
// controllen, payloadlen, flags), the name, the control messages and the
// payload; CQE.Res is the bytes used. It stops (no F_MORE) on error or with
// ENOBUFS when the group runs dry; re-arm then.
func (s *SQE) PrepRecvmsgMultishot(fd int, msg unsafe.Pointer, bgid uint16, flags uint32) {
	s.PrepRecvmsg(fd, msg, flags)
	s.SetBufGroup(bgid)
	s.IOPrio |= recvMultishot
}

// PrepSendmsg prepares IORING_OP_SENDMSG (5.3+) with a struct msghdr.
func (s *SQE) PrepSendmsg(fd int, msg unsafe.Pointer, flags uint32) {
	s.prep(OpSendmsg, fd, msg, 1, 0)
	s.OpFlags = flags
}

// PrepWritev prepares IORING_OP_WRITEV (5.1+) of n iovecs at iov (struct
// iovec, 16 bytes each), at file offset off (^uint64(0) = current position,
// as for a socket).
func (s *SQE) PrepWritev(fd int, iov unsafe.Pointer, n uint32, off uint64) {
	s.prep(OpWritev, fd, iov, n, off)
}

// PrepPollAdd prepares IORING_OP_POLL_ADD (5.1+) for poll(2) events
// (POLLIN, POLLOUT, ...). res is the ready mask or -errno. With multishot
// (5.13+) it posts a CQE per readiness change while F_MORE is set.
func (s *SQE) PrepPollAdd(fd int, events uint32, multishot bool) {
	s.prep(OpPollAdd, fd, nil, 0, 0)
	s.OpFlags = events
	if multishot {
		s.Len = pollAddMulti
	}
}

// PrepPollRemove prepares IORING_OP_POLL_REMOVE (5.1+) of the poll request
// whose user_data is target. res 0, or -ENOENT when it had completed.
func (s *SQE) PrepPollRemove(target uint64) {
	s.prep(OpPollRemove, -1, nil, 0, 0)
	s.Addr = target
}

// PrepCancel prepares IORING_OP_ASYNC_CANCEL (5.5+) of the request whose
// user_data is target. res 0 when found and cancelled (the target then
// completes with -ECANCELED), -ENOENT when not found, -EALREADY when it was
// running and could not be stopped.
func (s *SQE) PrepCancel(target uint64) {
	s.prep(OpAsyncCancel, -1, nil, 0, 0)
	s.Addr = target
}

// PrepCancelFD prepares a cancel of requests on fd (5.19+):
// all of them when all is set (res = number cancelled), else the first.
func (s *SQE) PrepCancelFD(fd int, all bool) {
	s.prep(OpAsyncCancel, fd, nil, 0, 0)
	s.OpFlags = cancelFD
	if all {
		s.OpFlags |= cancelAll
	}
}

// PrepCancelAll prepares a cancel of every request in the ring (5.19+);
// res is the number cancelled.
func (s *SQE) PrepCancelAll() {
	s.prep(OpAsyncCancel, -1, nil, 0, 0)
	s.OpFlags = cancelAny | cancelAll
}

// PrepTimeout prepares IORING_OP_TIMEOUT (5.4+): completes with -ETIME after
// ts (relative), or with 0 once count other CQEs were posted (count 0 =
// time only). The kernel copies ts at submit.
func (s *SQE) PrepTimeout(ts *Timespec, count uint32, abs bool) {
	s.prep(OpTimeout, -1, unsafe.Pointer(ts), 1, uint64(count))
	if abs {
		s.OpFlags = timeoutAbs
	}
}

// PrepTimeoutRemove prepares IORING_OP_TIMEOUT_REMOVE (5.5+) of the timeout
// whose user_data is target.
func (s *SQE) PrepTimeoutRemove(target uint64) {
	s.prep(OpTimeoutRemove, -1, nil, 0, 0)
	s.Addr = target
}

// PrepLinkTimeout prepares IORING_OP_LINK_TIMEOUT (5.5+): it bounds the
// previous SQE, which must carry SQEIOLink. If ts passes first, that request
// is cancelled (-ECANCELED) and this one completes with -ETIME; otherwise
// this one completes with -ECANCELED. The kernel copies ts at submit.
func (s *SQE) PrepLinkTimeout(ts *Timespec) {
	s.prep(OpLinkTimeout, -1, unsafe.Pointer(ts), 1, 0)
}

// PrepClose prepares IORING_OP_CLOSE (5.6+) of fd.
func (s *SQE) PrepClose(fd int) { s.prep(OpClose, fd, nil, 0, 0) }

// PrepShutdown prepares IORING_OP_SHUTDOWN (5.11+); how is SHUT_RD, SHUT_WR
// or SHUT_RDWR.
func (s *SQE) PrepShutdown(fd int, how int) { s.prep(OpShutdown, fd, nil, uint32(how), 0) }

// PrepMsgRing prepares IORING_OP_MSG_RING (5.18+): posts a CQE with res and
// userData to the ring whose fd is ringFD, waking its waiter. Add
// SQECQESkipSuccess to spare the sending ring its own CQE.
func (s *SQE) PrepMsgRing(ringFD int, res uint32, userData uint64) {
	s.prep(OpMsgRing, ringFD, nil, res, userData)
	s.Addr = msgRingData
}

// PrepRead prepares IORING_OP_READ (5.6+) into buf at file offset off
// (^uint64(0) = current position, as for an eventfd or socket).
func (s *SQE) PrepRead(fd int, buf []byte, off uint64) {
	s.prep(OpRead, fd, bufPtr(buf), uint32(len(buf)), off)
}
