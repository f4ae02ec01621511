package sched

import (
	"math"
	"math/bits"
	"sync/atomic"
)

// NumBatchBuckets is the number of batch-size buckets in WorkerStats: upper
// bounds 1, 2, 4, ..., 1024 and a last one for larger batches.
const NumBatchBuckets = 12

// BatchBucketUpperBound returns the inclusive upper bound of batch-size
// bucket i (0 <= i < NumBatchBuckets): 1<<i, or +Inf for the last bucket.
func BatchBucketUpperBound(i int) float64 {
	if i >= NumBatchBuckets-1 {
		return math.Inf(1)
	}
	return float64(uint64(1) << uint(i))
}

// batchBucket returns the index of the bucket that counts a batch of n works.
func batchBucket(n int) int {
	if n <= 1 {
		return 0
	}
	b := bits.Len(uint(n - 1))
	if b > NumBatchBuckets-1 {
		b = NumBatchBuckets - 1
	}
	return b
}

// Stats is a snapshot of a pool's counters, as returned by Pool.Stats.
// Counters only grow; the snapshot of different workers is not taken at one
// instant.
type Stats struct {
	// Workers holds one entry per worker, in worker order.
	Workers []WorkerStats
	// Queued is the number of works submitted and not yet finished or
	// skipped as cancelled (FixedPool: the sum of the workers'
	// QueueDepth; SharedPool: the length of the shared list plus the
	// works its workers are running).
	Queued int64
	// Shared is true for a SharedPool: its workers have no private list
	// and their QueueDepth is always 0; Queued is the shared list and
	// the works being run.
	Shared bool
}

// WorkerStats are the counters of one worker.
type WorkerStats struct {
	// QueueDepth is the number of works handed to this worker (its private
	// list plus the unfinished rest of the batch it runs), in works.
	// Always 0 on a SharedPool.
	QueueDepth int64
	// Run counts works whose function was called (including ones that
	// panicked).
	Run uint64
	// Cancelled counts works this worker skipped because they had been
	// cancelled (by Cancel or Close with CancelQueued).
	Cancelled uint64
	// Panics counts works that panicked and were recovered.
	Panics uint64
	// Batches counts the batches taken: one per swap of the private list on
	// a FixedPool, one per work on a SharedPool.
	Batches uint64
	// BatchSizeSum is the sum of the sizes of all batches, in works.
	BatchSizeSum uint64
	// BatchSizes counts batches per size bucket (not cumulative); see
	// BatchBucketUpperBound for the bounds.
	BatchSizes [NumBatchBuckets]uint64
}

// counts are a worker's counters as the worker itself keeps them (plain
// fields: only the worker goroutine touches them).
type counts struct {
	run, cancelled, panics, batches, batchSum uint64
	sizes                                     [NumBatchBuckets]uint64
}

// cacheLine is the padding unit keeping one worker's hot fields off the
// lines of another (128: adjacent-line prefetch on x86, line size on some arm64).
const cacheLine = 128

// pubCounts are the published copy of counts: written only by the worker
// (atomic stores, no read-modify-write), read by Stats. Padded on both sides
// so no other worker's or submitter's field shares its lines.
type pubCounts struct {
	_                                         [cacheLine]byte
	run, cancelled, panics, batches, batchSum atomic.Uint64
	sizes                                     [NumBatchBuckets]atomic.Uint64
	_                                         [cacheLine]byte
}

// addBatch records a batch of n works in the worker-owned counters.
func (c *counts) addBatch(n int) int {
	b := batchBucket(n)
	c.batches++
	c.batchSum += uint64(n)
	c.sizes[b]++
	return b
}

// publish copies the worker-owned counters to pub. bucket is the only size
// bucket that changed since the last publish, or -1 for all of them.
func (p *pubCounts) publish(c *counts, bucket int) {
	p.run.Store(c.run)
	p.cancelled.Store(c.cancelled)
	p.panics.Store(c.panics)
	p.batches.Store(c.batches)
	p.batchSum.Store(c.batchSum)
	if bucket >= 0 {
		p.sizes[bucket].Store(c.sizes[bucket])
		return
	}
	for i := range c.sizes {
		p.sizes[i].Store(c.sizes[i])
	}
}

// snapshot reads the published counters.
func (p *pubCounts) snapshot() WorkerStats {
	s := WorkerStats{
		Run:          p.run.Load(),
		Cancelled:    p.cancelled.Load(),
		Panics:       p.panics.Load(),
		Batches:      p.batches.Load(),
		BatchSizeSum: p.batchSum.Load(),
	}
	for i := range p.sizes {
		s.BatchSizes[i] = p.sizes[i].Load()
	}
	return s
}
