package uringrt

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// The metrics of the memory budget (budget.go) and the idle timeout
// (idle.go), in a collector of their own.
var (
	dReadPauses = desc("read_pauses_total", "Times a callback connection stopped reading because of the memory budget, by kind: conn (its queue passed MaxWriteBuffer) or runtime (all queues passed MaxBufferedBytes; the largest queues stop first).", "loop", "kind")
	dBuffered   = desc("output_buffered_bytes", "Bytes of queue chunks that callback connections hold for output not yet sent (capped by MaxBufferedBytes, plus the stated overshoot).", "loop")
	dIdleClosed = desc("idle_closed_total", "Connections closed by Config.IdleTimeout (no read or write progress for that long).", "loop")
)

type limitsCollector struct{ rt *Runtime }

// Describe sends the descriptors.
func (c limitsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- dReadPauses
	ch <- dBuffered
	ch <- dIdleClosed
}

// Collect sends one series per loop (and reason).
func (c limitsCollector) Collect(ch chan<- prometheus.Metric) {
	out := sink(ch)
	for _, l := range c.rt.loops {
		id := strconv.Itoa(l.id)
		for r, name := range pauseReasons {
			out.counter(dReadPauses, l.budget.pauses[r].Load(), id, name)
		}
		out.gauge(dBuffered, float64(l.budget.held.Load()), id)
		out.counter(dIdleClosed, l.idle.closed.Load(), id)
	}
}
