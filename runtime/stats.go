package uringrt

import (
	"sync/atomic"

	"github.com/uringrt/uringrt/sched"
)

// Stats is a snapshot of a Runtime's counters, read by Runtime.Stats. It
// is what a metrics exporter reads at scrape time: package
// github.com/uringrt/uringrt/runtime/uringprom exports it to Prometheus as
// the uringrt_* metrics. Without Config.Metrics the counters of the I/O
// paths stay 0: bytes, pollable outcomes (ReadInline ... WritePolled),
// accept errors, UDP, and the ring's own counters that a loop publishes
// once per iteration (SQEsSubmitted, CQEsReaped, Enters, CQOverflows,
// SQFull, Inflight, CQEsPerEnter). The others are always kept.
type Stats struct {
	// Backend is the backend in use: BackendUring or BackendStd.
	Backend Backend
	// Kernel is the kernel release (uname -r), or "unknown".
	Kernel string
	// SetupFlags are the rings' setup flags (netpoll.SetupFlags' String,
	// e.g. "SINGLE_ISSUER|DEFER_TASKRUN"), or "none" without loops.
	SetupFlags string
	// HandlerPanics counts callback handler panics recovered (each closed
	// its connection).
	HandlerPanics uint64
	// AcceptErrors counts accept(2) failures by errno name ("EMFILE").
	// With BackendUring it always holds EMFILE, ENFILE, ENOBUFS and ENOMEM
	// (0 before the first), the failures an operator alerts on.
	AcceptErrors map[string]uint64
	// BlockingWait is the time experiment.PollBlocking operations waited
	// in the worker pool's queue for a worker, in seconds, over all loops.
	BlockingWait Histogram
	// Loops holds one entry per event loop, in loop order; none with
	// BackendStd.
	Loops []LoopStats
	// Workers are the counters of the worker pool that runs PollBlocking
	// operations and callback handlers (Config.Workers).
	Workers sched.Stats
}

