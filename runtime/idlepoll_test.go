package uringrt

import (
	"testing"
	"time"
)

// TestIdlePollEchoesAndSleeps: with Config.IdlePoll a callback echo is
// served by polls that found work (idle_polls_total{outcome="work"}), and a
// loop left idle goes back to sleeping in io_uring_enter instead of
// spinning: the poll times out (outcome="timeout") and the process burns
// well under the idle time in CPU.
func TestIdlePollEchoesAndSleeps(t *testing.T) {
	rt := newRT(t, Config{Loops: 1, Backend: BackendUring, LockedLoops: true, IdlePoll: 200 * time.Microsecond})
	addr := echoServer(t, rt, "callback")
	cs, _ := echoTraffic(t, addr, 8, 50, 12)
	defer closeAll(cs)

	if got := rt.Stats().Loops[0].IdlePollWork; got == 0 {
		t.Errorf("IdlePollWork = 0 after 400 echoes, want > 0")
	}

	// Idle with 8 open connections: each gap costs at most IdlePoll of
	// CPU, then the loop sleeps.
	const idle = 400 * time.Millisecond
	before := cpuTime()
	time.Sleep(idle)
	used := cpuTime() - before
	if used > idle/2 {
		t.Errorf("process used %v of CPU in %v idle: the loop did not go back to sleep", used, idle)
	}
	// The loop went to sleep through polls that timed out (after the
	// traffic; an empty 1 s wait is then not followed by another poll).
	if got := rt.Stats().Loops[0].IdlePollTimeout; got == 0 {
		t.Errorf("IdlePollTimeout = 0 after %v idle", idle)
	}
}

// TestDedicatedLoopsEchoAndIdle: with DedicatedLoops a callback echo is
// served, goroutines still run beside a loop that keeps its P (a timer
// fires on time within Go's 10 ms preemption bound, give or take the
// machine), and an idle loop does not burn CPU.
func TestDedicatedLoopsEchoAndIdle(t *testing.T) {
	rt := newMetricsRT(t, Config{Loops: 1, Backend: BackendUring, LockedLoops: true, DedicatedLoops: true, IdlePoll: 20 * time.Microsecond})
	addr := echoServer(t, rt, "callback")
	stop := make(chan struct{})
	late := make(chan time.Duration, 1)
	go func() { // a goroutine beside the loop: how late do its timers fire?
		var worst time.Duration
		for {
			select {
			case <-stop:
				late <- worst
				return
			default:
			}
			start := time.Now()
			time.Sleep(time.Millisecond)
			worst = max(worst, time.Since(start)-time.Millisecond)
		}
	}()
	cs, _ := echoTraffic(t, addr, 16, 100, 12)
	close(stop)
	w := <-late
	t.Logf("worst timer lateness beside a dedicated loop under load: %v", w)
	if w > 250*time.Millisecond {
		t.Errorf("a 1 ms timer fired %v late: the loop starved other goroutines", w)
	}
	defer closeAll(cs)
	const idle = 400 * time.Millisecond
	before := cpuTime()
	time.Sleep(idle)
	if used := cpuTime() - before; used > idle/2 {
		t.Errorf("process used %v of CPU in %v idle", used, idle)
	}
}

// TestIdlePollLongIdleDoesNotSpin: with the largest IdlePoll (1 s) a loop
// left idle sleeps through its 1 s idle waits instead of polling after
// each one (which would burn half a core).
func TestIdlePollLongIdleDoesNotSpin(t *testing.T) {
	rt := newMetricsRT(t, Config{Loops: 1, Backend: BackendUring, LockedLoops: true, IdlePoll: time.Second})
	addr := echoServer(t, rt, "callback")
	cs, _ := echoTraffic(t, addr, 2, 5, 12)
	defer closeAll(cs)
	time.Sleep(1200 * time.Millisecond) // the poll after the traffic, then one idle wait
	const idle = 2200 * time.Millisecond
	before := cpuTime()
	time.Sleep(idle)
	if used := cpuTime() - before; used > idle/4 {
		t.Errorf("process used %v of CPU in %v idle: the loop polls after every idle wait", used, idle)
	}
}
