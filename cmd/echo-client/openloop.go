package main

import (
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Open loop (-rate): messages are due at a fixed total rate whatever the
// server does, as wrk2 and ../shared/bench's echoload -r send them. Message
// k of the run (k = 0, 1, ...) is due at start + k/rate and belongs to
// connection k mod conns, so each connection sends evenly every conns/rate
// seconds and connection i is shifted by i/rate from connection 0. A
// message is released (handed to its connection) once due; the connection
// sends it at once unless -depth of its messages are already on the wire,
// and then as soon as an echo makes room. Latency counts from the due time,
// so time a message spends waiting behind a slow server, or behind a client
// that fell behind, is counted (coordinated omission corrected).

// schedule is the open-loop timetable.
type schedule struct {
	start int64   // due time of message 0, ns on runState's clock
	gap   float64 // ns between two messages of the run
	conns uint64
}

func newSchedule(start int64, rate float64, conns int) *schedule {
	return &schedule{start: start, gap: 1e9 / rate, conns: uint64(conns)}
}

// due returns the due time of message k of the run.
func (s *schedule) due(k uint64) int64 { return s.start + int64(float64(k)*s.gap) }

// dueOf returns the due time of message seq of connection id.
func (s *schedule) dueOf(id int, seq uint64) int64 { return s.due(seq*s.conns + uint64(id)) }

// lateness counts the messages released behind schedule. It has one
// writer (the loop, or the net engine's pacer); the summary reads it after
// that writer stopped.
type lateness struct {
	after int64 // -late-after in ns
	late  uint64
	max   int64
}

// note records that a message due at due was released at now; only those
// released in the measured window count.
func (l *lateness) note(now, due int64, measuring bool) {
	if !measuring {
		return
	}
	d := now - due
	if d > l.after {
		l.late++
	}
	l.max = max(l.max, d)
}

// minPace is the shortest sleep of the pacer: it keeps a pacer that cannot
// keep up from spinning, and bounds its wake-ups to 20,000 a second (the
// due times stay exact: a wake-up releases every message due by then).
const minPace = 50 * time.Microsecond

// maxPace bounds one sleep of the pacer, so it notices stop.
const maxPace = 10 * time.Millisecond

// pace is the pacer: it runs on a thread of its own, sleeping until the
// next unreleased message (index next()) is due and then calling fire with
// the time, until stop is set. Go's timers wake about 1 ms late when the
// process is otherwise idle; clock_nanosleep on a locked thread with a
// 1 us timer slack wakes within tens of microseconds, which is what keeps
// the client's own lateness out of the latencies it measures.
func pace(s *runState, sched *schedule, next func() uint64, fire func(now int64), stop *atomic.Bool) {
	runtime.LockOSThread() // never unlocked: the thread, with its slack, exits with the goroutine
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1000, 0, 0, 0)
	for !stop.Load() {
		now := s.now()
		wait := time.Duration(sched.due(next()) - now)
		if wait <= 0 {
			fire(now)
			wait = minPace
		}
		ts := unix.NsecToTimespec(int64(min(max(wait, minPace), maxPace)))
		_ = unix.Nanosleep(&ts, nil)
	}
}

// dueBy returns how many messages are due at or before t.
func (s *schedule) dueBy(t int64) uint64 {
	if t < s.start {
		return 0
	}
	k := uint64(float64(t-s.start) / s.gap)
	for k > 0 && s.due(k) > t { // float rounding: due(k) must be <= t
		k--
	}
	for s.due(k+1) <= t {
		k++
	}
	return k + 1
}

// addOpen adds the open-loop figures of the window [start, end] to sum and
// says on stderr when the client fell behind its own schedule (then the
// latencies count that delay too, and the server was offered less than
// -rate at the due times).
func (sum *summary) addOpen(cfg config, s *runState, sched *schedule, late *lateness, start, end sample, logf func(string, ...any)) {
	o := &OpenLoop{Rate: cfg.rate, Late: late.late, LateMaxUs: usOf(max(late.max, 0))}
	if secs := end.at.Sub(start.at).Seconds(); secs > 0 {
		o.SentRate = int64(float64(end.sent-start.sent)/secs + 0.5)
	}
	if sched != nil {
		if due := sched.dueBy(int64(end.at.Sub(s.base))); due > end.msgs {
			o.Backlog = due - end.msgs
		}
	}
	sum.OpenLoop = o
	if o.Late > 0 {
		logf("the client fell behind its schedule: %d messages sent more than %v late (at most %d us); their latency includes it",
			o.Late, cfg.lateAfter, o.LateMaxUs)
	}
}
