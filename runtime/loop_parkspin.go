package uringrt

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// A loop that waits in Go's netpoller (the default) may poll its ring for
// a short while before it parks (Config.ParkPoll), when the process is
// busy: parking hands the thread to the kernel, and on a machine whose
// idle CPU halts, the next completion then waits for that CPU to wake.

// parkPoll is a loop's state for its polls before parking.
type parkPoll struct {
	since  time.Time     // start of the current utilization window
	cpu    time.Duration // the process's CPU time at since
	polled int64         // Runtime.parkPolled at since
	util16 int           // the process's recent utilization, percent x 16
	ran    time.Duration // time other goroutines ran inside the current poll
}

// parkPollWindow is how often a loop reads the process's CPU time (one
// clock_gettime(2) system call) to update the utilization that gates its
// polls; parkPollTau is the utilization's time constant.
const (
	parkPollWindow = time.Millisecond
	parkPollTau    = 4 * time.Millisecond
)

// parkPollMinUtil is the utilization (percent of GOMAXPROCS, not counting
// the polls themselves) from which loops poll before parking.
var parkPollMinUtil = 50

// processCPU is the CPU time of the whole process (all threads).
func processCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// noteUtil folds the window that ends at now into the utilization.
func (l *loop) noteUtil(now time.Time) {
	p := &l.park
	cpu, polled := processCPU(), l.rt.parkPolled.Load()
	if !p.since.IsZero() {
		wall := now.Sub(p.since)
		busy := cpu - p.cpu - time.Duration(polled-p.polled)
		u := int(busy * 100 * 16 / (wall * time.Duration(runtime.GOMAXPROCS(0))))
		w := min(wall, parkPollTau)
		p.util16 += int(time.Duration(u-p.util16) * w / parkPollTau)
	}
	p.since, p.cpu, p.polled = now, cpu, polled
}

// pollBeforePark polls, for up to Config.ParkPoll, the CQ, the kernel's
// flags for pending task_work and overflowed CQEs and the request queue,
// yielding the P between checks (runtime.Gosched) so that the goroutines
// sharing it run, and reports whether work appeared (the loop then flushes
// it with a nonblocking enter instead of parking). It polls only while
// the process's recent utilization is at least parkPollMinUtil percent:
// an idle or lightly loaded server parks at once.
func (l *loop) pollBeforePark() bool {
	d := l.rt.cfg.ParkPoll
	if d <= 0 || l.stopping || l.waitedEmpty {
		return false
	}
	p := &l.park
	start := time.Now()
	if start.Sub(p.since) >= parkPollWindow {
		l.noteUtil(start)
	}
	if p.util16 < parkPollMinUtil*16 {
		return false
	}
	if l.ring.SQSpace() < l.ring.SQEntries() {
		// What flushCB prepared goes in before the loop polls for its
		// completions.
		if _, err := l.ring.Submit(); err != nil {
			l.enterError(err)
			return true
		}
	}
	p.ran = 0
	start = time.Now() // the submission above was work, not polling
	last := start
	for {
		// With COOP_TASKRUN a completion's task_work runs on this
		// thread's next system call; IORING_SQ_TASKRUN says one is
		// pending, and the nonblocking enter that follows runs it.
		if l.ring.CQPending() || l.posted.Load() {
			l.endPoll(start, true)
			return true
		}
		now := time.Now()
		if it := now.Sub(last); it > parkPollRan {
			p.ran += it // other goroutines ran: not time spent polling
		}
		last = now
		if now.Sub(start)-p.ran >= d {
			l.endPoll(start, false)
			return false
		}
		runtime.Gosched()
	}
}

// parkPollRan: a yield that took longer ran other goroutines.
const parkPollRan = time.Microsecond

func (l *loop) endPoll(start time.Time, hit bool) {
	spent := time.Since(start) - l.park.ran
	l.rt.parkPolled.Add(int64(spent))
	if hit {
		l.stats.idlePollHits.Add(1)
	} else {
		l.stats.idlePollMiss.Add(1)
	}
}
