package uringrt

import (
	"io"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/uringrt/uringrt/netpoll"
)

// The linger of a graceful close. Once a closing callback connection's
// output is all in the socket, close(2) would end it; but Linux answers a
// close(2) with a reset (RST) when input is left unread, and a socket
// closed with its output not yet acknowledged resets too when the peer's
// data arrives later. A reset drops what the socket still held to send:
// the peer, still sending while it reads slowly, would read ECONNRESET (or,
// when its own write took the error first, an orderly end) instead of the
// end of the output Close promised to send. So, at the end of a graceful
// close (Close, AsyncClose, Shutdown; not a failure, a timeout's cut-off,
// the runtime closing, nor after the peer's FIN was read), when the
// socket holds unread input (SIOCINQ) or unacknowledged output
// (SIOCOUTQ):
//
//	shutdown(SHUT_WR): the FIN follows the output
//	-> a recv with no buffer and MSG_TRUNC (the kernel drops the peer's
//	   bytes without a copy), armed again while the peer sends, up to
//	   lingerDiscardMax bytes (an upload nobody reads costs no more)
//	-> it ends at the peer's FIN (recv 0) or an error; when the peer has
//	   acknowledged all the output and the FIN (SIOCOUTQ 0, looked at
//	   every lingerCheck); when the peer took none of the output for
//	   lingerMax; at the end of Config.CloseTimeout; or at once when the
//	   runtime closes
//	-> close(2), then OnClose, as for any close.
//
// A reset that comes after the peer acknowledged everything loses
// nothing: the peer reads what its socket received, the FIN, then nothing
// more (an RST leaves the receive queue whole: TestLingerKernelRSTKeepsAcked).
// So a close that finds both queues empty (the common end of a request
// and its answer, acknowledged) closes at once, after one getsockopt
// (sockQueues), and a linger ends as soon as the peer has the output. The
// connection stays counted (Stats, MaxConns) until its close(2); its
// output is all in the kernel by then, so no write cap, budget or write
// timeout has anything left to act on (a timeout's cut-off during a
// linger ends it: cutOff).

// lingerMax is how long a linger waits for a peer that takes none of the
// output (nor sends its FIN), as net/http's rstAvoidanceDelay bounds its
// wait after CloseWrite. A peer that keeps taking it is waited for up to
// Config.CloseTimeout, as the close's sending was.
const lingerMax = 500 * time.Millisecond

// lingerCheck is the period of a linger's look at the socket's send queue.
const lingerCheck = 25 * time.Millisecond

// lingerDiscardMax is the most input a linger drops before it stops
// reading (net/http reads up to 256 KiB of a request body nobody read).
const lingerDiscardMax = 256 << 10

// cbLinger is a lingering close's state, kept from the connection's
// timers (connTimers.lg) while it lasts.
type cbLinger struct {
	op   op        // the discarding recv (opCBLinger)
	t    LoopTimer // the look at the send queue (lingerCheckDue)
	left int       // bytes it may still drop
	outq int       // the send queue at the last look
	took int64     // monoNow when the peer last took output (or the linger began)
	end  int64     // monoNow when Config.CloseTimeout ends it; 0: never
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
	in, out := sockQueues(fd)
	if !in && !out {
		return false // the peer has all of it, and sent nothing unread: close now
	}
	if !out {
		// Only the receive queue holds something: input, or only the
		// peer's FIN, which close(2) does not answer with a reset.
		if inq, err := unix.IoctlGetInt(fd, unix.SIOCINQ); err != nil || inq == 0 {
			return false
		}
	}
	outq, err := unix.IoctlGetInt(fd, unix.SIOCOUTQ)
	if err != nil {
		return false
	}
	l := c.l
	now := monoNow()
	var end int64
	if ct := int64(l.rt.cfg.CloseTimeout); ct > 0 {
		// Never past the close's own bound: the close timer's due time
		// when one runs, else (nothing was queued at Close) from now.
		end = now + ct
		if c.tm != nil && c.tm.clT != nil {
			end = c.tm.clT.when
		}
		if end <= now {
			return false
		}
	}
	if !c.fd.plainTCPNow() || unix.Shutdown(fd, unix.SHUT_WR) != nil {
		return false // SO_LINGER or MPTCP: close(2) as the user set it
	}
	c.dropCloseTimer()                                                           // the output is sent: the linger's own bounds replace it
	lg := &cbLinger{left: lingerDiscardMax, outq: outq + 1, took: now, end: end} // (+1: the FIN)
	lg.op = op{kind: opCBLinger, fd: fd, cc: c}
	if c.slot >= 0 {
		lg.op.fd, lg.op.sqeFlags = int(c.slot), netpoll.SQEFixedFile
	}
	lg.t = LoopTimer{c: c, check: (*CallbackConn).lingerCheckDue}
	c.timers().lg = lg
	c.lingering = true
	l.stats.lingers.Add(1)
	c.armLingerCheck(now)
	l.arm(&lg.op)
	return !lg.done
}

