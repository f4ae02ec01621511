package uringrt

import (
	"runtime"
	"runtime/metrics"
	"time"
)

// Stranded goroutines: a locked loop that woke goroutines yields its P
// (Gosched) so they run on another thread, and gets the P back when that
// thread's scheduler picks the loop's goroutine from the global run queue,
// which it may do while goroutines are still queued on the P: with a
// server like HTTP/2, where a woken frame reader wakes the serve loop,
// which starts a handler, which wakes a writer, there usually are. The
// loop then blocks in io_uring_enter holding the P in its system call, and
// those goroutines wait until sysmon takes the P back (20 us to 10 ms
// later) while the CPU idles: under h2load, net/http over TLS on the locked
// loop left a third of the CPU idle (BENCHMARKS.md).
//
// So before a blocking wait that follows such a hand-off, the loop asks the
// scheduler whether any goroutine is runnable (runtime/metrics'
// /sched/goroutines/runnable, Go 1.26+: the Ps' run queues read under the
// scheduler lock, no allocation) and, if so, yields once more. Once, not
// until none is left: each yield is two thread switches, and with 1000
// echo connections up to four yields cost 8 % of net.Conn's msgs/s where
// one costs nothing measurable (while taking HTTP/2 from 0.74x to 0.90x Go
// net's requests/s; four took it to 0.96-0.99x). Only with GOMAXPROCS 1:
// with more Ps an idle one steals queued goroutines itself, and a count
// that includes other Ps' queues would make the loop yield for work it
// cannot help.

// runnableProbe reads the number of runnable goroutines.
type runnableProbe struct {
	s []metrics.Sample
}

// newRunnableProbe returns nil on a Go without the metric (the loop then
// never yields for it).
func newRunnableProbe() *runnableProbe {
	p := &runnableProbe{s: []metrics.Sample{{Name: "/sched/goroutines/runnable:goroutines"}}}
	metrics.Read(p.s)
	if p.s[0].Value.Kind() != metrics.KindUint64 {
		return nil
	}
	return p
}

// runnable reports whether any goroutine is runnable (queued, not running).
func (p *runnableProbe) runnable() bool {
	metrics.Read(p.s)
	return p.s[0].Value.Uint64() > 0
}

// yieldStranded yields the loop's P once if the loop got it back from a
// hand-off (handedOff) with goroutines still runnable, before it blocks in
// the kernel; it reports whether it yielded (the caller then re-checks for
// requests and CQEs that came meanwhile).
func (l *loop) yieldStranded() bool {
	if l.runq == nil || !l.handedOff || runtime.GOMAXPROCS(0) != 1 || !l.runq.runnable() {
		return false
	}
	runtime.Gosched()
	return true
}

// Fairness under sustained load: a locked loop that keeps finding work
// never blocks in a wait that lets Go's scheduler take its P (its
// submissions are raw system calls, netpoll Ring.SetRawSubmitMax), so the
// goroutines queued on that P (woken by a channel, a handler's go
// statement, or injected by sysmon's network poll) would run only when
// sysmon preempts the loop, every 10 ms. So a locked loop that has held
// its P for fairYieldEvery yields it once if any goroutine is runnable
// (the probe is a 44 ns runtime/metrics read; a yield, two thread
// switches). Expired timers and goroutines still parked in Go's own
// netpoller (a std-net /metrics listener) are not runnable until the
// scheduler runs, so they wait for sysmon, up to 10 ms, as behind any
// CPU-bound goroutine with GOMAXPROCS 1. During a callback echo of 10
// connections x 4 KiB (depth 8), /healthz answered in 0.36 ms (median) with every submission through
// Syscall6, 4.2 ms with raw ones and no yield, about 1 ms with it.
const fairYieldEvery = 500 * time.Microsecond

// yieldFair yields the loop's P once if it has held it for fairYieldEvery
// with goroutines runnable. waited reports that this iteration made a wait
// that could sleep with the P released (a Syscall6 wait, netpoll
// Stats.Waits), begun at waitStart; only one that lasted past sysmon's
// first tick (20 us), when sysmon may have handed the P on, restarts the
// clock. Unlike yieldStranded it yields with any GOMAXPROCS: when every P
// runs a busy loop (Loops = GOMAXPROCS, the default), no idle P steals the
// queued goroutines, so only a loop's yield runs them.
func (l *loop) yieldFair(waitStart time.Time, waited bool) {
	if l.runq == nil { // a loop that parks in Go's netpoller, or no probe on this Go
		return
	}
	now := time.Now()
	if waited && now.Sub(waitStart) >= sysmonTick {
		l.lastYield = now
		return
	}
	if now.Sub(l.lastYield) < fairYieldEvery {
		return
	}
	l.lastYield = now
	if l.runq.runnable() {
		runtime.Gosched()
	}
}

// sysmonTick is the shortest interval of Go's sysmon, which retakes a P
// from a system call that spans one of its ticks.
const sysmonTick = 20 * time.Microsecond
