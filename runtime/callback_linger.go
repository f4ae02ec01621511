package uringrt

import (
	"io"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/uringrt/uringrt/netpoll"
)

// The linger of a graceful close. Once a closing callback connection's
// output is all in the socket, close(2) would end it; but Linux answers a
// close(2) with a reset (RST) when input is left unread, and a socket
// closed with its output not yet acknowledged resets too when the peer's
// data arrives later. A reset drops what the socket still held to send:
// the peer, still sending while it reads slowly, would read ECONNRESET
// instead of the end of the output Close promised to send. So, at the
// end of a graceful close (Close, AsyncClose, the peer's EOF; not a
// failure, a timeout's cut-off or the runtime closing), when the peer has
// not sent its FIN and the socket holds unread input (SIOCINQ) or
// unacknowledged output (SIOCOUTQ):
//
//	shutdown(SHUT_WR): the FIN follows the output
//	-> a recv with no buffer and MSG_TRUNC (the kernel drops the peer's
//	   bytes without a copy), armed again while the peer sends
//	-> the peer's FIN (recv 0), an error, lingerMax, the end of
//	   Config.CloseTimeout, or the runtime closing ends it
//	-> close(2), then OnClose, as for any close.
//
// Up to lingerDiscardMax bytes are dropped; a peer that sends more is left
// unread until the bound (an upload nobody wants costs the loop no more
// than that). With both queues empty (the common end of a request and
// response, its answer acknowledged) the fd is closed at once, as before:
// two ioctls. A reset that comes after the peer acknowledged all output
// loses nothing: the peer still reads what its socket received, then the
// error. The connection stays counted (Stats, MaxConns) until its close(2);
// its timers, write caps and budget are done with when it begins.

// lingerMax bounds a close's wait for the peer's FIN, as net/http's
// rstAvoidanceDelay bounds its wait after CloseWrite.
const lingerMax = 500 * time.Millisecond

// lingerDiscardMax is the most input a linger drops before it stops
// reading (net/http reads up to 256 KiB of a request body nobody read).
const lingerDiscardMax = 256 << 10

// cbLinger is a lingering close's state, kept from the connection's
// timers (connTimers.lg) while it lasts.
type cbLinger struct {
	op   op        // the discarding recv (opCBLinger)
	t    LoopTimer // the bound
	left int       // bytes it may still drop
	done bool      // ended: close once op's CQE is in
}

// lingers reports whether c, ready to be closed, waits for its peer first
// (loop only; from maybeFinalize, with nothing of c in flight): it starts
// the linger when the close needs one, and ends one that must not go on.
func (c *CallbackConn) lingers() bool {
	if c.lingering {
		if !gracefulErr(c.closeErr) || c.l.stopping {
			c.endLinger()
		}
		return !c.tm.lg.done
	}
	if c.l.stopping || !gracefulErr(c.closeErr) || c.closeErr == io.EOF || c.rdEOF || !c.fd.tcp() {
		// The runtime closing, a failure (its close resets anyway),
		// or the peer's FIN already read: nothing unread, and nothing
		// more will come.
		return false
	}
	return c.startLinger()
}

// startLinger begins c's linger if its socket holds unread input or
// unacknowledged output, and reports whether it did (loop only).
func (c *CallbackConn) startLinger() bool {
	fd := c.fd.fd
	inq, err := unix.IoctlGetInt(fd, unix.SIOCINQ)
	if err != nil {
		return false
	}
	if inq == 0 {
		if outq, err := unix.IoctlGetInt(fd, unix.SIOCOUTQ); err != nil || outq == 0 {
			return false // the peer has all of it: close now
		}
	}
	l := c.l
	tm := c.timers()
	d := int64(lingerMax)
	if ct := int64(l.rt.cfg.CloseTimeout); ct > 0 {
		// Never past the close's own bound: the close timer's due time
		// when one runs, else (nothing was queued at Close) from now.
		d = min(d, ct)
		if tm.clT != nil {
			d = min(d, tm.clT.when-monoNow())
		}
	}
	if d <= 0 || !c.fd.plainTCPNow() {
		return false // no time left; or SO_LINGER or MPTCP: close(2) as the user set it
	}
	if unix.Shutdown(fd, unix.SHUT_WR) != nil {
		return false
	}
	c.dropCloseTimer() // the output is sent: the linger's bound replaces it
	lg := &cbLinger{left: lingerDiscardMax}
	lg.op = op{kind: opCBLinger, fd: fd, cc: c}
	if c.slot >= 0 {
		lg.op.fd, lg.op.sqeFlags = int(c.slot), netpoll.SQEFixedFile
	}
	lg.t = LoopTimer{c: c, check: (*CallbackConn).lingerDue}
	tm.lg = lg
	c.lingering = true
	l.stats.lingers.Add(1)
	l.addTimer(&lg.t, d)
	l.arm(&lg.op)
	return !lg.done
}

// prepLinger preps the discarding recv of up to the bytes left.
func (c *CallbackConn) prepLinger(sqe *netpoll.SQE, o *op) {
	sqe.PrepRecvDiscard(o.fd, uint32(c.tm.lg.left))
}

// onLinger handles the discarding recv's CQE: armed again while the peer
// sends and the discard allowance lasts; the peer's FIN, an error or a
// cancel (the bound, the runtime closing) ends the linger.
func (c *CallbackConn) onLinger(o *op) {
	lg := c.tm.lg
	l := c.l
	switch res := o.res; {
	case lg.done:
	case res > 0:
		lg.left -= int(res)
		if lg.left > 0 {
			l.arm(o)
		}
		// else the peer sends on: left unread until the bound
		return
	case res == -int32(syscall.EAGAIN):
		// An io-wq retry that found the nonblocking socket empty
		// (op_cb.go's recv sees the same): nothing ended.
		l.arm(o)
		return
	default:
		// 0: the peer's FIN, it read the output and closed; < 0: an
		// error (a reset: there is nothing left to deliver) or the
		// cancel of the bound or the runtime's close.
		c.endLinger()
	}
	c.maybeFinalize()
}

// lingerDue ends c's linger at its bound (a timer check, loop only).
func (c *CallbackConn) lingerDue(int64) {
	if !c.lingering || c.tm.lg.done {
		return
	}
	c.l.stats.lingersCut.Add(1)
	c.endLinger()
	c.maybeFinalize()
}

// endLinger ends c's linger (loop only): its recv is cancelled, and
// maybeFinalize closes c once that recv's CQE is in.
func (c *CallbackConn) endLinger() {
	lg := c.tm.lg
	if lg.done {
		return
	}
	lg.done = true
	c.l.cancelTimer(&lg.t)
	c.l.cancelOp(&lg.op)
}

// tcp reports whether n is a TCP socket (by its family and network).
func (n *netFD) tcp() bool {
	return (n.family == unix.AF_INET || n.family == unix.AF_INET6) && strings.HasPrefix(n.net, "tcp")
}

// plainTCPNow reports whether n, a TCP socket, is plain TCP (not MPTCP)
// with SO_LINGER off: known at creation (plainTCP), else asked.
func (n *netFD) plainTCPNow() bool {
	if n.plainTCP && (n.ln == nil || !n.ln.fd.rawTouched.Load()) && !n.rawTouched.Load() {
		return true
	}
	return plainTCPSocket(n.fd, n.family)
}
