// Package uringprom exports a uringrt Runtime's counters to Prometheus.
//
// The runtime package keeps its counters as atomics and links no metrics
// library; this package reads them with Runtime.Stats at scrape time and
// turns them into the uringrt_* metric families:
//
//	reg := prometheus.NewRegistry()
//	rt, err := uringrt.New(uringrt.Config{Metrics: true})
//	if err != nil { ... }
//	if err := uringprom.Register(reg, rt); err != nil { ... }
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// Nothing is recorded on the runtime's I/O paths by this package; every
// scrape calls Runtime.Stats once.
package uringprom

import (
	"errors"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"

	uringrt "github.com/uringrt/uringrt/runtime"
)

// ErrMetricsOff was Register's error for a runtime built without
// Config.Metrics. Register no longer returns it: it turns the runtime's
// metrics on (Runtime.EnableMetrics).
//
// Deprecated: Register enables the metrics it exports.
var ErrMetricsOff = errors.New("uringprom: runtime built without Config.Metrics")

// Register registers rt's collector (NewCollector) on reg, first turning
// on rt's counters (Runtime.EnableMetrics) when rt was built without
// Config.Metrics, as the default runtime is (uringrt.Default): the byte,
// pollable-outcome, accept-error and ring counters then count from this
// call. It fails with reg's error on a registration conflict (a second
// runtime on the same reg).
func Register(reg prometheus.Registerer, rt *uringrt.Runtime) error {
	rt.EnableMetrics()
	return reg.Register(NewCollector(rt))
}

// NewCollector returns a collector of rt's metrics: the uringrt_* families
// of the loops (label loop), of the process and of the worker pool (as
// NewPoolCollector with pool="workers"). Each Collect calls rt.Stats once.
func NewCollector(rt *uringrt.Runtime) prometheus.Collector {
	return &collector{rt: rt, pool: newPoolDescs("workers")}
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName("uringrt", "", name), help, labels, nil)
}

