package uringrt

import (
	"testing"
	"time"
)

// withParkPollMinUtil sets the utilization from which loops poll before
// parking for the length of t.
func withParkPollMinUtil(t *testing.T, pct int) {
	old := parkPollMinUtil
	parkPollMinUtil = pct
	t.Cleanup(func() { parkPollMinUtil = old })
}

// TestParkPollEngagesAndStopsWhenIdle: a default loop (parked in Go's
// netpoller) whose process is busy serves a callback echo through polls
// that found work, and once idle stops polling: over a second idle the
// process burns next to no CPU and the loop polls at most once more.
func TestParkPollEngagesAndStopsWhenIdle(t *testing.T) {
	withParkPollMinUtil(t, 0) // every gap counts as busy: the worst case for idling
	rt := newRT(t, Config{Loops: 1, Backend: BackendUring})
	if rt.loops[0].gw == nil {
		t.Skip("the ring fd is not pollable by Go's netpoller here: locked loop")
	}
	addr := echoServer(t, rt, "callback")
	cs, _ := echoTraffic(t, addr, 8, 200, 12)
	defer closeAll(cs)
	st := rt.Stats().Loops[0]
	if st.IdlePollWork == 0 {
		t.Fatalf("IdlePollWork = 0 after 1600 echoes (timeouts %d): the loop never polled before parking", st.IdlePollTimeout)
	}
	time.Sleep(300 * time.Millisecond) // the poll after the traffic times out; the loop parks
	before, polls := cpuTime(), rt.Stats().Loops[0]
	const idle = time.Second
	time.Sleep(idle)
	used := cpuTime() - before
	after := rt.Stats().Loops[0]
	if used > idle/20 {
		t.Errorf("process used %v of CPU in %v idle: the loop kept polling", used, idle)
	}
	if n := after.IdlePollWork + after.IdlePollTimeout - polls.IdlePollWork - polls.IdlePollTimeout; n > 2 {
		t.Errorf("%d polls in %v idle, want at most 2", n, idle)
	}
}

// TestParkPollGatedByLoad: with the default utilization gate, a lightly
// loaded server (one echo every 2 ms) parks at once: its loop never polls.
func TestParkPollGatedByLoad(t *testing.T) {
	rt := newRT(t, Config{Loops: 1, Backend: BackendUring})
	if rt.loops[0].gw == nil {
		t.Skip("the ring fd is not pollable by Go's netpoller here: locked loop")
	}
	addr := echoServer(t, rt, "callback")
	cs, _ := echoTraffic(t, addr, 1, 1, 12)
	defer closeAll(cs)
	time.Sleep(50 * time.Millisecond) // past the window of the connection's setup
	before := rt.Stats().Loops[0]
	buf := make([]byte, 12)
	for i := 0; i < 200; i++ {
		time.Sleep(2 * time.Millisecond)
		if _, err := cs[0].Write(buf); err != nil {
			t.Fatal(err)
		}
		cs[0].SetReadDeadline(time.Now().Add(5 * time.Second))
		for got := 0; got < len(buf); {
			n, err := cs[0].Read(buf[got:])
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
	}
	after := rt.Stats().Loops[0]
	if n := after.IdlePollWork + after.IdlePollTimeout - before.IdlePollWork - before.IdlePollTimeout; n > 20 {
		t.Errorf("%d polls before parking for 200 echoes 2 ms apart, want (about) none: the gate let a lightly loaded loop poll", n)
	}
}

// TestParkPollOff: ParkPoll < 0 never polls.
func TestParkPollOff(t *testing.T) {
	withParkPollMinUtil(t, 0)
	rt := newRT(t, Config{Loops: 1, Backend: BackendUring, ParkPoll: -1})
	addr := echoServer(t, rt, "callback")
	cs, _ := echoTraffic(t, addr, 8, 100, 12)
	defer closeAll(cs)
	if st := rt.Stats().Loops[0]; st.IdlePollWork+st.IdlePollTimeout != 0 {
		t.Errorf("ParkPoll -1: %d polls, want none", st.IdlePollWork+st.IdlePollTimeout)
	}
}

// TestParkPollConfig: ParkPoll over 1ms is refused; 0 is the default.
func TestParkPollConfig(t *testing.T) {
	if _, err := New(Config{ParkPoll: 2 * time.Millisecond}); err == nil {
		t.Error("ParkPoll 2ms accepted")
	}
	rt := newRT(t, Config{Loops: 1})
	if rt.cfg.ParkPoll != DefaultParkPoll {
		t.Errorf("ParkPoll = %v, want DefaultParkPoll %v", rt.cfg.ParkPoll, DefaultParkPoll)
	}
}
