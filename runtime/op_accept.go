package uringrt

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/uringrt/uringrt/netpoll"
)

// Serve's accept: a multishot accept on the listener's loop (one-shot with
// Config.DisableMultishot), re-armed when a CQE lacks F_MORE, and a timeout
// op that backs off when the process is out of descriptors.

// prepAccept preps IORING_OP_ACCEPT, multishot (5.19+) unless
// Config.DisableMultishot; accepted sockets are nonblocking, close-on-exec.
func (l *loop) prepAccept(sqe *netpoll.SQE, o *op) {
	if l.rt.cfg.DisableMultishot {
		o.tid = 0 // a single-shot accept is armed again from the loop's thread each time
		sqe.PrepAccept(o.fd, nil, nil, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
	} else {
		sqe.PrepAcceptMultishot(o.fd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		o.tid = l.curTid() // op_poll.go: re-homed if the loop moves
	}
}

// startServe arms the multishot accept for Serve (on the listener's loop).
func (l *loop) startServe(ln *listener) {
	ln.fd.ringUsed.Store(true) // Close then lets the loop close fd, after the accept's CQEs
	ln.serving = true
	l.serving = append(l.serving, ln)
	ln.acceptOp = op{kind: opAcceptCB, fd: ln.fd.fd, ln: ln, nfd: ln.fd}
	ln.timerOp = op{kind: opTimer, ln: ln}
	l.arm(&ln.acceptOp)
}

func (l *loop) stopServe(ln *listener) {
	if !ln.serving {
		return
	}
	ln.serving = false
	l.cancelOp(&ln.acceptOp)
	l.cancelOp(&ln.timerOp)
	for i, s := range l.serving {
		if s == ln {
			l.serving = append(l.serving[:i], l.serving[i+1:]...)
			break
		}
	}
	if ln.served != nil {
		close(ln.served)
		ln.served = nil
	}
}

// onAccept runs for each multishot accept CQE.
func (ln *listener) onAccept(l *loop, o *op) {
	if o.armed && ln.serving && o.tid != 0 && o.tid != l.curTid() {
		// A multishot accept submitted while the loop ran on another
		// thread (op_poll.go, rehome): each connection's completion
		// would wake that idle thread, which then wakes the loop's. Its
		// last CQE (ECANCELED) arms it again below, from here;
		// connections that come meanwhile wait in the listen queue.
		l.rehome(o)
	}
	if o.res >= 0 && !ln.serving {
		// Accepted after Serve stopped (the multishot accept's cancel
		// was on its way): nobody serves it.
		unix.Close(int(o.res))
	} else if o.res >= 0 {
		ln.backoff = 0
		c, ok := ln.newConn(int(o.res), nil, true)
		if ok {
			cc := newCallbackConn(c.fd, ln.h)
			c.fd.l.post(request{kind: reqRegisterCB, cc: cc})
		}
	} else if errno := ioErrno(o.res); errno != syscall.ECANCELED {
		ln.rt.countAcceptError(errno)
		if errno == syscall.EMFILE || errno == syscall.ENFILE || errno == syscall.ENOBUFS || errno == syscall.ENOMEM {
			// Out of descriptors: back off without spinning (5 ms doubling
			// to 1 s, as net/http does), then re-arm.
			if ln.backoff == 0 {
				ln.backoff = 5 * time.Millisecond
			} else if ln.backoff *= 2; ln.backoff > time.Second {
				ln.backoff = time.Second
			}
			ln.rt.logger.Warn("accept failed; backing off", "err", errno.Error(), "backoff", ln.backoff)
			if !o.armed && ln.serving {
				ln.timerOp.ts = netpoll.Timespec{Nsec: int64(ln.backoff)}
				if ln.backoff >= time.Second {
					ln.timerOp.ts = netpoll.Timespec{Sec: 1}
				}
				l.arm(&ln.timerOp)
			}
			return
		}
	}
	if !o.armed && ln.serving {
		l.arm(o)
	}
}

func (ln *listener) onTimer(l *loop, o *op) {
	if ln.serving && !ln.acceptOp.armed {
		l.arm(&ln.acceptOp)
	}
}
