package uringrt

import "syscall"

// reqKind is what a posted request asks of the loop.
type reqKind uint8

const (
	reqArm        reqKind = iota + 1 // arm op
	reqCancel                        // cancel op if armed
	reqCloseFD                       // cancel every op on nfd, close its fd when they are done
	reqRegisterCB                    // take a callback conn into the loop
	reqCBWrite                       // queue bytes on a callback conn (from off the loop)
	reqCBFront                       // queue a direct send's rest in front (callback_direct.go)
	reqCBClose                       // close a callback conn (from off the loop)
	reqServe                         // start accepting for Serve
	reqStopServe                     // stop accepting for Serve
	reqShutdownCB                    // stop reading callback conns, close them when drained
	reqFunc                          // run fn on the loop
	reqStop                          // cancel everything and exit
)

type request struct {
	kind reqKind
	op   *op
	nfd  *netFD
	cc   *CallbackConn
	ln   *listener
	data []byte
	fn   func()
}

// post hands a request to the loop from any goroutine. A request posted
// after the loop exited (a connection accepted on another loop while the
// runtime closes) is handled at once by handleDead.
func (l *loop) post(r request) {
	l.mu.Lock()
	if l.exited {
		l.mu.Unlock()
		handleDead(&r)
		return
	}
	l.queue = append(l.queue, r)
	l.mu.Unlock()
	l.wake()
}

// wake makes the loop take its queue: a write to its eventfd, only when
// it sleeps.
func (l *loop) wake() {
	l.posted.Store(true)
	if l.sleeping.Load() && l.sleeping.CompareAndSwap(true, false) {
		l.wakeFD.Signal()
	}
}

// exit marks the loop as gone and hands what is still queued to
// handleDead: nothing is in flight any more, so nothing posted is lost.
func (l *loop) exit() {
	l.mu.Lock()
	l.exited = true
	q := l.queue
	l.queue = nil
	l.mu.Unlock()
	for i := range q {
		handleDead(&q[i])
	}
}

// handleDead does what a request still needs once its loop has exited (any
// goroutine): a connection handed to the loop is closed, an op's owner is
// told ECANCELED, a Serve returns. Other requests have nothing left to do.
func handleDead(r *request) {
	switch r.kind {
	case reqCloseFD:
		r.nfd.finalClose()
	case reqArm:
		if o := r.op; o.done != nil {
			o.res, o.flags = -int32(syscall.ECANCELED), 0
			o.done <- struct{}{}
		}
	default:
		handleDeadCB(r) // callback_loop.go
	}
}

func (l *loop) queued() bool {
	l.mu.Lock()
	n := len(l.queue)
	l.mu.Unlock()
	return n > 0
}

// drainQueue handles the queued requests. Handling one never reaps (getSQE
// only stashes CQEs), so drainQueue is never entered from inside itself.
func (l *loop) drainQueue() {
	l.posted.Store(false)
	l.mu.Lock()
	q := l.queue
	l.queue = l.spare[:0]
	l.mu.Unlock()
	for i := range q {
		l.handle(&q[i])
		q[i] = request{}
	}
	l.spare = q[:0]
}

func (l *loop) handle(r *request) {
	switch r.kind {
	case reqArm:
		l.arm(r.op)
	case reqCancel:
		l.cancelOp(r.op)
	case reqCloseFD:
		l.closeFD(r.nfd)
	case reqFunc:
		r.fn()
	case reqStop:
		l.stop()
	default:
		l.handleCB(r) // callback_loop.go
	}
}