// LoopStats are one event loop's counters. Counters only grow; the
// fields documented as "now" are gauges.
type LoopStats struct {
	// ID is the loop's index, 0 to Config.Loops-1.
	ID int
	// SQEsSubmitted counts SQEs the kernel consumed from the submission
	// queue; CQEsReaped the CQEs reaped; Enters the io_uring_enter(2)
	// calls.
	SQEsSubmitted, CQEsReaped, Enters uint64
	// CQOverflows counts times the kernel flagged CQ overflow
	// (IORING_SQ_CQ_OVERFLOW; the overflowed CQEs are flushed, none lost).
	CQOverflows uint64
	// SQFull counts times the submission queue was full (the loop
	// submitted and retried).
	SQFull uint64
	// PollArms counts polls armed through the ring (IORING_OP_POLL_ADD).
	PollArms uint64
	// BufferRingExhausted counts recvs that found the provided buffer ring
	// empty (ENOBUFS).
	BufferRingExhausted uint64
	// RetriedEAGAIN counts callback recvs and sends, and multishot UDP
	// recvmsgs (Config.UDPRecvMultishot), that completed with EAGAIN and
	// were issued again. The kernel retries a send after a partial one, or
	// a recv, from an io-wq worker, where the nonblocking socket says
	// EAGAIN rather than wait; it is not an error of the connection.
	RetriedEAGAIN uint64
	// BuffersLent counts buffers a callback WriteNoCopy sent without a
	// copy: provided buffers, and stream-mode recv buffers (StreamEnters).
	BuffersLent uint64
	// StreamEnters counts callback connections switched to stream mode:
	// after consecutive large reads, a single-shot recv into a 32 KiB
	// buffer of the connection's own instead of the provided buffer ring.
	StreamEnters uint64
	// IdlePollWork and IdlePollTimeout count busy-polls before sleeping
	// (Config.IdlePoll) that found work, or that ended in sleep.
	IdlePollWork, IdlePollTimeout uint64
	// Accepted, Closed and Rejected count connections accepted, accepted
	// connections closed, and connections closed at once because MaxConns
	// was reached. Accepted-Closed is the connections open now.
	Accepted, Closed, Rejected uint64
	// ReadBytes and WrittenBytes count bytes read from and written to
	// connections.
	ReadBytes, WrittenBytes uint64
	// ReadInline, WriteInline count reads and writes done at the nonblock
	// try; ReadPolled, WritePolled, AcceptPolled those that waited for
	// readiness: in Go's netpoller (the default with GOMAXPROCS >= 2) or
	// on the loop's ring (poll arms, PollArms).
	ReadInline, ReadPolled, WriteInline, WritePolled, AcceptPolled uint64
	// Inflight is the requests the loop has in flight in its ring now.
	Inflight int64
	// CQEsPerEnter is a histogram of the CQEs ready after each wake-up
	// (io_uring_enter with GETEVENTS); buckets 1, 2, 4, ... 1024.
	CQEsPerEnter Histogram
	// TaskworkBatch is a histogram of the completions run as one batch;
	// buckets 1, 2, 4, ... 1024.
	TaskworkBatch Histogram
	// ReadPausesConn counts times a callback connection stopped reading
	// because its queue passed MaxWriteBuffer; ReadPausesRuntime because
	// all queues passed MaxBufferedBytes.
	ReadPausesConn, ReadPausesRuntime uint64
	// BufferedBytes is the bytes of output queue chunks callback
	// connections hold now.
	BufferedBytes int64
	// IdleClosed counts connections closed by Config.IdleTimeout.
	IdleClosed uint64
	// ReadTimeouts, WriteTimeouts and CloseTimeouts count callback
	// connections cut off (reset, their queued output dropped) because a
	// timeout passed: SetReadTimeout (nothing received), SetWriteTimeout
	// (the peer took none of the queued output) and Config.CloseTimeout (a
	// graceful close could not send its queued output in time).
	ReadTimeouts, WriteTimeouts, CloseTimeouts uint64
	// Lingers counts graceful closes of callback connections that found
	// the peer's input unread or their output not yet acknowledged when
	// all of it was in the socket, so that close(2) would have reset the
	// connection (now, or when the peer sent more) and dropped output the
	// kernel still held: they shut down the sending side and waited for
	// the peer's FIN or its acknowledgement of all the output, dropping
	// what it sent meanwhile, before close(2). LingersCut counts those
	// ended instead because the peer took no output for 500 ms or
	// Config.CloseTimeout passed: their close(2) may still reset.
	Lingers, LingersCut uint64
	// InlineRuns counts the functions of CallbackConn.RunOnLoop the loop
	// ran; InlineTakeovers those that had not returned after one to two
	// milliseconds (or called LeaveLoop), so that the loop went on in a new
	// goroutine: each held up the loop's other connections until then.
	InlineRuns, InlineTakeovers uint64
	// WriteRefusedConn and WriteRefusedRuntime count callback writes
	// refused with ErrWriteBufferFull: the connection's queue would have
	// passed Config.MaxWriteBuffer, or all queues Config.MaxBufferedBytes.
	WriteRefusedConn, WriteRefusedRuntime uint64
	// UDP are the loop's PacketConn counters.
	UDP UDPStats
}

// UDPStats are one loop's PacketConn counters. I/O a caller does itself
// through SyscallConn is not seen.
type UDPStats struct {
	// ReceivedDatagrams and SentDatagrams count datagrams, a UDP_GRO or
	// UDP_SEGMENT (GSO) buffer counted by segment.
	ReceivedDatagrams, SentDatagrams uint64
	// ReceivedBytes and SentBytes count payload bytes.
	ReceivedBytes, SentBytes uint64
	// Truncated counts datagrams received longer than the reader's buffer
	// (MSG_TRUNC).
	Truncated uint64
	// ReadPolled and WritePolled count reads and writes that found EAGAIN
	// at the nonblock try and parked until the socket was ready (in Go's
	// netpoller or on the loop's poll).
	ReadPolled, WritePolled uint64
}

// Histogram is a snapshot of a histogram with fixed buckets.
type Histogram struct {
	// Bounds are the buckets' upper bounds, ascending.
	Bounds []float64
	// Cumulative[i] is the observations <= Bounds[i].
	Cumulative []uint64
	// Count is all observations, including those above the last bound;
	// it is never below the last cumulative count.
	Count uint64
	// Sum is the sum of the observations.
	Sum float64
}

