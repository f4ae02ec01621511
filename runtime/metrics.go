package uringrt

import (
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// loopStats are one loop's counters. Each is written by its loop (or by the
// goroutines of that loop's connections) and read by Runtime.Stats
// (stats.go); nothing is shared across loops.
type loopStats struct {
	_                          [64]byte
	sqes, cqes, enters         atomic.Uint64
	cqOverflows, sqFull        atomic.Uint64
	pollArms                   atomic.Uint64
	enobufs                    atomic.Uint64
	retriedEAGAIN              atomic.Uint64
	lentBufs                   atomic.Uint64
	streamEnters               atomic.Uint64
	idlePollHits, idlePollMiss atomic.Uint64
	accepted, closed, rejected atomic.Uint64
	readBytes, writtenBytes    atomic.Uint64
	readInline, readPolled     atomic.Uint64
	writeInline, writePolled   atomic.Uint64
	acceptPollArmed            atomic.Uint64
	directSent, directRest     atomic.Uint64 // callback_direct.go: whole, and with a rest posted
	loopSent, loopRest         atomic.Uint64 // callback_loopsend.go: send(2)s from the loop that took something, and tries that left a rest for the ring
	lingers, lingersCut        atomic.Uint64 // callback_linger.go: closes that waited for the peer, and those the bound ended
	inflight                   atomic.Int64
	blockingWait               durHist
	_                          [64]byte
}

// hist is a histogram with power-of-two buckets 1, 2, 4, ... 1024, written
// by one goroutine and read by Runtime.Stats.
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

// snapshot reads h. The count is the sum of the buckets, so the
// cumulative buckets never exceed it even while the owner observes.
func (h *hist) snapshot() Histogram {
	out := Histogram{Bounds: make([]float64, 11), Cumulative: make([]uint64, 11)}
	var cum uint64
	for i := range out.Bounds {
		cum += h.buckets[i].Load()
		out.Bounds[i] = float64(int(1) << i)
		out.Cumulative[i] = cum
	}
	out.Count = cum + h.buckets[11].Load()
	out.Sum = float64(h.sum.Load())
	return out
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
// goroutine of the process, and it is read by Runtime.Stats.
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

// addTo adds h's counts and sum to dst.
func (h *durHist) addTo(dst *durHist) {
	for i := range h.buckets {
		dst.buckets[i].Add(h.buckets[i].Load())
	}
	dst.sumNs.Add(h.sumNs.Load())
}

// snapshot reads h in seconds, its count the sum of its buckets.
func (h *durHist) snapshot() Histogram {
	out := Histogram{Bounds: make([]float64, len(durBounds)), Cumulative: make([]uint64, len(durBounds))}
	var cum uint64
	for i, ub := range durBounds {
		cum += h.buckets[i].Load()
		out.Bounds[i] = float64(ub) / 1e9
		out.Cumulative[i] = cum
	}
	out.Count = cum + h.buckets[len(durBounds)].Load()
	out.Sum = float64(h.sumNs.Load()) / 1e9
	return out
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
	if !l.rt.metrics.Load() {
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
	if !l.rt.metrics.Load() {
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
	if !l.rt.metrics.Load() {
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

// acceptErrnos are the accept(2) failures an operator alerts on (out of
// descriptors or memory); they are exported at 0 before the first one so
// that the family exists and rate() works from the start.
var acceptErrnos = []syscall.Errno{unix.EMFILE, unix.ENFILE, unix.ENOBUFS, unix.ENOMEM}
