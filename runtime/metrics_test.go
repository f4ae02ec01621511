package uringrt

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/uringrt/uringrt/runtime/experiment"
)

// TestMetricsCallbackEcho checks that the counters move by what a known
// number of echoes through the callback API implies.
func TestMetricsCallbackEcho(t *testing.T) {
	const conns, msgs, size = 8, 25, 12
	rt := newMetricsRT(t, Config{Loops: 2})
	addr := echoServer(t, rt, "callback")
	before := rt.Stats()
	loopSent0, _ := loopSendCounts(rt)
	cs, sent := echoTraffic(t, addr, conns, msgs, size)

	eventually(t, 5*time.Second, func() (bool, string) {
		s := rt.Stats()
		r, w := loopSum(s, func(l *LoopStats) uint64 { return l.ReadBytes }), loopSum(s, func(l *LoopStats) uint64 { return l.WrittenBytes })
		return r == uint64(sent) && w == uint64(sent),
			fmt.Sprintf("ReadBytes=%v WrittenBytes=%v, want both %d", r, w, sent)
	})
	s := rt.Stats()
	for _, c := range []struct {
		name string
		f    func(*LoopStats) uint64
		min  uint64
	}{
		{"CQEsReaped", func(l *LoopStats) uint64 { return l.CQEsReaped }, conns * msgs},
		{"SQEsSubmitted", func(l *LoopStats) uint64 { return l.SQEsSubmitted }, 1},
		{"Enters", func(l *LoopStats) uint64 { return l.Enters }, 1},
		{"CQEsPerEnter.Count", func(l *LoopStats) uint64 { return l.CQEsPerEnter.Count }, 1},
		{"TaskworkBatch.Count", func(l *LoopStats) uint64 { return l.TaskworkBatch.Count }, 1},
	} {
		if got := loopSum(s, c.f) - loopSum(before, c.f); got < c.min {
			t.Errorf("%s moved by %v, want >= %v", c.name, got, c.min)
		}
	}
	// One send per echo: a send SQE, or a send(2) from the loop
	// (callback_loopsend.go), which submits none.
	loopSent, _ := loopSendCounts(rt)
	if got := loopSum(s, func(l *LoopStats) uint64 { return l.SQEsSubmitted }) - loopSum(before, func(l *LoopStats) uint64 { return l.SQEsSubmitted }) + loopSent - loopSent0; got < conns*msgs {
		t.Errorf("send SQEs and loop sends moved by %v, want >= %v", got, conns*msgs)
	}
	if got := loopSum(s, func(l *LoopStats) uint64 { return l.Accepted }); got != conns {
		t.Errorf("Accepted = %v, want %d", got, conns)
	}
	if got := activeConns(rt); got != conns {
		t.Errorf("active = %v, want %d", got, conns)
	}
	if s.Backend != BackendUring || s.SetupFlags == "none" || s.Kernel == "" {
		t.Errorf("Backend %v, SetupFlags %q, Kernel %q: want uring, the rings' flags and a release", s.Backend, s.SetupFlags, s.Kernel)
	}
	checkHistograms(t, s)

	closeAll(cs)
	eventually(t, 5*time.Second, func() (bool, string) {
		cl := loopSum(rt.Stats(), func(l *LoopStats) uint64 { return l.Closed })
		act := activeConns(rt)
		return cl == conns && act == 0, fmt.Sprintf("after close: Closed=%v active=%v, want %d and 0", cl, act, conns)
	})
}