var (
	dSQEs      = desc("sqes_submitted_total", "Operations handed to the kernel (SQEs it consumed from the submission queue).", "loop")
	dCQEs      = desc("cqes_reaped_total", "Operations the kernel completed and the loop handled (CQEs reaped from the completion queue).", "loop")
	dEnters    = desc("enter_calls_total", "System calls into io_uring (io_uring_enter(2)), to submit operations or wait for completions.", "loop")
	dCQOver    = desc("cq_overflows_total", "Times completions came faster than the completion queue holds (IORING_SQ_CQ_OVERFLOW); the kernel kept them and they were handled later, none lost.", "loop")
	dSQFull    = desc("sq_full_total", "Times the submission queue was full; the loop submitted what it held and went on.", "loop")
	dPollArms  = desc("poll_arms_total", "Waits for a socket to become ready, armed through the ring (IORING_OP_POLL_ADD).", "loop")
	dLent      = desc("buffers_lent_total", "Buffers a callback WriteNoCopy sent without a copy (buffer lending, Config.DisableBufferLending): provided buffers, each back in the ring once sent, and stream-mode recv buffers.", "loop")
	dStream    = desc("stream_mode_enters_total", "Callback connections switched to stream mode after consecutive large reads: a single-shot recv into a 32 KiB buffer of their own instead of the provided buffer ring.", "loop")
	dENOBUFS   = desc("buffer_ring_exhausted_total", "Callback reads that found no free receive buffer (ENOBUFS: the provided buffer ring was empty); they read again once buffers came back.", "loop")
	dEAGAIN    = desc("io_retried_eagain_total", "Callback reads and writes, and UDP multishot reads, that the kernel gave back as not ready (EAGAIN, from an io-wq retry on the nonblocking socket) and that were issued again.", "loop")
	dIdlePoll  = desc("idle_polls_total", "Busy-polls before sleeping (Config.IdlePoll) by outcome: work (work appeared, no sleep) or timeout (the loop went to sleep).", "loop", "outcome")
	dAccepted  = desc("connections_accepted_total", "Connections accepted.", "loop")
	dClosed    = desc("connections_closed_total", "Accepted connections closed.", "loop")
	dRejected  = desc("connections_rejected_total", "Connections closed at once because MaxConns was reached.", "loop")
	dActive    = desc("connections_active", "Accepted connections open now.", "loop")
	dRead      = desc("read_bytes_total", "Bytes read from connections.", "loop")
	dWritten   = desc("written_bytes_total", "Bytes written to connections.", "loop")
	dPollable  = desc("pollable_requests_total", "net.Conn reads and writes, and Accept calls, by outcome: inline (done at once, the socket was ready) or poll_armed (waited until the socket was ready: in Go's netpoller, the default with GOMAXPROCS >= 2, or on a poll the loop armed in the ring, poll_arms_total). The callback API's recvs and sends are not counted here (they go through the ring without a try first): see read_bytes_total and written_bytes_total.", "loop", "op", "outcome")
	dInflight  = desc("inflight_ops", "Requests the loop has in flight in its ring.", "loop")
	dCPE       = desc("cqes_per_enter", "Completions a loop handled at each pass (one observation per pass: after a wait in Go's netpoller or in io_uring_enter, or a submit); larger means more batched. Its count is loop passes, not enter_calls_total: the default loop waits in Go's netpoller, not in io_uring_enter.", "loop")
	dBatch     = desc("taskwork_batch_size", "Completions run as one batch on the loop.", "loop")
	dBlockWait = desc("blocking_queue_wait_seconds", "Time PollBlocking operations waited in the fixed pool's queue for a worker.")
	dCtxsw     = desc("process_context_switches_total", "Context switches of the process (getrusage), by kind: voluntary or involuntary.", "kind")
	dAcceptErr = desc("accept_errors_total", "accept(2) failures by errno.", "errno")
	dInfo      = desc("backend_info", "Always 1; its labels say how the runtime runs: backend uring (io_uring) or std (Go's net, a fallback), the kernel release, and setup_flags, the flags the loops' rings were set up with (COOP_TASKRUN for the default loop, SINGLE_ISSUER|DEFER_TASKRUN with Config.LockedLoops).", "backend", "kernel", "setup_flags")
	dPanics    = desc("handler_panics_total", "Callback handler panics recovered (each closed its connection).")

	// The memory budget and the idle timeout.
	dReadPauses = desc("read_pauses_total", "Times a callback connection stopped reading because of the memory budget, by kind: conn (its queue passed MaxWriteBuffer) or runtime (all queues passed MaxBufferedBytes; the largest queues stop first).", "loop", "kind")
	dBuffered   = desc("output_buffered_bytes", "Bytes of queue chunks that callback connections hold for output not yet sent (capped by MaxBufferedBytes, plus the stated overshoot).", "loop")
	dIdleClosed = desc("idle_closed_total", "Connections closed by Config.IdleTimeout (no read or write progress for that long).", "loop")
	dTimedOut   = desc("connections_timed_out_total", "Callback connections the runtime cut off because a timeout passed, by kind: read (SetReadTimeout: the peer sent nothing for that long), write (SetWriteTimeout: the peer took none of the queued output for that long), close (Config.CloseTimeout: a graceful Close could not send the queued output in time, the peer does not read). Each was reset, so its peer sees an error, not an orderly end, and its queued output was dropped.", "loop", "kind")
	dLingers    = desc("close_lingers_total", "Graceful closes of callback connections that waited for the peer once their output was all in the socket: the peer's input was unread or the output not yet acknowledged, so a close(2) then would have reset the connection (at once, or when the peer sent more) and dropped output the kernel still held. Each shut its sending side down and dropped what the peer sent until the peer's FIN, the peer's acknowledgement of all the output, 500 ms in which the peer took none of it, or the end of Config.CloseTimeout.", "loop")
	dInlineRuns = desc("inline_runs_total", "Functions a protocol layer ran on the loop between its batches (CallbackConn.RunOnLoop), such as HTTP handlers.", "loop")
	dInlineTake = desc("inline_takeovers_total", "Functions run on the loop (inline_runs_total) that had not returned after one to two milliseconds, or were about to wait, so that the loop went on in a new goroutine; each held up the loop's other connections until then.", "loop")
	dLingersCut = desc("close_lingers_cut_total", "Lingering closes (close_lingers_total) ended because the peer took no output for 500 ms or Config.CloseTimeout passed; their close(2) may still have reset the connection.", "loop")
	dRefused    = desc("write_refusals_total", "Writes to callback connections refused with ErrWriteBufferFull (nothing of them was queued; the handler drops, waits for OnDrained, or closes), by kind: conn (the connection's unsent output would pass Config.MaxWriteBuffer: its peer reads slower than the handler writes) or runtime (all connections' unsent output would pass Config.MaxBufferedBytes: the process is at its output memory cap).", "loop", "kind")

	// PacketConns.
	dUDPInDgrams  = desc("udp_received_datagrams_total", "UDP datagrams received by PacketConns (UDP_GRO-coalesced ones counted by segment).", "loop")
	dUDPOutDgrams = desc("udp_sent_datagrams_total", "UDP datagrams sent by PacketConns (a UDP_SEGMENT send counted by segment).", "loop")
	dUDPInBytes   = desc("udp_received_bytes_total", "UDP payload bytes received by PacketConns.", "loop")
	dUDPOutBytes  = desc("udp_sent_bytes_total", "UDP payload bytes sent by PacketConns.", "loop")
	dUDPTrunc     = desc("udp_truncated_total", "UDP datagrams received longer than the reader's buffer (MSG_TRUNC): the rest was discarded.", "loop")
	dUDPPolled    = desc("udp_poll_waits_total", "PacketConn reads and writes that found EAGAIN at the nonblock try and parked on the loop's poll, by op: read or write.", "loop", "op")
)

