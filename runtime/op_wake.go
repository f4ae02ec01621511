package uringrt

import "github.com/uringrt/uringrt/netpoll"

// The loop's wake-up: a read of its eventfd (netpoll.EventfdWake) stays
// armed; post signals the eventfd when the loop sleeps, the read's CQE
// ends the loop's wait, and the read is armed again.

func (l *loop) prepWake(sqe *netpoll.SQE) { l.wakeFD.PrepRead(sqe) }

func (l *loop) completeWake(o *op) {
	if !l.stopping {
		l.arm(o)
	}
}