// TestMetricsConnEcho does the same through net.Conn under each pollable
// policy, where reads and writes are pollable requests with an outcome.
func TestMetricsConnEcho(t *testing.T) {
	const conns, msgs, size = 6, 20, 12
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"hybrid", Config{Loops: 2, Switches: experiment.Switches{LoopReadiness: true}}},
		{"netpoll", Config{Loops: 2, Switches: experiment.Switches{NetpollReadiness: true}}},
		{"ring", Config{Loops: 1, Switches: experiment.Switches{Pollable: experiment.PollRing}}},
		{"blocking", Config{Loops: 1, Workers: 4, Switches: experiment.Switches{Pollable: experiment.PollBlocking}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newMetricsRT(t, tc.cfg)
			addr := echoServer(t, rt, "conn")
			cs, sent := echoTraffic(t, addr, conns, msgs, size)
			eventually(t, 5*time.Second, func() (bool, string) {
				s := rt.Stats()
				r, w := loopSum(s, func(l *LoopStats) uint64 { return l.ReadBytes }), loopSum(s, func(l *LoopStats) uint64 { return l.WrittenBytes })
				return r == uint64(sent) && w == uint64(sent),
					fmt.Sprintf("ReadBytes=%v WrittenBytes=%v, want both %d", r, w, sent)
			})
			s := rt.Stats()
			armed := loopSum(s, func(l *LoopStats) uint64 { return l.ReadPolled })
			reads := armed + loopSum(s, func(l *LoopStats) uint64 { return l.ReadInline })
			if reads < conns*msgs {
				t.Errorf("reads %v (inline + polled), want >= %d (one read per echoed message)", reads, conns*msgs)
			}
			writeInline := loopSum(s, func(l *LoopStats) uint64 { return l.WriteInline })
			if w := writeInline + loopSum(s, func(l *LoopStats) uint64 { return l.WritePolled }); w < conns*msgs {
				t.Errorf("writes %v, want >= %d", w, conns*msgs)
			}
			switch tc.cfg.Pollable {
			case experiment.PollHybrid:
				// Each echo's next Read finds nothing yet: EAGAIN, poll arm.
				if armed == 0 {
					t.Error("hybrid: no read was poll_armed")
				}
				if writeInline == 0 {
					t.Error("hybrid: no write was done inline")
				}
				// Readers wait on the loop's POLLIN, or in Go's netpoller,
				// which arms nothing on the ring (small writes never wait).
				arms := loopSum(s, func(l *LoopStats) uint64 { return l.PollArms })
				if tc.cfg.LoopReadiness && arms == 0 {
					t.Error("hybrid: PollArms did not move")
				}
				if tc.cfg.NetpollReadiness && arms != 0 {
					t.Errorf("netpoll: PollArms = %d, want 0", arms)
				}
			case experiment.PollRing:
				if armed != reads {
					t.Errorf("ring: %v of %v reads poll_armed, want all", armed, reads)
				}
			case experiment.PollBlocking:
				if n := s.BlockingWait.Count; n < conns*msgs {
					t.Errorf("BlockingWait count = %v, want >= %d", n, conns*msgs)
				}
				var run uint64
				for _, w := range s.Workers.Workers {
					run += w.Run
				}
				if run < conns*msgs {
					t.Errorf("worker pool ran %v works, want >= %d", run, conns*msgs)
				}
			}
			if got := loopSum(s, func(l *LoopStats) uint64 { return l.Accepted }); got != conns {
				t.Errorf("Accepted = %v, want %d", got, conns)
			}
			checkHistograms(t, s)
			closeAll(cs)
			eventually(t, 5*time.Second, func() (bool, string) {
				cl := loopSum(rt.Stats(), func(l *LoopStats) uint64 { return l.Closed })
				act := activeConns(rt)
				return cl == conns && act == 0, fmt.Sprintf("after close: Closed=%v active=%v, want %d and 0", cl, act, conns)
			})
		})
	}
}

// TestMetricsOffCountsNothing: without Config.Metrics the I/O paths count
// nothing (no counting cost), while the always-kept counters still move.
func TestMetricsOffCountsNothing(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	cs, _ := echoTraffic(t, echoServer(t, rt, "conn"), 2, 5, 12)
	closeAll(cs)
	s := rt.Stats()
	for name, v := range map[string]uint64{
		"ReadBytes":     loopSum(s, func(l *LoopStats) uint64 { return l.ReadBytes }),
		"WrittenBytes":  loopSum(s, func(l *LoopStats) uint64 { return l.WrittenBytes }),
		"ReadInline":    loopSum(s, func(l *LoopStats) uint64 { return l.ReadInline + l.ReadPolled }),
		"SQEsSubmitted": loopSum(s, func(l *LoopStats) uint64 { return l.SQEsSubmitted }),
	} {
		if v != 0 {
			t.Errorf("%s = %d without Config.Metrics, want 0", name, v)
		}
	}
	if got := loopSum(s, func(l *LoopStats) uint64 { return l.Accepted }); got != 2 {
		t.Errorf("Accepted = %d, want 2 (kept without Config.Metrics)", got)
	}
}

