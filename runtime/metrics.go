package uringrt

import (
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"

	"github.com/uringrt/uringrt/sched"
)

// loopStats are one loop's counters. Each is written by its loop (or by the
// goroutines of that loop's connections) and read by the collector at
// scrape time; nothing is shared across loops.
type loopStats struct {
	_                          [64]byte
	sqes, cqes, enters         atomic.Uint64
	cqOverflows, sqFull        atomic.Uint64
	pollArms                   atomic.Uint64
	enobufs                    atomic.Uint64
	lentBufs                   atomic.Uint64
	idlePollHits, idlePollMiss atomic.Uint64
	accepted, closed, rejected atomic.Uint64
	readBytes, writtenBytes    atomic.Uint64
	readInline, readPolled     atomic.Uint64
	writeInline, writePolled   atomic.Uint64
	acceptPollArmed            atomic.Uint64
	inflight                   atomic.Int64
	blockingWait               durHist
	_                          [64]byte
}

// hist is a histogram with power-of-two buckets 1, 2, 4, ... 1024, written
// by one goroutine and read at scrape time.
type hist struct {
	buckets [12]atomic.Uint64 // last: +Inf
	sum     atomic.Uint64
}

func (h *hist) observe(v int) {
	i := 0
	for b := 1; i < 11 && v > b; b <<= 1 {
		i++
	}
	h.buckets[i].Add(1)
	h.sum.Add(uint64(v))
}

// constHistogram reads h. The count is the sum of the buckets, so the
// cumulative buckets never exceed it even while the owner observes.
func (h *hist) constHistogram(desc *prometheus.Desc, labels ...string) prometheus.Metric {
	b := make(map[float64]uint64, 11)
	var cum uint64
	for i := 0; i < 11; i++ {
		cum += h.buckets[i].Load()
		b[float64(int(1)<<i)] = cum
	}
	count := cum + h.buckets[11].Load()
	return prometheus.MustNewConstHistogram(desc, count, float64(h.sum.Load()), b, labels...)
}

// durBounds are the upper bounds of durHist's buckets in nanoseconds:
// 1 µs to 1 s in 1-2.5-5 steps.
var durBounds = [...]int64{
	1e3, 2.5e3, 5e3, 1e4, 2.5e4, 5e4, 1e5, 2.5e5, 5e5,
	1e6, 2.5e6, 5e6, 1e7, 2.5e7, 5e7, 1e8, 2.5e8, 5e8, 1e9,
}

// durHist is a histogram of durations with durBounds buckets (exported in
// seconds). It lives in one loop's stats: its writers are the goroutines
// of that loop's connections (or the workers serving them), never every
// goroutine of the process, and it is read at scrape time.
type durHist struct {
	buckets [len(durBounds) + 1]atomic.Uint64 // last: +Inf
	sumNs   atomic.Uint64
}

func (h *durHist) observe(d time.Duration) {
	if d < 0 {
		d = 0
	}
	i := 0
	for i < len(durBounds) && int64(d) > durBounds[i] {
		i++
	}
	h.buckets[i].Add(1)
	h.sumNs.Add(uint64(d))
}

// addTo adds h's bucket counts (not cumulative; last is +Inf) and sum.
func (h *durHist) addTo(buckets *[len(durBounds) + 1]uint64, sumNs *uint64) {
	for i := range h.buckets {
		buckets[i] += h.buckets[i].Load()
	}
	*sumNs += h.sumNs.Load()
}

func durConstHistogram(desc *prometheus.Desc, buckets *[len(durBounds) + 1]uint64, sumNs uint64) prometheus.Metric {
	b := make(map[float64]uint64, len(durBounds))
	var cum uint64
	for i, ub := range durBounds {
		cum += buckets[i]
		b[float64(ub)/1e9] = cum
	}
	count := cum + buckets[len(durBounds)]
	return prometheus.MustNewConstHistogram(desc, count, float64(sumNs)/1e9, b)
}

type loopHists struct {
	cqesPerEnter hist
	batch        hist
}

func (h *loopHists) observeBatch(n int) { h.batch.observe(n) }

// publish copies the ring's own counters (plain fields the loop owns) into
// the loop's atomics, once per iteration.
func (l *loop) publish(n int) {
	s := l.ring.Stats()
	l.stats.sqes.Store(s.SQEsSubmitted)
	l.stats.cqes.Store(s.CQEsReaped)
	l.stats.enters.Store(s.Enters)
	l.stats.cqOverflows.Store(s.CQOverflows)
	l.stats.sqFull.Store(s.SQFull)
	l.stats.inflight.Store(int64(l.inflight))
	l.hist.cqesPerEnter.observe(n)
}

