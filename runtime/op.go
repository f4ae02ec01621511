package uringrt

import (
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/uringrt/uringrt/netpoll"
)

// opKind says what an in-flight ring request is; each kind's SQE
// preparation and the meaning of its CQE live in a file of their own
// (op_wake.go, op_poll.go, op_rw.go, op_cb.go, op_cb_send.go, op_accept.go).
type opKind uint8

const (
	opWake     opKind = iota + 1 // read of the loop's eventfd (op_wake.go)
	opPollIn                     // multishot POLLIN on a netFD, hybrid mode (op_poll.go)
	opPollOut                    // one-shot POLLOUT on a netFD, hybrid mode (op_poll.go)
	opRecv                       // recv into the caller's buffer, ring/async modes (op_rw.go)
	opSend                       // send of the caller's buffer, ring/async modes (op_rw.go)
	opCBRecv                     // multishot (or single) recv for a callback conn (op_cb.go)
	opCBSend                     // send of a callback conn's queued output (op_cb_send.go)
	opAcceptCB                   // multishot accept for Serve (op_accept.go)
	opTimer                      // accept back-off timer (op_accept.go)
	opUDPRecv                    // multishot recvmsg of a PacketConn (udp_multishot.go)
	opCBLinger                   // a closing callback conn's discarding recv (callback_linger.go)
)

// op is one request the loop has (or will have) in flight. Its life is
// written once, in this file, and every kind uses it:
//
//	free --arm--> submitted --CQE with F_MORE--> submitted (multishot)
//	                  |  \--cancelOp--> cancelling --(cancel failed: resent)
//	                  v                     |
//	             last CQE (no F_MORE) <-----+
//	                  |
//	   retire: slot freed, in-flight counts dropped -> complete (the
//	   kind's own completion) -> its fd closed if it was the fd's last op
//
// An op whose deadline passed, whose fd is closing, or whose loop is
// stopping is not submitted: it completes at once as if its CQE said
// ECANCELED. The slot table maps user_data (slot+1) to the op; the loop
// counts ops in flight (inflight), each netFD its own (ops) and each
// callback conn its own (armed). A buffer in buf belongs to the kernel
// from the SQE until the last CQE; the op keeps it reachable and nobody
// touches it in between. Cancellation (deadline, Close) is an
// ASYNC_CANCEL of the op's user_data, and the owner still waits for the
// op's own CQE.
type op struct {
	kind     opKind
	sqeFlags uint8
	armed    bool // loop-owned: in flight
	cancel   bool // loop-owned: a cancel is queued or sent
	slot     uint32
	fd       int
	events   uint32
	tid      int32 // opPollIn, multishot opCBRecv and opAcceptCB: the thread that submitted it (loops that park in Go's netpoller)
	buf      []byte
	res      int32
	flags    uint32
	nfd      *netFD        // opPollIn/opPollOut/opRecv/opSend/opAcceptCB
	cc       *CallbackConn // opCBRecv/opCBSend/opCBLinger
	ln       *listener     // opAcceptCB/opTimer
	ur       *udpRing      // opUDPRecv
	done     chan struct{}
	expired  *atomic.Bool     // deadline passed: complete with ECANCELED instead of arming
	ts       netpoll.Timespec // opTimer's timespec
}

func (o *op) bufPtr() unsafe.Pointer {
	if len(o.buf) == 0 {
		return nil
	}
	return unsafe.Pointer(unsafe.SliceData(o.buf))
}

// arm submits o: it takes a slot, has the kind prep its SQE and counts o
// in flight. An op that must not run completes at once with ECANCELED.
func (l *loop) arm(o *op) {
	if o.armed {
		return
	}
	if (o.expired != nil && o.expired.Load()) || (o.nfd != nil && o.nfd.closing.Load()) || l.stopping && o.kind != opWake {
		// Completed as if its CQE said ECANCELED, so that its owner
		// learns it (a callback conn's send while the loop stops: before,
		// nothing ran and the conn was never closed, left in CLOSE_WAIT).
		o.res, o.flags = -int32(syscall.ECANCELED), 0
		switch o.kind {
		case opAcceptCB, opTimer:
			// stopServe ends these; re-arming here would recurse.
		default:
			l.complete(o)
		}
		return
	}
	sqe := l.getSQE()
	sqe.UserData = l.takeSlot(o)
	l.prep(sqe, o)
	sqe.Flags |= o.sqeFlags
	if o.nfd != nil {
		o.nfd.ops = append(o.nfd.ops, o)
	}
	if o.cc != nil {
		o.cc.armed++
	}
}

// prep fills sqe for o's kind.
func (l *loop) prep(sqe *netpoll.SQE, o *op) {
	switch o.kind {
	case opWake:
		l.prepWake(sqe)
	case opPollIn, opPollOut:
		l.prepPoll(sqe, o)
	case opRecv, opSend:
		prepRW(sqe, o)
	case opUDPRecv:
		o.ur.prep(sqe)
	default:
		l.prepCB(sqe, o) // callback_loop.go
	}
}

