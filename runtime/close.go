package uringrt

import (
	"net"
	"runtime"

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
//	   (callback conn, whose loop also drains its queued output first,
//	   and lingers for the peer's FIN when close(2) would reset: see
//	   callback_linger.go).
//
// A TCP net.Conn with nothing unread takes a shortcut (shutClose): Close
// shuts the socket down itself, so the FIN leaves at once, and returns; the
// loop still cancels and closes as above, later.
//
// Cancels are by user_data, never by fd: the kernel finds a poll by a hash
// of its user_data, while a cancel by fd walks every armed poll of the
// ring (closing N connections at once then cost N squared).

// close implements Close: mark closing, wake parked goroutines, cancel ops
// in flight, wait until no goroutine uses fd, then let the loop close(2) fd
// once every CQE of fd is in. As with Go's net, the FIN (or the RST of a
// close with unread data) has left when it returns: a TCP connection's by
// shutClose, without waiting for the loop; anything else's because Close
// waits for the loop's close(2). (Only closing the descriptor here and
// letting the loop finish is not enough: the socket would live on until
// the poll's cancel completed, so a peer's write right after Close would
// succeed where Go's net fails with a reset; FuzzConnVsStd checks it.)
func (n *netFD) close() error {
	if !n.closing.CompareAndSwap(false, true) {
		return net.ErrClosed
	}
	n.rdl.stop()
	n.wdl.stop()
	n.rd.interrupt()
	n.wr.interrupt()
	n.cancelIO(false)
	n.cancelIO(true)
	for n.refs.Load() != 0 {
		runtime.Gosched()
	}
	if n.connIO != nil && n.gp.Load() != 0 {
		// After the references: a recv in flight resets the entry
		// (goPollReset) before it ends.
		n.goPollClose()
	}
	if n.connIO != nil && n.goPollMode() && !n.ringUsed.Load() {
		// In Go's netpoller (or never registered there, no reader
		// having had to wait), and nothing of fd ever went to the ring
		// (waitWrite sets ringUsed before it checks closing, so one that
		// raced with this Close posts nothing): close(2) here, as Go's
		// net does.
		n.finalClose()
		return nil
	}
	if n.shutClose() {
		// The FIN has left and the socket resets a peer that writes
		// on: the loop cancels the poll and closes fd without Close
		// waiting for it (and a loop that exited closes it in post).
		n.l.post(request{kind: reqCloseFD, nfd: n})
		return nil
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

// shutClose is Close's fast path for a TCP connection (net.Conn API, not
// MPTCP) with nothing unread (SIOCINQ 0), no SO_LINGER (however set) and
// no RawConn or File use (rawTouched): shutdown(2) SHUT_RDWR in the caller, so Close need not
// wait for the loop to cancel the socket's poll (the poll holds a
// reference to the socket, so a close(2) alone would send nothing until
// then). It reports whether the socket was shut down.
//
// To the peer this is what Go's net's close(2) does: the FIN leaves now;
// data arriving after it is answered with a reset, since Linux resets a
// socket in FIN_WAIT1/2 whose reading side is shut (RFC 1122 4.2.2.13) as
// it does an orphaned one; a peer's FIN in CLOSE_WAIT leads to LAST_ACK
// the same way. With data unread, Go's close(2) sends a reset instead of a
// FIN, so that case keeps the slow path, whose close(2) does the same.
// The descriptor stays open (so never reused) until the loop's close(2).
// BenchmarkConnCloseToEOF measures what this saves.
func (n *netFD) shutClose() bool {
	if n.connIO == nil || !(n.dialed || n.ln != nil) || n.rawTouched.Load() || !n.tcp() {
		return false
	}
	if inq, err := unix.IoctlGetInt(n.fd, unix.SIOCINQ); err != nil || inq != 0 {
		return false
	}
	// SO_LINGER set by a Dialer's or ListenConfig's Control hook (or
	// inherited from the listener) is seen only here; MPTCP's shutdown is
	// not TCP's (plainTCPNow: known at creation unless handed out raw
	// since, else asked).
	return n.plainTCPNow() && unix.Shutdown(n.fd, unix.SHUT_RDWR) == nil
}

// cancelIO cancels the recv (or, write, the send) op of a policy that has one in
// flight while a goroutine waits (experiment.PollRing, experiment.PollAsync, experiment.PollBlocking). Under
// experiment.PollHybrid a waiting goroutine parks on a poll instead and those ops are
// never used, so nothing is posted: no request and no wake-up of the loop
// per deadline or Close.
func (n *netFD) cancelIO(write bool) {
	if n.connIO == nil || n.rt.pol.pollsForLife() {
		return
	}
	x := n.ringOps()
	o := &x.rop
	if write {
		o = &x.wop
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
	if n.closed != nil {
		close(n.closed)
	}
}

// closeFD cancels every op on nfd, each by its user data, and closes the
// fd once their CQEs are in (reap queues it when the last one comes).
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
	l.closes.push(nfd)
}

// closeBudget is the most close(2)s a loop makes per iteration. A TCP
// close(2) sends the FIN (or RST) and, on loopback, runs the peer's side
// of it too, tens of microseconds or more: made all in the iteration that
// found them ready, thousands of peers hanging up at once would hold every
// other connection of the loop until the last close(2). A few per
// iteration keep it short; between two runs of them the loop reaps, sends
// and wakes as usual, so the others' traffic interleaves with the closes,
// as it does with Go's net, where each connection's goroutine makes its
// own close.
const closeBudget = 16

// closeQueue holds the descriptors whose last op completed (or that had
// none), in the order they became ready, until the loop closes them
// (loop only).
type closeQueue struct {
	q    []*netFD
	head int
	most int // the most closes one run made (tests)
}

func (c *closeQueue) push(n *netFD) { c.q = append(c.q, n) }

// empty reports whether no close waits.
func (c *closeQueue) empty() bool { return c.head == len(c.q) }

// run makes up to closeBudget final closes; all of them once the loop
// is stopping (it exits only with the queue empty).
func (c *closeQueue) run(l *loop) {
	end := len(c.q)
	if !l.stopping {
		end = min(end, c.head+closeBudget)
	}
	c.most = max(c.most, end-c.head)
	for ; c.head < end; c.head++ {
		c.q[c.head].finalClose()
		c.q[c.head] = nil
	}
	if c.head == len(c.q) {
		c.q, c.head = c.q[:0], 0
	}
}

// plainTCPSocket reports whether fd (of family) is a TCP socket, not
// MPTCP, with SO_LINGER off: two getsockopt(2), made once per listening
// socket so that no Close of a connection accepted from it makes them.
func plainTCPSocket(fd, family int) bool {
	if family != unix.AF_INET && family != unix.AF_INET6 {
		return false
	}
	if l, err := unix.GetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER); err != nil || l.Onoff != 0 {
		return false
	}
	p, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PROTOCOL)
	return err == nil && p == unix.IPPROTO_TCP
}

// plainDial reports whether a socket d dials for family is known plain
// TCP without asking the kernel: not MPTCP, and no Control hook that may
// have set SO_LINGER (SetLinger marks the conn rawTouched instead).
func plainDial(d *Dialer, family int) bool {
	if family != unix.AF_INET && family != unix.AF_INET6 {
		return false
	}
	return d == nil || !(d.mptcp || d.Control != nil || d.ControlContext != nil)
}
