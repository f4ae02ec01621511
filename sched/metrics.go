package sched

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// collector exports a Pool's Stats as Prometheus metrics at scrape time.
type collector struct {
	p     Pool
	pool  string
	depth *prometheus.Desc
	run   *prometheus.Desc
	canc  *prometheus.Desc
	pan   *prometheus.Desc
	batch *prometheus.Desc
	size  *prometheus.Desc
}

// NewCollector returns a collector for p whose metrics carry the label
// pool=pool (keep it low-cardinality, e.g. "callbacks"). Register it on a
// prometheus.Registerer; register one collector per pool, with distinct pool
// labels. Every Collect calls p.Stats() once; nothing is recorded on the
// pool's hot path. Metrics (namespace "uringrt"):
//
//	uringrt_worker_queue_depth{pool,worker}            gauge, works
//	uringrt_worker_works_run_total{pool,worker}        counter
//	uringrt_worker_works_cancelled_total{pool,worker}  counter
//	uringrt_worker_panics_total{pool,worker}           counter
//	uringrt_worker_batches_total{pool,worker}          counter
//	uringrt_worker_batch_size{pool}                    histogram, works; buckets 1,2,4,...,1024
//
// worker is the worker index ("0", "1", ...). For a SharedPool the queue
// depth is one series with worker="shared" (its workers have no private
// list).
func NewCollector(p Pool, pool string) prometheus.Collector {
	const ns, sub = "uringrt", "worker"
	cl := prometheus.Labels{"pool": pool}
	wl := []string{"worker"}
	return &collector{
		p:    p,
		pool: pool,
		depth: prometheus.NewDesc(prometheus.BuildFQName(ns, sub, "queue_depth"),
			"Works handed to the worker and not yet finished (shared pools: works in the shared list, worker=\"shared\").",
			wl, cl),
		run: prometheus.NewDesc(prometheus.BuildFQName(ns, sub, "works_run_total"),
			"Works whose function the worker called, including ones that panicked.",
			wl, cl),
		canc: prometheus.NewDesc(prometheus.BuildFQName(ns, sub, "works_cancelled_total"),
			"Works the worker skipped because they were cancelled before starting.",
			wl, cl),
		pan: prometheus.NewDesc(prometheus.BuildFQName(ns, sub, "panics_total"),
			"Works that panicked on the worker and were recovered.",
			wl, cl),
		batch: prometheus.NewDesc(prometheus.BuildFQName(ns, sub, "batches_total"),
			"Batches the worker took (fixed pool: whole private list; shared pool: one work).",
			wl, cl),
		size: prometheus.NewDesc(prometheus.BuildFQName(ns, sub, "batch_size"),
			"Works per batch taken by the pool's workers.",
			nil, cl),
	}
}

// Describe sends the descriptors of all metrics of the collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.depth, c.run, c.canc, c.pan, c.batch, c.size} {
		ch <- d
	}
}

// Collect reads p.Stats() once and sends the metrics.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.p.Stats()
	var (
		sum     uint64
		buckets [NumBatchBuckets]uint64
	)
	if s.Shared {
		ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(s.Queued), "shared")
	}
	for i, w := range s.Workers {
		id := strconv.Itoa(i)
		if !s.Shared {
			ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(w.QueueDepth), id)
		}
		ch <- prometheus.MustNewConstMetric(c.run, prometheus.CounterValue, float64(w.Run), id)
		ch <- prometheus.MustNewConstMetric(c.canc, prometheus.CounterValue, float64(w.Cancelled), id)
		ch <- prometheus.MustNewConstMetric(c.pan, prometheus.CounterValue, float64(w.Panics), id)
		ch <- prometheus.MustNewConstMetric(c.batch, prometheus.CounterValue, float64(w.Batches), id)
		sum += w.BatchSizeSum
		for b, n := range w.BatchSizes {
			buckets[b] += n
		}
	}
	// Cumulative buckets; the last (+Inf) bucket is implied by count. The
	// count is taken from the buckets so that the histogram is consistent
	// even though Batches and BatchSizes are read at different instants.
	cum := make(map[float64]uint64, NumBatchBuckets-1)
	var acc uint64
	for b := 0; b < NumBatchBuckets-1; b++ {
		acc += buckets[b]
		cum[BatchBucketUpperBound(b)] = acc
	}
	count := acc + buckets[NumBatchBuckets-1]
	ch <- prometheus.MustNewConstHistogram(c.size, count, float64(sum), cum)
}
