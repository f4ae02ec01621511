package runtime

import (
	"syscall"
)

// Receive-ahead: the hybrid policy's read side. A Read tries recv(2)
// nonblocking first; when the socket is drained (EAGAIN, or a short read)
// the loop arms a multishot recv with buffer select on it, and from then
// on the loop appends what arrives to the conn's rx queue and wakes the
// reader in its completion batch. A steady-state Read is then a copy from
// rx: no syscall, no per-message SQE (the multishot recv stays armed).

// armRecvAhead marks the ring as the conn's reader and asks the loop to arm
// the recv. Called by the reader (holding rmu), never with rxMu held.
func (n *netFD) armRecvAhead() {
	n.rxMu.Lock()
	if n.ringReading {
		n.rxMu.Unlock()
		return
	}
	n.ringReading = true
	n.rxMu.Unlock()
	if !n.l.rt.useBufRing && n.recvAhead.buf == nil {
		n.recvAhead.buf = make([]byte, n.rt.cfg.BufferSize)
	}
	n.l.post(request{kind: reqArm, op: &n.recvAhead})
}

// readAhead serves a Read from the rx queue. done is false when the queue
// is empty and no end or error is pending; ringReading then says whether
// the reader must wait (the ring reads) or may try recv(2) itself.
func (n *netFD) readAhead(b []byte) (cnt int, errno syscall.Errno, eof, done, ringReading bool) {
	n.rxMu.Lock()
	defer n.rxMu.Unlock()
	if n.rxOff < len(n.rx) {
		cnt = copy(b, n.rx[n.rxOff:])
		n.rxOff += cnt
		if n.rxOff == len(n.rx) {
			n.rx, n.rxOff = n.rx[:0], 0
		}
		return cnt, 0, false, true, n.ringReading
	}
	if n.rxEOF {
		return 0, 0, true, true, n.ringReading
	}
	if n.rxErr != 0 {
		errno, n.rxErr = n.rxErr, 0
		return 0, errno, false, true, n.ringReading
	}
	return 0, 0, false, false, n.ringReading
}

// onRecvAhead runs on the loop for each recv-ahead CQE.
func (l *loop) onRecvAhead(o *op) {
	nfd := o.nfd
	res := o.res
	final := !o.armed
	var data []byte
	id, hasBuf := o.bufferID()
	if res > 0 {
		if hasBuf {
			data = l.bufRing.Buf(id, int(res))
		} else {
			data = o.buf[:res]
		}
	}
	nfd.rxMu.Lock()
	switch {
	case res > 0:
		nfd.rx = append(nfd.rx, data...)
	case res == 0:
		nfd.rxEOF = true
	case res == -int32(syscall.ECANCELED):
	case res == -int32(syscall.ENOBUFS):
		l.stats.enobufs.Add(1)
	default:
		nfd.rxErr = ioErrno(res)
	}
	over := len(nfd.rx)-nfd.rxOff >= rxAheadMax
	// A single-shot recv (no multishot, or no buffer ring) that brought
	// data is re-armed at once; anything else that ends the recv hands
	// reading back to the reader's nonblock try.
	rearm := final && res > 0 && !over && !nfd.closing.Load()
	if final && !rearm {
		nfd.ringReading = false
	}
	nfd.rxMu.Unlock()
	if hasBuf {
		l.bufRing.Recycle(id)
	}
	if res > 0 && l.rt.metrics {
		l.stats.readBytes.Add(uint64(res))
	}
	if !final && over {
		l.cancelOp(o) // stop reading ahead until the reader catches up
	}
	if rearm {
		l.arm(o)
	}
	l.wakes = append(l.wakes, &nfd.rd)
}
