package runtime

import (
	"math"
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
	_                             [64]byte
	sqes, cqes, enters            atomic.Uint64
	cqOverflows, sqFull           atomic.Uint64
	pollArms                      atomic.Uint64
	enobufs                       atomic.Uint64
	accepted, closed, rejected    atomic.Uint64
	readBytes, writtenBytes       atomic.Uint64
	readInline, readPolled        atomic.Uint64
	writeInline, writePolled      atomic.Uint64
	acceptPollArmed               atomic.Uint64
	inflight                      atomic.Int64
	blockingWaitNs, blockingWaits atomic.Uint64
	_                             [64]byte
}

// hist is a histogram with power-of-two buckets 1, 2, 4, ... 1024, written
// by one goroutine and read at scrape time.
type hist struct {
	buckets [12]atomic.Uint64 // last: +Inf
	sum     atomic.Uint64
	count   atomic.Uint64
}

func (h *hist) observe(v int) {
	i := 0
	for b := 1; i < 11 && v > b; b <<= 1 {
		i++
	}
	h.buckets[i].Add(1)
	h.sum.Add(uint64(v))
	h.count.Add(1)
}

func (h *hist) constHistogram(desc *prometheus.Desc, labels ...string) prometheus.Metric {
	b := make(map[float64]uint64, 11)
	var cum uint64
	for i := 0; i < 11; i++ {
		cum += h.buckets[i].Load()
		b[float64(int(1)<<i)] = cum
	}
	return prometheus.MustNewConstHistogram(desc, h.count.Load(), float64(h.sum.Load()), b, labels...)
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
	l.stats.blockingWaitNs.Add(uint64(d))
	l.stats.blockingWaits.Add(1)
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
	dENOBUFS   = desc("buffer_ring_exhausted_total", "Recvs that found the provided buffer ring empty (ENOBUFS); re-armed after buffers came back.", "loop")
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
	dBlockWait = desc("blocking_queue_wait_seconds", "Time PollBlocking operations waited for a worker, summed (histogram-free: _sum and _count).")
	dCtxsw     = desc("process_context_switches_total", "Context switches of the process (getrusage), by kind: voluntary or involuntary.", "kind")
	dAcceptErr = desc("accept_errors_total", "accept(2) failures by errno.", "errno")
	dInfo      = desc("backend_info", "The backend in use (1): backend uring or std, kernel release, ring setup flags.", "backend", "kernel", "setup_flags")
	dPanics    = desc("handler_panics_total", "Callback handler panics recovered (each closed its connection).")
)

type collector struct{ rt *Runtime }

// Describe sends every metric's descriptor.
func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dSQEs, dCQEs, dEnters, dCQOver, dSQFull, dPollArms, dENOBUFS,
		dAccepted, dClosed, dRejected, dActive, dRead, dWritten, dPollable, dInflight, dCPE, dBatch,
		dBlockWait, dCtxsw, dAcceptErr, dInfo, dPanics} {
		ch <- d
	}
}

// Collect reads the loops' counters.
func (c collector) Collect(ch chan<- prometheus.Metric) {
	rt := c.rt
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	for _, l := range rt.loops {
		id := strconv.Itoa(l.id)
		s := &l.stats
		counter(dSQEs, s.sqes.Load(), id)
		counter(dCQEs, s.cqes.Load(), id)
		counter(dEnters, s.enters.Load(), id)
		counter(dCQOver, s.cqOverflows.Load(), id)
		counter(dSQFull, s.sqFull.Load(), id)
		counter(dPollArms, s.pollArms.Load(), id)
		counter(dENOBUFS, s.enobufs.Load(), id)
		acc, cl := s.accepted.Load(), s.closed.Load()
		counter(dAccepted, acc, id)
		counter(dClosed, cl, id)
		counter(dRejected, s.rejected.Load(), id)
		ch <- prometheus.MustNewConstMetric(dActive, prometheus.GaugeValue, float64(int64(acc)-int64(cl)), id)
		counter(dRead, s.readBytes.Load(), id)
		counter(dWritten, s.writtenBytes.Load(), id)
		counter(dPollable, s.readInline.Load(), id, "read", "inline")
		counter(dPollable, s.readPolled.Load(), id, "read", "poll_armed")
		counter(dPollable, s.writeInline.Load(), id, "write", "inline")
		counter(dPollable, s.writePolled.Load(), id, "write", "poll_armed")
		counter(dPollable, s.acceptPollArmed.Load(), id, "accept", "poll_armed")
		ch <- prometheus.MustNewConstMetric(dInflight, prometheus.GaugeValue, float64(s.inflight.Load()), id)
		ch <- l.hist.cqesPerEnter.constHistogram(dCPE, id)
		ch <- l.hist.batch.constHistogram(dBatch, id)
	}
	var waits, waitNs uint64
	for _, l := range rt.loops {
		waits += l.stats.blockingWaits.Load()
		waitNs += l.stats.blockingWaitNs.Load()
	}
	ch <- prometheus.MustNewConstSummary(dBlockWait, waits, float64(waitNs)/1e9, nil)
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) == nil {
		counter(dCtxsw, uint64(ru.Nvcsw), "voluntary")
		counter(dCtxsw, uint64(ru.Nivcsw), "involuntary")
	}
	rt.acceptErrs.Range(func(k, v any) bool {
		counter(dAcceptErr, v.(*atomic.Uint64).Load(), k.(string))
		return true
	})
	kernel := rt.features.Kernel
	if kernel == "" {
		kernel = "unknown"
	}
	ch <- prometheus.MustNewConstMetric(dInfo, prometheus.GaugeValue, 1, rt.backend.String(), kernel, rt.setupFlags())
	counter(dPanics, rt.panics.Load())
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
	return reg.Register(sched.NewCollector(rt.pool, "workers"))
}

var _ = math.Inf
