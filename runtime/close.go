package runtime

import (
	"net"
	goruntime "runtime"

	"golang.org/x/sys/unix"
)

// One close protocol for every descriptor a loop drives, net.Conn,
// listener or callback conn:
//
//	mark closing (no new op is armed: arm completes it with ECANCELED)
//	-> wake parked goroutines and cancel each op in flight by its user_data
//	-> wait until no goroutine is inside a syscall on fd (refs) and the
//	   fd's in-flight ops reach zero (netFD.ops, reap counts them down)
//	-> close(2), untrack -> Close returns (net.Conn) or OnClose runs
//	   (callback conn, whose loop also drains its queued output first).
//
// Cancels are by user_data, never by fd: the kernel finds a poll by a hash
// of its user_data, while a cancel by fd walks every armed poll of the
// ring (closing N connections at once then cost N squared).

// close implements Close: mark closing, wake parked goroutines, cancel ops
// in flight, wait until no goroutine uses fd, then let the loop close(2) fd
// once every CQE of fd is in. It returns when fd is closed: as with Go's
// net, the FIN (or the RST of a close with unread data) has left when it
// returns. (Closing the descriptor here and letting the loop finish was
// tried: the socket then lives on until the poll's cancel completes, so a
// peer's write right after Close succeeded where Go's net fails with a
// reset; FuzzConnVsStd's seeds caught it.)
func (n *netFD) close() error {
	if !n.closing.CompareAndSwap(false, true) {
		return net.ErrClosed
	}
	n.rdl.stop()
	n.wdl.stop()
	n.rd.interrupt()
	n.wr.interrupt()
	n.cancelIO(&n.rop)
	n.cancelIO(&n.wop)
	for n.refs.Load() != 0 {
		goruntime.Gosched()
	}
	n.l.post(request{kind: reqCloseFD, nfd: n})
	select {
	case <-n.closed:
	case <-n.l.done:
		// The runtime closed and the loop exited before taking the request
		// (it waited for every CQE, so nothing of fd is in flight): close
		// here, unless the loop did before it exited.
		select {
		case <-n.closed:
		default:
			n.finalClose()
		}
	}
	return nil
}

// cancelIO cancels o, the recv or send op of a policy that has one in
// flight while a goroutine waits (PollRing, PollAsync, PollBlocking). Under
// PollHybrid a waiting goroutine parks on a poll instead and those ops are
// never used, so nothing is posted: no request and no wake-up of the loop
// per deadline or Close.
func (n *netFD) cancelIO(o *op) {
	if n.connIO == nil || n.rt.pol.pollsForLife() {
		return
	}
	n.l.post(request{kind: reqCancel, op: o})
}

// dropOp forgets o, whose last CQE came (loop only).
func (n *netFD) dropOp(o *op) {
	for i, p := range n.ops {
		if p == o {
			last := len(n.ops) - 1
			n.ops[i] = n.ops[last]
			n.ops[last] = nil
			n.ops = n.ops[:last]
			return
		}
	}
}

// finalClose runs on the loop when no op of fd is in flight (or once the
// loop has exited). It closes fd once.
func (n *netFD) finalClose() {
	if !n.final.CompareAndSwap(false, true) {
		return
	}
	unix.Close(n.fd)
	if n.unlinkPath != "" {
		unix.Unlink(n.unlinkPath)
	}
	n.rt.untrack(n)
	close(n.closed)
}

// closeFD cancels every op on nfd, each by its user data, and closes the
// fd once their CQEs are in (reap does it when the last one comes).
func (l *loop) closeFD(nfd *netFD) {
	if nfd.closeQueued {
		return
	}
	if len(nfd.ops) > 0 {
		nfd.closeQueued = true
		l.closing++
		for _, o := range nfd.ops {
			l.cancelOp(o)
		}
		return
	}
	nfd.finalClose()
}