func (l *loop) countRead(n int, polled bool) {
	if !l.rt.metrics {
		return
	}
	l.stats.readBytes.Add(uint64(n))
	if polled {
		l.stats.readPolled.Add(1)
	} else {
		l.stats.readInline.Add(1)
	}
}

func (l *loop) countWrite(n int, polled bool) {
	if !l.rt.metrics {
		return
	}
	l.stats.writtenBytes.Add(uint64(n))
	if polled {
		l.stats.writePolled.Add(1)
	} else {
		l.stats.writeInline.Add(1)
	}
}

func (l *loop) observeBlockingWait(d time.Duration) {
	if !l.rt.metrics {
		return
	}
	l.stats.blockingWait.observe(d)
}

func errnoName(e syscall.Errno) string {
	if name := unix.ErrnoName(e); name != "" {
		return name
	}
	return "errno" + strconv.Itoa(int(e))
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName("uringrt", "", name), help, labels, nil)
}

var (
	dSQEs      = desc("sqes_submitted_total", "SQEs the kernel consumed from the submission queue.", "loop")
	dCQEs      = desc("cqes_reaped_total", "CQEs reaped from the completion queue.", "loop")
	dEnters    = desc("enter_calls_total", "io_uring_enter(2) calls.", "loop")
	dCQOver    = desc("cq_overflows_total", "Times the kernel flagged CQ overflow (IORING_SQ_CQ_OVERFLOW); overflowed CQEs are flushed, none lost.", "loop")
	dSQFull    = desc("sq_full_total", "Times the submission queue was full; the loop submitted and retried.", "loop")
	dPollArms  = desc("poll_arms_total", "Polls armed through the ring (IORING_OP_POLL_ADD).", "loop")
	dLent      = desc("buffers_lent_total", "Provided buffers a callback Write sent without a copy (buffer lending, Config.DisableBufferLending); each went back to the ring once sent.", "loop")
	dENOBUFS   = desc("buffer_ring_exhausted_total", "Recvs that found the provided buffer ring empty (ENOBUFS); re-armed after buffers came back.", "loop")
	dIdlePoll  = desc("idle_polls_total", "Busy-polls before sleeping (Config.IdlePoll) by outcome: work (work appeared, no sleep) or timeout (the loop went to sleep).", "loop", "outcome")
	dAccepted  = desc("connections_accepted_total", "Connections accepted.", "loop")
	dClosed    = desc("connections_closed_total", "Accepted connections closed.", "loop")
	dRejected  = desc("connections_rejected_total", "Connections closed at once because MaxConns was reached.", "loop")
	dActive    = desc("connections_active", "Accepted connections open now.", "loop")
	dRead      = desc("read_bytes_total", "Bytes read from connections.", "loop")
	dWritten   = desc("written_bytes_total", "Bytes written to connections.", "loop")
	dPollable  = desc("pollable_requests_total", "Pollable requests (socket reads, writes, accepts) by outcome: inline (done at the nonblock try) or poll_armed (waited for readiness or completion through the ring).", "loop", "op", "outcome")
	dInflight  = desc("inflight_ops", "Requests the loop has in flight in its ring.", "loop")
	dCPE       = desc("cqes_per_enter", "CQEs ready after each loop wake-up (io_uring_enter with GETEVENTS).", "loop")
	dBatch     = desc("taskwork_batch_size", "Completions run as one batch on the loop.", "loop")
	dBlockWait = desc("blocking_queue_wait_seconds", "Time experiment.PollBlocking operations waited in the fixed pool's queue for a worker.")
	dCtxsw     = desc("process_context_switches_total", "Context switches of the process (getrusage), by kind: voluntary or involuntary.", "kind")
	dAcceptErr = desc("accept_errors_total", "accept(2) failures by errno.", "errno")
	dInfo      = desc("backend_info", "The backend in use (1): backend uring or std, kernel release, ring setup flags.", "backend", "kernel", "setup_flags")
	dPanics    = desc("handler_panics_total", "Callback handler panics recovered (each closed its connection).")
)

// acceptErrnos are the accept(2) failures an operator alerts on (out of
// descriptors or memory); they are exported at 0 before the first one so
// that the family exists and rate() works from the start.
var acceptErrnos = []syscall.Errno{unix.EMFILE, unix.ENFILE, unix.ENOBUFS, unix.ENOMEM}

type collector struct{ rt *Runtime }

// sink sends a collector's samples: counter and gauge each send one
// constant metric of d with value v and the given label values.
type sink chan<- prometheus.Metric