// checkHistograms checks every histogram of s is well formed: bounds
// ascending, buckets cumulative, none above the count.
func checkHistograms(t *testing.T, s Stats) {
	t.Helper()
	check := func(name string, h Histogram) {
		if len(h.Bounds) != len(h.Cumulative) || len(h.Bounds) == 0 {
			t.Errorf("%s: %d bounds, %d counts", name, len(h.Bounds), len(h.Cumulative))
			return
		}
		for i := 1; i < len(h.Bounds); i++ {
			if h.Bounds[i] <= h.Bounds[i-1] || h.Cumulative[i] < h.Cumulative[i-1] {
				t.Errorf("%s: bucket le=%v count %d after le=%v count %d", name, h.Bounds[i], h.Cumulative[i], h.Bounds[i-1], h.Cumulative[i-1])
			}
		}
		if last := h.Cumulative[len(h.Cumulative)-1]; last > h.Count {
			t.Errorf("%s: last bucket %d > count %d", name, last, h.Count)
		}
	}
	for _, l := range s.Loops {
		check(fmt.Sprintf("loop %d CQEsPerEnter", l.ID), l.CQEsPerEnter)
		check(fmt.Sprintf("loop %d TaskworkBatch", l.ID), l.TaskworkBatch)
	}
	check("BlockingWait", s.BlockingWait)
	if s.BlockingWait.Count > 0 && s.BlockingWait.Sum <= 0 {
		t.Errorf("BlockingWait: %d samples summing to %v s", s.BlockingWait.Count, s.BlockingWait.Sum)
	}
}

func TestMetricsBlockingWaitHistogram(t *testing.T) {
	var h, all durHist
	for _, d := range []time.Duration{0, time.Microsecond, 3 * time.Microsecond, time.Millisecond, 2 * time.Second} {
		h.observe(d)
	}
	h.addTo(&all)
	h.addTo(&all) // two loops with the same samples
	hg := all.snapshot()
	if hg.Count != 10 {
		t.Errorf("count = %d, want 10", hg.Count)
	}
	if want := 2 * (2.001004); math.Abs(hg.Sum-want) > 1e-9 {
		t.Errorf("sum = %v s, want %v", hg.Sum, want)
	}
	want := map[float64]uint64{1e-6: 4, 5e-6: 6, 1e-3: 8, 1: 8}
	for i, ub := range hg.Bounds {
		if w, ok := want[ub]; ok && hg.Cumulative[i] != w {
			t.Errorf("le=%v: %d, want %d", ub, hg.Cumulative[i], w)
		}
	}
}

// TestMetricsStdBackend: BackendStd says so in Stats, with no loops.
func TestMetricsStdBackend(t *testing.T) {
	rt := newMetricsRT(t, Config{Backend: BackendStd})
	cs, _ := echoTraffic(t, echoServer(t, rt, "callback"), 2, 5, 12)
	closeAll(cs)
	s := rt.Stats()
	if s.Backend != BackendStd || len(s.Loops) != 0 || s.SetupFlags != "none" {
		t.Errorf("Backend %v, %d loops, SetupFlags %q; want std, 0, none", s.Backend, len(s.Loops), s.SetupFlags)
	}
	if len(s.AcceptErrors) != 0 {
		t.Errorf("AcceptErrors %v under BackendStd, want none", s.AcceptErrors)
	}
}