var runtimeDescs = []*prometheus.Desc{dSQEs, dCQEs, dEnters, dCQOver, dSQFull, dPollArms, dENOBUFS, dEAGAIN, dLent, dStream,
	dIdlePoll, dAccepted, dClosed, dRejected, dActive, dRead, dWritten, dPollable, dInflight, dCPE, dBatch,
	dBlockWait, dCtxsw, dAcceptErr, dInfo, dPanics, dReadPauses, dBuffered, dIdleClosed, dTimedOut, dLingers, dLingersCut, dInlineRuns, dInlineTake, dRefused,
	dUDPInDgrams, dUDPOutDgrams, dUDPInBytes, dUDPOutBytes, dUDPTrunc, dUDPPolled}

type collector struct {
	rt   *uringrt.Runtime
	pool poolDescs
}

// sink sends a collector's samples: counter and gauge each send one
// constant metric of d with value v and the given label values.
type sink chan<- prometheus.Metric

func (s sink) counter(d *prometheus.Desc, v uint64, labels ...string) {
	s <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
}

func (s sink) gauge(d *prometheus.Desc, v float64, labels ...string) {
	s <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func (s sink) histogram(d *prometheus.Desc, h uringrt.Histogram, labels ...string) {
	b := make(map[float64]uint64, len(h.Bounds))
	for i, ub := range h.Bounds {
		b[ub] = h.Cumulative[i]
	}
	s <- prometheus.MustNewConstHistogram(d, h.Count, h.Sum, b, labels...)
}

// Describe sends every metric's descriptor.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range runtimeDescs {
		ch <- d
	}
	c.pool.describe(ch)
}