// armLingerCheck arms the linger's next look, lingerCheck from now or at
// its end, whichever comes first (loop only).
func (c *CallbackConn) armLingerCheck(now int64) {
	lg := c.tm.lg
	d := int64(lingerCheck)
	if lg.end > 0 {
		d = min(d, lg.end-now)
	}
	lg.t.state.Store(timerArmed)
	c.l.addTimer(&lg.t, d)
}

// lingerCheckDue looks at c's send queue (a timer check, loop only): the
// linger ends once the peer acknowledged everything, and is cut when the
// peer took nothing for lingerMax or the close's time is up.
func (c *CallbackConn) lingerCheckDue(now int64) {
	lg := c.tm.lg
	if !c.lingering || lg.done {
		return
	}
	q, err := unix.IoctlGetInt(c.fd.fd, unix.SIOCOUTQ)
	switch {
	case err != nil || q == 0:
		c.endLinger() // the peer has the output and the FIN
	case q < lg.outq:
		lg.outq, lg.took = q, now
		fallthrough
	default:
		if now-lg.took < int64(lingerMax) && (lg.end == 0 || now < lg.end) {
			c.armLingerCheck(now)
			return
		}
		c.l.stats.lingersCut.Add(1)
		c.endLinger()
	}
	c.maybeFinalize()
}

// prepLinger preps the discarding recv of up to the bytes left.
func (c *CallbackConn) prepLinger(sqe *netpoll.SQE, o *op) {
	sqe.PrepRecvDiscard(o.fd, uint32(c.tm.lg.left))
}

// onLinger handles the discarding recv's CQE: armed again while the peer
// sends and the discard allowance lasts; the peer's FIN, an error or a
// cancel (the linger ended, the runtime closing) ends the linger.
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
		// else the peer sends on: left unread from now
		return
	case res == -int32(syscall.EAGAIN):
		// An io-wq retry that found the nonblocking socket empty
		// (op_cb.go's recv sees the same): nothing ended.
		l.arm(o)
		return
	default:
		// 0: the peer's FIN (it read the output and closed); < 0: an
		// error (a reset: nothing is left to deliver) or the cancel of
		// the runtime's close.
		c.endLinger()
	}
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

// sockQueues reports whether fd's receive queue holds anything (input
// not yet read, or the peer's FIN) and whether its write queue does
// (output not yet acknowledged): the memory each holds, from one
// getsockopt(SO_MEMINFO), where SIOCINQ and SIOCOUTQ take an ioctl each
// (a system call costs 1-2 us on a virtual machine, and every graceful
// close asks). An error reports neither.
func sockQueues(fd int) (in, out bool) {
	var m [unix.SK_MEMINFO_VARS]uint32
	n := uint32(unsafe.Sizeof(m))
	_, _, e := unix.RawSyscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_MEMINFO,
		uintptr(unsafe.Pointer(&m[0])), uintptr(unsafe.Pointer(&n)), 0)
	if e != 0 {
		return false, false
	}
	return m[unix.SK_MEMINFO_RMEM_ALLOC] != 0, m[unix.SK_MEMINFO_WMEM_QUEUED] != 0
}
