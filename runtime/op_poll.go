package uringrt

import (
	"golang.org/x/sys/unix"

	"github.com/uringrt/uringrt/netpoll"
)

// The poll arm of the hybrid policy (nonblock try, then poll arm): a
// multishot POLLIN per netFD that parked readers wait on, and a one-shot
// POLLOUT a writer arms when its send found the socket full.

// prepPoll preps IORING_OP_POLL_ADD: POLLIN|POLLRDHUP (multishot unless
// Config.DisableMultishot, 5.13+) or POLLOUT (one-shot).
func (l *loop) prepPoll(sqe *netpoll.SQE, o *op) {
	if o.kind == opPollIn {
		sqe.PrepPollAdd(o.fd, unix.POLLIN|unix.POLLRDHUP, !l.rt.cfg.DisableMultishot)
		o.tid = l.curTid()
	} else {
		sqe.PrepPollAdd(o.fd, unix.POLLOUT, false)
	}
	l.stats.pollArms.Add(1)
	l.polls++
}

// completePollIn wakes the parked reader (and, on POLLERR/POLLHUP, the
// writer), remembering a hang-up: the end of the stream posts no further
// CQE, so a short read no longer means another will come.
func (l *loop) completePollIn(o *op) {
	if o.res > 0 && o.res&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) != 0 {
		o.nfd.rdHup.Store(true)
	}
	if o.res >= 0 || !o.armed {
		l.wakes = append(l.wakes, &o.nfd.rd)
		if o.res > 0 && o.res&(unix.POLLERR|unix.POLLHUP) != 0 {
			l.wakes = append(l.wakes, &o.nfd.wr)
		}
	}
	if o.armed && o.tid != l.curTid() {
		l.rehome(o)
	}
	if !o.armed {
		// Single-shot, or a multishot the kernel ended: the next reader
		// that finds EAGAIN re-arms it (rearmPollIn). Re-arming here
		// would fire again at once on a socket readable but unread (a
		// pending connection, bytes or a FIN nobody reads): a busy loop.
		o.nfd.pollInIdle.Store(true)
	}
}

// completePollOut wakes the parked writer.
func (l *loop) completePollOut(o *op) {
	l.wakes = append(l.wakes, &o.nfd.wr)
}

// rehome ends a multishot POLLIN, a callback connection's multishot recv
// or Serve's multishot accept, that was submitted on another thread than
// the one the loop runs on now, so that the reader's next EAGAIN (the
// recv's or accept's last CQE) arms it again from here. On a COOP_TASKRUN ring (a loop parked in Go's
// netpoller, whose goroutine moves between threads when Go's scheduler
// hands its P on) an op's completion task_work runs on the thread that
// submitted it, and wakes that thread if it sleeps: with a thousand
// connections armed while the loop ran elsewhere, an idle thread woke for
// every message. Locked loops never move (curTid is 0 for them).
func (l *loop) rehome(o *op) {
	if !o.cancel {
		l.rehomes++
	}
	l.cancelOp(o) // its last CQE (ECANCELED) marks the fd pollInIdle, or re-arms a callback recv or accept
}

// curTid returns the thread the loop runs on in this iteration, read once
// per iteration and only when a poll is armed or completes (gettid(2) is a
// raw system call, but not free on the loop's path); 0 for a locked loop.
func (l *loop) curTid() int32 {
	if l.tid == 0 && l.gw != nil {
		l.tid = int32(unix.Gettid())
	}
	return l.tid
}