func (s sink) counter(d *prometheus.Desc, v uint64, labels ...string) {
	s <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
}

func (s sink) gauge(d *prometheus.Desc, v float64, labels ...string) {
	s <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

// Describe sends every metric's descriptor.
func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dSQEs, dCQEs, dEnters, dCQOver, dSQFull, dPollArms, dENOBUFS, dLent,
		dIdlePoll, dAccepted, dClosed, dRejected, dActive, dRead, dWritten, dPollable, dInflight, dCPE, dBatch,
		dBlockWait, dCtxsw, dAcceptErr, dInfo, dPanics} {
		ch <- d
	}
}

// Collect reads the loops' counters.
func (c collector) Collect(ch chan<- prometheus.Metric) {
	rt := c.rt
	out := sink(ch)
	for _, l := range rt.loops {
		id := strconv.Itoa(l.id)
		s := &l.stats
		out.counter(dSQEs, s.sqes.Load(), id)
		out.counter(dCQEs, s.cqes.Load(), id)
		out.counter(dEnters, s.enters.Load(), id)
		out.counter(dCQOver, s.cqOverflows.Load(), id)
		out.counter(dSQFull, s.sqFull.Load(), id)
		out.counter(dPollArms, s.pollArms.Load(), id)
		out.counter(dENOBUFS, s.enobufs.Load(), id)
		out.counter(dLent, s.lentBufs.Load(), id)
		out.counter(dIdlePoll, s.idlePollHits.Load(), id, "work")
		out.counter(dIdlePoll, s.idlePollMiss.Load(), id, "timeout")
		// closed first: a connection is counted accepted before closed,
		// so active (accepted - closed) never reads negative.
		cl := s.closed.Load()
		acc := s.accepted.Load()
		out.counter(dAccepted, acc, id)
		out.counter(dClosed, cl, id)
		out.counter(dRejected, s.rejected.Load(), id)
		out.gauge(dActive, float64(int64(acc)-int64(cl)), id)
		out.counter(dRead, s.readBytes.Load(), id)
		out.counter(dWritten, s.writtenBytes.Load(), id)
		out.counter(dPollable, s.readInline.Load(), id, "read", "inline")
		out.counter(dPollable, s.readPolled.Load(), id, "read", "poll_armed")
		out.counter(dPollable, s.writeInline.Load(), id, "write", "inline")
		out.counter(dPollable, s.writePolled.Load(), id, "write", "poll_armed")
		out.counter(dPollable, s.acceptPollArmed.Load(), id, "accept", "poll_armed")
		out.gauge(dInflight, float64(s.inflight.Load()), id)
		ch <- l.hist.cqesPerEnter.constHistogram(dCPE, id)
		ch <- l.hist.batch.constHistogram(dBatch, id)
	}
	var waitBuckets [len(durBounds) + 1]uint64
	var waitNs uint64
	for _, l := range rt.loops {
		l.stats.blockingWait.addTo(&waitBuckets, &waitNs)
	}
	ch <- durConstHistogram(dBlockWait, &waitBuckets, waitNs)
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) == nil {
		out.counter(dCtxsw, uint64(ru.Nvcsw), "voluntary")
		out.counter(dCtxsw, uint64(ru.Nivcsw), "involuntary")
	}
	seen := make(map[string]bool, len(acceptErrnos))
	rt.acceptErrs.Range(func(k, v any) bool {
		out.counter(dAcceptErr, v.(*atomic.Uint64).Load(), k.(string))
		seen[k.(string)] = true
		return true
	})
	if rt.backend == BackendUring {
		for _, e := range acceptErrnos {
			if name := errnoName(e); !seen[name] {
				out.counter(dAcceptErr, 0, name)
			}
		}
	}
	kernel := rt.features.Kernel
	if kernel == "" {
		kernel = "unknown"
	}
	out.gauge(dInfo, 1, rt.backend.String(), kernel, rt.setupFlags())
	out.counter(dPanics, rt.panics.Load())
}

func (rt *Runtime) setupFlags() string {
	if len(rt.loops) == 0 {
		return "none"
	}
	return rt.loops[0].ring.Flags().String()
}

func (rt *Runtime) registerMetrics(reg prometheus.Registerer) error {
	if err := reg.Register(collector{rt}); err != nil {
		return err
	}
	if err := reg.Register(limitsCollector{rt}); err != nil {
		return err
	}
	if err := reg.Register(udpCollector{rt}); err != nil {
		return err
	}
	return reg.Register(sched.NewCollector(rt.pool, "workers"))
}
