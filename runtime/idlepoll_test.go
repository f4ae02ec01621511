package runtime

import (
	"fmt"
	"testing"
	"time"
)

// TestIdlePollEchoesAndSleeps: with Config.IdlePoll a callback echo is
// served by polls that found work (idle_polls_total{outcome="work"}), and a
// loop left idle goes back to sleeping in io_uring_enter instead of
// spinning: the poll times out (outcome="timeout") and the process burns
// well under the idle time in CPU.
func TestIdlePollEchoesAndSleeps(t *testing.T) {
	rt, reg := newMetricsRT(t, Config{Loops: 1, Backend: BackendUring, IdlePoll: 200 * time.Microsecond})
	addr := echoServer(t, rt, "callback")
	cs, _ := echoTraffic(t, addr, 8, 50, 12)
	defer closeAll(cs)

	f := gather(t, reg)
	if got := f.sum("uringrt_idle_polls_total", "outcome", "work"); got == 0 {
		t.Errorf(`idle_polls_total{outcome="work"} = 0 after 400 echoes, want > 0`)
	}
	timeouts := f.sum("uringrt_idle_polls_total", "outcome", "timeout")

	// Idle with 8 open connections: each gap costs at most IdlePoll of
	// CPU, then the loop sleeps.
	const idle = 400 * time.Millisecond
	before := cpuTime()
	time.Sleep(idle)
	used := cpuTime() - before
	if used > idle/2 {
		t.Errorf("process used %v of CPU in %v idle: the loop did not go back to sleep", used, idle)
	}
	eventually(t, 5*time.Second, func() (bool, string) {
		got := gather(t, reg).sum("uringrt_idle_polls_total", "outcome", "timeout")
		return got > timeouts, fmt.Sprintf(`idle_polls_total{outcome="timeout"} = %v, want > %v`, got, timeouts)
	})
}
