package netpoll

import "sync/atomic"

// CQReady returns how many CQEs are ready to reap.
func (r *Ring) CQReady() uint32 {
	return atomic.LoadUint32(r.cqTail) - *r.cqHead
}

// PeekCQEs copies up to len(dst) ready CQEs into dst, oldest first, and
// returns how many; it does not consume them: call AdvanceCQ(n) after. It
// allocates nothing. When the CQ is empty but the kernel flagged overflowed
// CQEs (IORING_SQ_CQ_OVERFLOW), an enter with GETEVENTS moves them in, so
// no completion is lost: Reap does that.
func (r *Ring) PeekCQEs(dst []CQE) int {
	head := *r.cqHead
	ready := atomic.LoadUint32(r.cqTail) - head
	n := uint32(len(dst))
	if ready < n {
		n = ready
	}
	for i := uint32(0); i < n; i++ {
		dst[i] = r.cqes[(head+i)&r.cqMask]
	}
	return int(n)
}

// AdvanceCQ marks n CQEs as consumed with one release store of the CQ head,
// freeing their slots for the kernel.
func (r *Ring) AdvanceCQ(n int) {
	if n > 0 {
		atomic.StoreUint32(r.cqHead, *r.cqHead+uint32(n))
		r.stat.CQEsReaped += uint64(n)
	}
}

// Reap copies and consumes up to len(dst) CQEs: PeekCQEs then AdvanceCQ.
// When the CQ is empty and the kernel holds overflowed CQEs or pending
// task_work, it enters with GETEVENTS once (without waiting) to flush them
// and looks again. It returns how many CQEs dst holds.
func (r *Ring) Reap(dst []CQE) (int, error) {
	n := r.PeekCQEs(dst)
	if n == 0 && r.cqNeedsEnter() {
		if _, errno := r.enter(0, 0, enterGetEvents|r.enterFlg, nil, 0, false); errno != 0 && errno != 4 /* EINTR */ {
			return 0, newError("io_uring_enter (flush)", errno)
		}
		n = r.PeekCQEs(dst)
	}
	r.AdvanceCQ(n)
	return n, nil
}

// Overflowed returns the kernel's count of CQEs dropped because the CQ was
// full and the kernel lacked FEAT_NODROP (5.5+ never drops; it buffers).
func (r *Ring) Overflowed() uint32 { return atomic.LoadUint32(r.cqOverflow) }

// Dropped returns the kernel's count of invalid SQEs it skipped.
func (r *Ring) Dropped() uint32 { return atomic.LoadUint32(r.sqDropped) }