// complete runs o's completion: what its CQE (or its refusal) means.
func (l *loop) complete(o *op) {
	switch o.kind {
	case opWake:
		l.completeWake(o)
	case opPollIn:
		l.completePollIn(o)
	case opPollOut:
		l.completePollOut(o)
	case opRecv, opSend:
		l.finish(o)
	case opUDPRecv:
		o.ur.onCQE(l, o)
	default:
		l.completeCB(o) // callback_loop.go
	}
}

// completeCQE handles one CQE: a cancel's failure, or an op's result. The
// last CQE of an op retires it before its completion runs; the fd of a
// Close waiting for that op is closed after it.
func (l *loop) completeCQE(c *netpoll.CQE) {
	if c.UserData == 0 {
		return // cancel-all's failure at teardown: nothing to do
	}
	if c.UserData&udCancelOp != 0 {
		l.cancelDone(c.UserData)
		return
	}
	o := l.slots[c.UserData-1]
	if o == nil {
		return
	}
	o.res, o.flags = c.Res, c.Flags
	if c.Flags&netpoll.CQEFMore != 0 {
		l.complete(o) // a multishot op stays submitted
		return
	}
	if o.kind == opPollIn || o.kind == opPollOut {
		l.polls--
	}
	l.freeSlot(o)
	if o.cc != nil {
		o.cc.armed--
	}
	nfd := o.nfd
	if nfd != nil {
		nfd.dropOp(o)
	}
	l.complete(o)
	if nfd != nil && nfd.closeQueued && len(nfd.ops) == 0 {
		l.closing--
		l.closes.push(nfd) // close.go: closed within the loop's budget
	}
}

// finish queues the owner of a one-shot op for waking.
func (l *loop) finish(o *op) {
	if o.done != nil {
		l.opWakes = append(l.opWakes, o)
	}
}

// takeSlot puts o in the slot table and returns its user_data (slot+1).
func (l *loop) takeSlot(o *op) uint64 {
	var s uint32
	if n := len(l.free); n > 0 {
		s = l.free[n-1]
		l.free = l.free[:n-1]
		l.slots[s] = o
	} else {
		s = uint32(len(l.slots))
		l.slots = append(l.slots, o)
	}
	o.slot = s
	o.armed = true
	o.cancel = false
	l.inflight++
	return uint64(s) + 1
}

// freeSlot takes o out of the slot table (its last CQE came).
func (l *loop) freeSlot(o *op) {
	l.slots[o.slot] = nil
	l.free = append(l.free, o.slot)
	o.armed = false
	l.inflight--
}

// udCancelOp marks the user data of a cancel SQE: | slot+1 of the target
// op. A cancel that succeeds posts no CQE (CQE_SKIP_SUCCESS); one that
// fails says which op it was for, so that the loop sends it again while
// the target survives it: an IOSQE_ASYNC recv caught moving from io-wq to
// its internal poll is found by neither (ENOENT) or is running (EALREADY),
// and without a second cancel it would wait for data forever. Cancels are
// always by user data: the kernel finds a poll by a hash of it, where a
// cancel by fd walks every armed poll of the ring (closing N connections
// at once then costs N squared).
const udCancelOp = 1 << 62

func (l *loop) cancelOp(o *op) {
	if !o.armed || o.cancel {
		return
	}
	o.cancel = true
	l.sendCancel(o)
}

func (l *loop) sendCancel(o *op) {
	sqe := l.getSQE()
	sqe.PrepCancel(uint64(o.slot) + 1)
	sqe.UserData = udCancelOp | (uint64(o.slot) + 1)
	sqe.Flags |= netpoll.SQECQESkipSuccess
}

// cancelDone handles the CQE of a cancel that failed (found nothing, or
// found the op running). If the target is still in flight and still meant
// to be cancelled, the cancel is sent again (on the loop's next pass, so a
// target that is busy gets time to reach a cancellable state).
func (l *loop) cancelDone(ud uint64) {
	slot := ud&^udCancelOp - 1
	if slot < uint64(len(l.slots)) {
		if o := l.slots[slot]; o != nil && o.armed && o.cancel {
			l.recancel = append(l.recancel, o)
		}
	}
}

// cancelRetryGap spaces resent cancels: a target running in io-wq answers
// EALREADY at once, and resending on every pass would spin the loop against
// the worker it waits for.
const cancelRetryGap = 50 * time.Microsecond

// resendCancels sends again the cancels that failed, at most once per
// cancelRetryGap (the loop's wait is shortened to that while some are due).
func (l *loop) resendCancels() {
	if len(l.recancel) == 0 || time.Since(l.lastResend) < cancelRetryGap {
		return
	}
	l.lastResend = time.Now()
	// Take the list first: sending can reap (getSQE on a full SQ), and
	// a cancel failing then is queued for the next round, not dropped.
	ops := l.recancel
	l.recancel = nil
	for _, o := range ops {
		if o.armed && o.cancel {
			l.sendCancel(o)
		}
	}
}
