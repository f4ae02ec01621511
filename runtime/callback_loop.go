package uringrt

import (
	"crypto/tls"

	"golang.org/x/sys/unix"

	"github.com/uringrt/uringrt/netpoll"
)

// The callback API's part of a loop: its state (embedded in the loop, so
// that the callback files reach it as the loop's own fields, and the loop's
// files need not know its types) and what the loop's start and stop do for
// it.

// loopCB is a loop's state of the callback API (loop-owned).
type loopCB struct {
	dirty      []*CallbackConn     // conns with output to send this iteration (flushCB)
	bundleBufs []netpoll.BundleBuf // scratch: one bundle CQE's buffers
	streamBufs [][]byte            // free stream-mode recv buffers (callback_stream.go)
	streamLive int                 // stream-mode recv buffers out of streamBufs
	firstLive  int                 // stream buffers that first recvs still wait in (callback_stream.go)
	cbConns    map[*CallbackConn]struct{}
	serving    []*listener // listeners Serve accepts on with this loop (op_accept.go)

	chunks chunkPool // output queue chunks (outq.go)
	// TLS (tls_guts.go): the record buffer lent to a tls.Conn's rawInput
	// (to tlsLent now), the plaintext buffer for OnData
	tlsRaw       []byte
	tlsLent      *tls.Conn
	tlsPlain     []byte
	tlsPlainBusy bool
	sends        []*cbSend // free sends of callback conns (op_cb_send.go)
	// sendIov, sendMsg: a loop send's sendmsg(2) (callback_loopsend.go)
	sendIov   []unix.Iovec
	sendMsg   unix.Msghdr
	loopSends int // flushes of at most this many conns send from the loop (loopSendMax)
	// chunkArrs: free arrays of output queues' chunk lists (outq.go)
	chunkArrs [][]outChunk
	// buffer lending (lend.go): the run on offer to OnData's Writes and
	// the buffers lent now (at most the loop's lendCap)
	lend     lendable
	lentBufs int
	budget   loopBudget // budget.go
	idle     loopIdle   // idle.go
	timers   loopTimers // callback timers (callback_timer_heap.go)
	inl      loopInline // functions of RunOnLoop (callback_inline.go)
	chains   loopChains // their off-loop chains (callback_inline_chain.go)
}

// initCB sets up a new loop's callback state (before its goroutine starts).
func (l *loop) initCB() {
	l.cbConns = make(map[*CallbackConn]struct{})
	l.loopSends = loopSendMax
}

// stopCB closes the loop's callback conns and stops its Serve accepts, at
// the start of the loop's teardown.
func (l *loop) stopCB() {
	for cc := range l.cbConns {
		if cc.lingering {
			cc.endLinger() // callback_linger.go: closed now, not at the bound
			cc.maybeFinalize()
			continue
		}
		cc.closeOnLoop(errRuntimeClosed)
	}
	for _, ln := range l.serving {
		l.stopServe(ln)
	}
}

// cbPending reports whether the callback API has work for this iteration
// that must not wait for the loop's sleep: functions of RunOnLoop still
// queued, or an idle sweep the sweeper asked for.
func (l *loop) cbPending() bool { return !l.inl.empty() || l.idle.due }

// prepCB fills sqe for an op of the callback API (prep).
func (l *loop) prepCB(sqe *netpoll.SQE, o *op) {
	switch o.kind {
	case opCBRecv:
		l.prepCBRecv(sqe, o)
	case opCBSend:
		prepCBSend(sqe, o)
	case opAcceptCB:
		l.prepAccept(sqe, o)
	case opTimer:
		sqe.PrepTimeout(&o.ts, 0, false)
	case opCBLinger:
		o.cc.prepLinger(sqe, o)
	}
}

// completeCB runs the completion of an op of the callback API (complete).
func (l *loop) completeCB(o *op) {
	switch o.kind {
	case opCBRecv:
		o.cc.onRecv(o)
	case opCBSend:
		o.cc.onSend(o)
	case opAcceptCB:
		o.ln.onAccept(l, o)
	case opTimer:
		o.ln.onTimer(l, o)
	case opCBLinger:
		o.cc.onLinger(o)
	}
}

// handleCB handles a request of the callback API (drainQueue).
func (l *loop) handleCB(r *request) {
	switch r.kind {
	case reqRegisterCB:
		l.registerCB(r.cc)
	case reqCBWrite:
		r.cc.queueAsync(r.data)
	case reqCBFront:
		r.cc.queueFront(r.data)
	case reqCBClose:
		r.cc.closeOnLoop(nil)
	case reqServe:
		l.startServe(r.ln)
	case reqStopServe:
		l.stopServe(r.ln)
	case reqShutdownCB:
		l.shutdownCB()
	}
}

// handleDeadCB does what a request of the callback API still needs once
// its loop has exited (handleDead): a connection handed to the loop is
// closed, a posted write's count given back, a Serve returns.
func handleDeadCB(r *request) {
	switch r.kind {
	case reqRegisterCB:
		r.cc.fd.closing.Store(true)
		r.cc.fd.finalClose()
	case reqCBWrite:
		r.cc.pendingWrites.Add(-1)
	case reqCBFront:
		r.cc.dsend.Store(dsFree)
		r.cc.pendingWrites.Add(-1)
	case reqServe:
		r.ln.serveMu.Lock()
		if r.ln.served != nil {
			close(r.ln.served)
			r.ln.served = nil
		}
		r.ln.serveMu.Unlock()
	}
}
