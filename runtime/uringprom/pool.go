package uringprom

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/uringrt/uringrt/sched"
)

// NewPoolCollector returns a collector for a sched.Pool whose metrics
// carry the label pool=pool (keep it low-cardinality, e.g. "callbacks").
// Register one collector per pool, with distinct pool labels; a Runtime's
// own pool is in NewCollector as pool="workers". Every Collect calls
// p.Stats() once; nothing is recorded on the pool's hot path. Metrics:
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
// list). A pool that has not been given a work yet exports nothing, so an
// idle process's scrape does not carry a series per worker of a pool it
// never uses (a Runtime's pool serves only MayBlocker handlers and the
// blocking pollable policy).
func NewPoolCollector(p sched.Pool, pool string) prometheus.Collector {
	return &poolCollector{p: p, d: newPoolDescs(pool)}
}

type poolCollector struct {
	p sched.Pool
	d poolDescs
}

// Describe sends the descriptors of all metrics of the collector.
func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) { c.d.describe(ch) }

// Collect reads p.Stats() once and sends the metrics.
func (c *poolCollector) Collect(ch chan<- prometheus.Metric) { c.d.collect(ch, c.p.Stats()) }

// poolDescs are the descriptors of one pool's metrics.
type poolDescs struct {
	depth, run, canc, pan, batch, size *prometheus.Desc
}

func newPoolDescs(pool string) poolDescs {
	cl := prometheus.Labels{"pool": pool}
	wl := []string{"worker"}
	d := func(name, help string, labels []string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName("uringrt", "worker", name), help, labels, cl)
	}
	return poolDescs{
		depth: d("queue_depth", "Works handed to the worker and not yet finished (shared pools: works in the shared list or being run, worker=\"shared\").", wl),
		run:   d("works_run_total", "Works whose function the worker called, including ones that panicked.", wl),
		canc:  d("works_cancelled_total", "Works the worker skipped because they were cancelled before starting.", wl),
		pan:   d("panics_total", "Works that panicked on the worker and were recovered.", wl),
		batch: d("batches_total", "Batches the worker took (fixed pool: whole private list; shared pool: one work).", wl),
		size:  d("batch_size", "Works per batch taken by the pool's workers.", nil),
	}
}

func (d *poolDescs) describe(ch chan<- *prometheus.Desc) {
	for _, x := range []*prometheus.Desc{d.depth, d.run, d.canc, d.pan, d.batch, d.size} {
		ch <- x
	}
}

func (d *poolDescs) collect(ch chan<- prometheus.Metric, s sched.Stats) {
	if !poolUsed(s) {
		return
	}
	out := sink(ch)
	var (
		sum     uint64
		buckets [sched.NumBatchBuckets]uint64
	)
	if s.Shared {
		out.gauge(d.depth, float64(s.Queued), "shared")
	}
	for i, w := range s.Workers {
		id := strconv.Itoa(i)
		if !s.Shared {
			out.gauge(d.depth, float64(w.QueueDepth), id)
		}
		out.counter(d.run, w.Run, id)
		out.counter(d.canc, w.Cancelled, id)
		out.counter(d.pan, w.Panics, id)
		out.counter(d.batch, w.Batches, id)
		sum += w.BatchSizeSum
		for b, n := range w.BatchSizes {
			buckets[b] += n
		}
	}
	// Cumulative buckets; the last (+Inf) bucket is implied by count. The
	// count is taken from the buckets so that the histogram is consistent
	// even though Batches and BatchSizes are read at different instants.
	cum := make(map[float64]uint64, sched.NumBatchBuckets-1)
	var acc uint64
	for b := 0; b < sched.NumBatchBuckets-1; b++ {
		acc += buckets[b]
		cum[sched.BatchBucketUpperBound(b)] = acc
	}
	count := acc + buckets[sched.NumBatchBuckets-1]
	ch <- prometheus.MustNewConstHistogram(d.size, count, float64(sum), cum)
}

// poolUsed reports whether a work was ever given to the pool: one queued
// now, or one a worker took (run, cancelled or in a batch).
func poolUsed(s sched.Stats) bool {
	if s.Queued > 0 {
		return true
	}
	for _, w := range s.Workers {
		if w.QueueDepth > 0 || w.Run > 0 || w.Cancelled > 0 || w.Batches > 0 {
			return true
		}
	}
	return false
}
