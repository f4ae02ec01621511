package main

import "math/bits"

// Log-linear histogram of durations in nanoseconds: values below 2*histSub
// are exact; above, every power of two is split into histSub linear
// buckets, so a bucket's width is at most 1/histSub (3.1%) of its values.
const (
	histSubBits = 5
	histSub     = 1 << histSubBits
	histMaxBits = 38 // values are clamped to 2^38-1 ns (about 275 s)
	histBuckets = (histMaxBits-histSubBits)*histSub + histSub
)

// histogram counts values in log-linear buckets. It is owned by one
// goroutine while recording (no locks, no allocation) and merged at the end.
type histogram struct {
	counts [histBuckets]uint64
	max    int64  // the largest value recorded, exact
	n      uint64 // set by merge; record leaves it alone to touch one line
}

// bucketOf returns the bucket index of v.
func bucketOf(v int64) int {
	if v < 0 {
		v = 0
	}
	u := uint64(v)
	if u >= 1<<histMaxBits {
		u = 1<<histMaxBits - 1
	}
	k := bits.Len64(u)
	if k <= histSubBits+1 {
		return int(u)
	}
	shift := k - (histSubBits + 1)
	return (shift+1)*histSub + int(u>>shift) - histSub
}

// bucketMax returns the largest value that falls in bucket i.
func bucketMax(i int) int64 {
	if i < 2*histSub {
		return int64(i)
	}
	shift := i/histSub - 1
	low := uint64(i%histSub+histSub) << shift
	return int64(low + 1<<shift - 1)
}

// record adds one value.
func (h *histogram) record(v int64) {
	h.counts[bucketOf(v)]++
	if v > h.max {
		h.max = v
	}
}

// merge adds the counts of o to h.
func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
		h.n += c
	}
	h.max = max(h.max, o.max)
}

// quantile returns the upper bound of the bucket holding the value of rank
// ceil(q*n) (the q-quantile, q in [0,1]), but never more than the largest
// value recorded, or 0 for an empty histogram.
func (h *histogram) quantile(q float64) int64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.999999999)
	if rank < 1 {
		rank = 1
	}
	if rank > h.n {
		rank = h.n
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(bucketMax(i), max(h.max, 0))
		}
	}
	return min(bucketMax(histBuckets-1), max(h.max, 0))
}