// Collect reads the runtime's Stats once and sends its metrics.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.rt.Stats()
	out := sink(ch)
	for i := range s.Loops {
		collectLoop(out, &s.Loops[i])
	}
	out.histogram(dBlockWait, s.BlockingWait)
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) == nil {
		out.counter(dCtxsw, uint64(ru.Nvcsw), "voluntary")
		out.counter(dCtxsw, uint64(ru.Nivcsw), "involuntary")
	}
	for errno, n := range s.AcceptErrors {
		out.counter(dAcceptErr, n, errno)
	}
	out.gauge(dInfo, 1, s.Backend.String(), s.Kernel, s.SetupFlags)
	out.counter(dPanics, s.HandlerPanics)
	c.pool.collect(out, s.Workers)
}

func collectLoop(out sink, l *uringrt.LoopStats) {
	id := strconv.Itoa(l.ID)
	out.counter(dSQEs, l.SQEsSubmitted, id)
	out.counter(dCQEs, l.CQEsReaped, id)
	out.counter(dEnters, l.Enters, id)
	out.counter(dCQOver, l.CQOverflows, id)
	out.counter(dSQFull, l.SQFull, id)
	out.counter(dPollArms, l.PollArms, id)
	out.counter(dENOBUFS, l.BufferRingExhausted, id)
	out.counter(dEAGAIN, l.RetriedEAGAIN, id)
	out.counter(dLent, l.BuffersLent, id)
	out.counter(dStream, l.StreamEnters, id)
	out.counter(dIdlePoll, l.IdlePollWork, id, "work")
	out.counter(dIdlePoll, l.IdlePollTimeout, id, "timeout")
	out.counter(dAccepted, l.Accepted, id)
	out.counter(dClosed, l.Closed, id)
	out.counter(dRejected, l.Rejected, id)
	out.gauge(dActive, float64(int64(l.Accepted)-int64(l.Closed)), id)
	out.counter(dRead, l.ReadBytes, id)
	out.counter(dWritten, l.WrittenBytes, id)
	out.counter(dPollable, l.ReadInline, id, "read", "inline")
	out.counter(dPollable, l.ReadPolled, id, "read", "poll_armed")
	out.counter(dPollable, l.WriteInline, id, "write", "inline")
	out.counter(dPollable, l.WritePolled, id, "write", "poll_armed")
	out.counter(dPollable, l.AcceptPolled, id, "accept", "poll_armed")
	out.gauge(dInflight, float64(l.Inflight), id)
	out.histogram(dCPE, l.CQEsPerEnter, id)
	out.histogram(dBatch, l.TaskworkBatch, id)
	out.counter(dReadPauses, l.ReadPausesConn, id, "conn")
	out.counter(dReadPauses, l.ReadPausesRuntime, id, "runtime")
	out.gauge(dBuffered, float64(l.BufferedBytes), id)
	out.counter(dIdleClosed, l.IdleClosed, id)
	out.counter(dTimedOut, l.ReadTimeouts, id, "read")
	out.counter(dTimedOut, l.WriteTimeouts, id, "write")
	out.counter(dTimedOut, l.CloseTimeouts, id, "close")
	out.counter(dLingers, l.Lingers, id)
	out.counter(dLingersCut, l.LingersCut, id)
	out.counter(dInlineRuns, l.InlineRuns, id)
	out.counter(dInlineTake, l.InlineTakeovers, id)
	out.counter(dRefused, l.WriteRefusedConn, id, "conn")
	out.counter(dRefused, l.WriteRefusedRuntime, id, "runtime")
	u := &l.UDP
	out.counter(dUDPInDgrams, u.ReceivedDatagrams, id)
	out.counter(dUDPOutDgrams, u.SentDatagrams, id)
	out.counter(dUDPInBytes, u.ReceivedBytes, id)
	out.counter(dUDPOutBytes, u.SentBytes, id)
	out.counter(dUDPTrunc, u.Truncated, id)
	out.counter(dUDPPolled, u.ReadPolled, id, "read")
	out.counter(dUDPPolled, u.WritePolled, id, "write")
}