// TestMetricsRingPressure drives a tiny ring with a single provided buffer
// so the pressure counters move: SQ full (more arms than SQEs), CQ overflow
// (more completions at once than the CQ holds) and ENOBUFS (more recvs at
// once than buffers). Each round writes to every connection before reading
// any echo, so many recvs complete in one task_work run.
func TestMetricsRingPressure(t *testing.T) {
	const conns, rounds = 64, 20
	rt := newMetricsRT(t, Config{Loops: 1, RingEntries: 4, Buffers: 1, BufferSize: 64})
	addr := echoServer(t, rt, "callback")
	cs, _ := echoTraffic(t, addr, conns, 1, 12)
	defer closeAll(cs)
	msg, in := []byte("pressure-msg"), make([]byte, 12)
	var l LoopStats
	for r := 0; r < rounds; r++ {
		for _, c := range cs {
			if _, err := c.Write(msg); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range cs {
			if _, err := io.ReadFull(c, in); err != nil || !bytes.Equal(in, msg) {
				t.Fatalf("echo %q, %v; want %q", in, err, msg)
			}
		}
		l = rt.Stats().Loops[0]
		if l.SQFull > 0 && l.BufferRingExhausted > 0 && l.CQOverflows > 0 {
			t.Logf("after %d rounds: SQFull=%v BufferRingExhausted=%v CQOverflows=%v", r+1, l.SQFull, l.BufferRingExhausted, l.CQOverflows)
			return
		}
	}
	t.Errorf("after %d bursts over %d connections on a 4-entry ring with 1 buffer: SQFull=%v BufferRingExhausted=%v CQOverflows=%v, want all > 0",
		rounds, conns, l.SQFull, l.BufferRingExhausted, l.CQOverflows)
}

// TestMetricsAcceptErrorsExported: the errnos an operator alerts on are in
// AcceptErrors (at 0) before any failure, so dashboards and alerts work.
func TestMetricsAcceptErrorsExported(t *testing.T) {
	rt := newMetricsRT(t, Config{Loops: 1})
	errs := rt.Stats().AcceptErrors
	for _, e := range []string{"EMFILE", "ENFILE", "ENOBUFS", "ENOMEM"} {
		if got, ok := errs[e]; !ok || got != 0 {
			t.Errorf("AcceptErrors[%s] = %v, %v; want 0, present", e, got, ok)
		}
	}
}

// TestMetricsAcceptErrorByErrno makes accept(2) fail with EMFILE (the
// process's descriptor limit lowered to its lowest free descriptor while a
// connection waits in the backlog) and checks the failure is counted under
// its errno.
func TestMetricsAcceptErrorByErrno(t *testing.T) {
	rt := newMetricsRT(t, Config{Loops: 1})
	ln := listenTCP(t, rt)
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// The connection must be in the accept queue before the limit drops,
	// or Accept would park (and the deadline below end it).
	pfd := []unix.PollFd{{Fd: int32(ln.(*listener).fd.fd), Events: unix.POLLIN}}
	if n, err := unix.Poll(pfd, 5000); n != 1 || err != nil {
		t.Fatalf("listener not readable within 5 s: %d, %v", n, err)
	}
	ln.(*listener).SetDeadline(time.Now().Add(5 * time.Second))

	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	low := lowestFreeFD(t)
	lim := old
	lim.Cur = uint64(low)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
				t.Fatalf("restoring RLIMIT_NOFILE: %v", err)
			}
		}
	}
	defer restore()
	_, aerr := ln.Accept()
	restore()
	if !errors.Is(aerr, syscall.EMFILE) {
		t.Fatalf("Accept with RLIMIT_NOFILE=%d: %v, want EMFILE", low, aerr)
	}
	if got := rt.Stats().AcceptErrors["EMFILE"]; got != 1 {
		t.Errorf("AcceptErrors[EMFILE] = %v, want 1", got)
	}
	// The connection is still in the backlog; with the limit back, Accept works.
	if a, err := ln.Accept(); err != nil {
		t.Errorf("Accept after restoring the limit: %v", err)
	} else {
		a.Close()
	}
}

// lowestFreeFD returns the lowest descriptor number not open.
func lowestFreeFD(t *testing.T) int {
	t.Helper()
	fd, err := syscall.Dup(0)
	if err != nil {
		t.Fatal(err)
	}
	syscall.Close(fd)
	return fd
}