// Stats reads the runtime's counters. It is safe to call concurrently
// with traffic; each counter is read atomically, the snapshot as a whole
// is not one instant.
func (rt *Runtime) Stats() Stats {
	s := Stats{
		Backend:       rt.backend,
		Kernel:        rt.features.Kernel,
		SetupFlags:    rt.setupFlags(),
		HandlerPanics: rt.panics.Load(),
		AcceptErrors:  make(map[string]uint64, len(acceptErrnos)),
		Loops:         make([]LoopStats, len(rt.loops)),
		Workers:       rt.pool.Stats(),
	}
	if s.Kernel == "" {
		s.Kernel = "unknown"
	}
	if rt.backend == BackendUring {
		for _, e := range acceptErrnos {
			s.AcceptErrors[errnoName(e)] = 0
		}
	}
	rt.acceptErrs.Range(func(k, v any) bool {
		s.AcceptErrors[k.(string)] = v.(*atomic.Uint64).Load()
		return true
	})
	var wait durHist
	for i, l := range rt.loops {
		s.Loops[i] = l.snapshot()
		l.stats.blockingWait.addTo(&wait)
	}
	s.BlockingWait = wait.snapshot()
	return s
}

func (l *loop) snapshot() LoopStats {
	st := &l.stats
	// closed before accepted: a connection is counted accepted before
	// closed, so Accepted-Closed never reads negative.
	closed := st.closed.Load()
	lingersCut := st.lingersCut.Load() // likewise before lingers
	return LoopStats{
		ID:                  l.id,
		SQEsSubmitted:       st.sqes.Load(),
		CQEsReaped:          st.cqes.Load(),
		Enters:              st.enters.Load(),
		CQOverflows:         st.cqOverflows.Load(),
		SQFull:              st.sqFull.Load(),
		PollArms:            st.pollArms.Load(),
		BufferRingExhausted: st.enobufs.Load(),
		RetriedEAGAIN:       st.retriedEAGAIN.Load(),
		BuffersLent:         st.lentBufs.Load(),
		StreamEnters:        st.streamEnters.Load(),
		IdlePollWork:        st.idlePollHits.Load(),
		IdlePollTimeout:     st.idlePollMiss.Load(),
		Closed:              closed,
		Accepted:            st.accepted.Load(),
		Rejected:            st.rejected.Load(),
		ReadBytes:           st.readBytes.Load(),
		WrittenBytes:        st.writtenBytes.Load(),
		ReadInline:          st.readInline.Load(),
		ReadPolled:          st.readPolled.Load(),
		WriteInline:         st.writeInline.Load(),
		WritePolled:         st.writePolled.Load(),
		AcceptPolled:        st.acceptPollArmed.Load(),
		Inflight:            st.inflight.Load(),
		CQEsPerEnter:        l.hist.cqesPerEnter.snapshot(),
		TaskworkBatch:       l.hist.batch.snapshot(),
		ReadPausesConn:      l.budget.pauses[0].Load(),
		ReadPausesRuntime:   l.budget.pauses[1].Load(),
		BufferedBytes:       l.budget.held.Load(),
		IdleClosed:          l.idle.closed.Load(),
		ReadTimeouts:        l.budget.timedOut[timedOutRead].Load(),
		WriteTimeouts:       l.budget.timedOut[timedOutWrite].Load(),
		CloseTimeouts:       l.budget.timedOut[timedOutClose].Load(),
		Lingers:             st.lingers.Load(),
		LingersCut:          lingersCut,
		InlineRuns:          l.inl.runs.Load(),
		InlineTakeovers:     l.inl.takeovers.Load(),
		WriteRefusedConn:    l.budget.refused[capConn].Load(),
		WriteRefusedRuntime: l.budget.refused[capRuntime].Load(),
		UDP: UDPStats{
			ReceivedDatagrams: l.udp.inDatagrams.Load(),
			SentDatagrams:     l.udp.outDatagrams.Load(),
			ReceivedBytes:     l.udp.inBytes.Load(),
			SentBytes:         l.udp.outBytes.Load(),
			Truncated:         l.udp.truncated.Load(),
			ReadPolled:        l.udp.inPolled.Load(),
			WritePolled:       l.udp.outPolled.Load(),
		},
	}
}

func (rt *Runtime) setupFlags() string {
	if len(rt.loops) == 0 {
		return "none"
	}
	return rt.loops[0].ring.Flags().String()
}
