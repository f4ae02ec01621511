package uringrt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"golang.org/x/sys/unix"

	"github.com/uringrt/uringrt/deploy"
	"github.com/uringrt/uringrt/runtime/experiment"
)

// families is one Gather, by family name.
type families map[string]*dto.MetricFamily

func gather(t testing.TB, g prometheus.Gatherer) families {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	f := make(families, len(mfs))
	for _, mf := range mfs {
		f[mf.GetName()] = mf
	}
	return f
}

// hasLabels reports whether m carries every name=value pair of kv.
func hasLabels(m *dto.Metric, kv ...string) bool {
	for i := 0; i+1 < len(kv); i += 2 {
		found := false
		for _, lp := range m.GetLabel() {
			found = found || lp.GetName() == kv[i] && lp.GetValue() == kv[i+1]
		}
		if !found {
			return false
		}
	}
	return true
}

// sum adds up the series of family name that carry the labels kv (pairs):
// counter and gauge values, histogram and summary sample counts. A missing
// family is -1.
func (f families) sum(name string, kv ...string) float64 {
	mf, ok := f[name]
	if !ok {
		return -1
	}
	var s float64
	for _, m := range mf.GetMetric() {
		if !hasLabels(m, kv...) {
			continue
		}
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			s += m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			s += m.GetGauge().GetValue()
		case dto.MetricType_HISTOGRAM:
			s += float64(m.GetHistogram().GetSampleCount())
		case dto.MetricType_SUMMARY:
			s += float64(m.GetSummary().GetSampleCount())
		default:
			s += m.GetUntyped().GetValue()
		}
	}
	return s
}

// eventually polls cond until it holds or the deadline (at most d, and
// before the test's own deadline) passes; then it fails with cond's last
// message.
func eventually(t *testing.T, d time.Duration, cond func() (bool, string)) {
	t.Helper()
	end := time.Now().Add(d)
	if dl, ok := t.Deadline(); ok && dl.Add(-5*time.Second).Before(end) {
		end = dl.Add(-5 * time.Second)
	}
	for {
		ok, msg := cond()
		if ok {
			return
		}
		if time.Now().After(end) {
			t.Fatal(msg)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// echoTraffic dials conns connections to addr with Go's net (so the client
// side counts nowhere in the runtime), sends msgs messages of size bytes
// on each, one at a time, and checks every echo. It returns the open
// connections (the caller closes them) and the bytes sent in all.
func echoTraffic(t *testing.T, addr string, conns, msgs, size int) ([]net.Conn, int) {
	t.Helper()
	cs := make([]net.Conn, conns)
	for i := range cs {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			for _, c := range cs[:i] {
				c.Close()
			}
			t.Fatalf("dial %s: %v", addr, err)
		}
		cs[i] = c
	}
	errs := make(chan error, conns)
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetDeadline(time.Now().Add(20 * time.Second))
			out := bytes.Repeat([]byte{byte('a' + i%26)}, size)
			in := make([]byte, size)
			for m := 0; m < msgs; m++ {
				if _, err := c.Write(out); err != nil {
					errs <- fmt.Errorf("conn %d msg %d: write: %w", i, m, err)
					return
				}
				if _, err := io.ReadFull(c, in); err != nil {
					errs <- fmt.Errorf("conn %d msg %d: read: %w", i, m, err)
					return
				}
				if !bytes.Equal(in, out) {
					errs <- fmt.Errorf("conn %d msg %d: echo %q, want %q", i, m, in, out)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		for _, c := range cs {
			c.Close()
		}
		t.Fatal(err)
	}
	return cs, conns * msgs * size
}

func closeAll(cs []net.Conn) {
	for _, c := range cs {
		c.Close()
	}
}

// newMetricsRT starts a runtime whose metrics are registered on a fresh
// registry.
func newMetricsRT(t *testing.T, cfg Config) (*Runtime, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	return newRT(t, cfg), reg
}

func lint(t *testing.T, reg *prometheus.Registry) {
	t.Helper()
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func TestMetricsLint(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"uring", Config{Loops: 2}},
		{"blocking", Config{Loops: 1, Workers: 2, Switches: experiment.Switches{Pollable: experiment.PollBlocking}}},
		{"std", Config{Backend: BackendStd}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, reg := newMetricsRT(t, tc.cfg)
			// The runtime's own collector alone, then everything it
			// registered, after some traffic so histograms have samples.
			problems, err := testutil.CollectAndLint(collector{rt})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				t.Errorf("lint: %s: %s", p.Metric, p.Text)
			}
			cs, _ := echoTraffic(t, echoServer(t, rt, "conn"), 4, 10, 12)
			closeAll(cs)
			lint(t, reg)
			f := gather(t, reg)
			for name, mf := range f {
				if !strings.HasPrefix(name, "uringrt_") {
					t.Errorf("family %s outside the uringrt namespace", name)
				}
				if mf.GetHelp() == "" {
					t.Errorf("%s has no help", name)
				}
			}
		})
	}
}

// TestMetricsCallbackEcho checks that the counters move by what a known
// number of echoes through the callback API implies.
func TestMetricsCallbackEcho(t *testing.T) {
	const conns, msgs, size = 8, 25, 12
	rt, reg := newMetricsRT(t, Config{Loops: 2})
	addr := echoServer(t, rt, "callback")
	before := gather(t, reg)
	cs, sent := echoTraffic(t, addr, conns, msgs, size)

	eventually(t, 5*time.Second, func() (bool, string) {
		f := gather(t, reg)
		r, w := f.sum("uringrt_read_bytes_total"), f.sum("uringrt_written_bytes_total")
		return r == float64(sent) && w == float64(sent),
			fmt.Sprintf("read_bytes_total=%v written_bytes_total=%v, want both %d", r, w, sent)
	})
	f := gather(t, reg)
	for _, c := range []struct {
		name string
		min  float64
	}{
		{"uringrt_cqes_reaped_total", conns * msgs},
		{"uringrt_sqes_submitted_total", conns * msgs}, // one send per echo
		{"uringrt_enter_calls_total", 1},
		{"uringrt_cqes_per_enter", 1},
		{"uringrt_taskwork_batch_size", 1},
	} {
		if got := f.sum(c.name) - before.sum(c.name); got < c.min {
			t.Errorf("%s moved by %v, want >= %v", c.name, got, c.min)
		}
	}
	if got := f.sum("uringrt_connections_accepted_total"); got != conns {
		t.Errorf("connections_accepted_total = %v, want %d", got, conns)
	}
	if got := f.sum("uringrt_connections_active"); got != conns {
		t.Errorf("connections_active = %v, want %d", got, conns)
	}
	if got := f.sum("uringrt_backend_info", "backend", "uring"); got != 1 {
		t.Errorf("backend_info{backend=uring} = %v, want 1", got)
	}
	if got := f.sum("uringrt_process_context_switches_total", "kind", "voluntary"); got <= 0 {
		t.Errorf("process_context_switches_total{kind=voluntary} = %v, want > 0", got)
	}
	for _, name := range []string{"uringrt_worker_queue_depth", "uringrt_accept_errors_total", "uringrt_inflight_ops"} {
		if f.sum(name) < 0 {
			t.Errorf("%s is not exported", name)
		}
	}
	checkHistograms(t, f)

	closeAll(cs)
	eventually(t, 5*time.Second, func() (bool, string) {
		f := gather(t, reg)
		cl, act := f.sum("uringrt_connections_closed_total"), f.sum("uringrt_connections_active")
		return cl == conns && act == 0, fmt.Sprintf("after close: connections_closed_total=%v active=%v, want %d and 0", cl, act, conns)
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
		{"hybrid", Config{Loops: 2}},
		{"ring", Config{Loops: 1, Switches: experiment.Switches{Pollable: experiment.PollRing}}},
		{"blocking", Config{Loops: 1, Workers: 4, Switches: experiment.Switches{Pollable: experiment.PollBlocking}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, reg := newMetricsRT(t, tc.cfg)
			addr := echoServer(t, rt, "conn")
			cs, sent := echoTraffic(t, addr, conns, msgs, size)
			eventually(t, 5*time.Second, func() (bool, string) {
				f := gather(t, reg)
				r, w := f.sum("uringrt_read_bytes_total"), f.sum("uringrt_written_bytes_total")
				return r == float64(sent) && w == float64(sent),
					fmt.Sprintf("read_bytes_total=%v written_bytes_total=%v, want both %d", r, w, sent)
			})
			f := gather(t, reg)
			reads := f.sum("uringrt_pollable_requests_total", "op", "read")
			if reads < conns*msgs {
				t.Errorf("pollable_requests_total{op=read} = %v, want >= %d (one read per echoed message)", reads, conns*msgs)
			}
			if w := f.sum("uringrt_pollable_requests_total", "op", "write"); w < conns*msgs {
				t.Errorf("pollable_requests_total{op=write} = %v, want >= %d", w, conns*msgs)
			}
			armed := f.sum("uringrt_pollable_requests_total", "op", "read", "outcome", "poll_armed")
			switch tc.cfg.Pollable {
			case experiment.PollHybrid:
				// Each echo's next Read finds nothing yet: EAGAIN, poll arm.
				if armed == 0 {
					t.Error("hybrid: no read was poll_armed")
				}
				if f.sum("uringrt_pollable_requests_total", "op", "write", "outcome", "inline") == 0 {
					t.Error("hybrid: no write was done inline")
				}
				if f.sum("uringrt_poll_arms_total") == 0 {
					t.Error("hybrid: poll_arms_total did not move")
				}
			case experiment.PollRing:
				if armed != reads {
					t.Errorf("ring: %v of %v reads poll_armed, want all", armed, reads)
				}
			case experiment.PollBlocking:
				if n := f.sum("uringrt_blocking_queue_wait_seconds"); n < conns*msgs {
					t.Errorf("blocking_queue_wait_seconds count = %v, want >= %d", n, conns*msgs)
				}
				if n := f.sum("uringrt_worker_works_run_total", "pool", "workers"); n < conns*msgs {
					t.Errorf("worker_works_run_total = %v, want >= %d", n, conns*msgs)
				}
			}
			if got := f.sum("uringrt_connections_accepted_total"); got != conns {
				t.Errorf("connections_accepted_total = %v, want %d", got, conns)
			}
			checkHistograms(t, f)
			closeAll(cs)
			eventually(t, 5*time.Second, func() (bool, string) {
				f := gather(t, reg)
				cl, act := f.sum("uringrt_connections_closed_total"), f.sum("uringrt_connections_active")
				return cl == conns && act == 0, fmt.Sprintf("after close: connections_closed_total=%v active=%v, want %d and 0", cl, act, conns)
			})
		})
	}
}

// checkHistograms checks every histogram of f is well formed: buckets
// cumulative, none above the count, a +Inf-free set of finite bounds.
func checkHistograms(t *testing.T, f families) {
	t.Helper()
	for name, mf := range f {
		if mf.GetType() != dto.MetricType_HISTOGRAM {
			continue
		}
		for _, m := range mf.GetMetric() {
			h := m.GetHistogram()
			var prevB float64 = math.Inf(-1)
			var prevC uint64
			for _, b := range h.GetBucket() {
				if b.GetUpperBound() <= prevB || b.GetCumulativeCount() < prevC {
					t.Errorf("%s%v: bucket le=%v count %d after le=%v count %d", name, m.GetLabel(), b.GetUpperBound(), b.GetCumulativeCount(), prevB, prevC)
				}
				prevB, prevC = b.GetUpperBound(), b.GetCumulativeCount()
			}
			if prevC > h.GetSampleCount() {
				t.Errorf("%s%v: last bucket %d > count %d", name, m.GetLabel(), prevC, h.GetSampleCount())
			}
			if strings.HasSuffix(name, "_seconds") && h.GetSampleCount() > 0 && h.GetSampleSum() <= 0 {
				t.Errorf("%s: %d samples summing to %v s", name, h.GetSampleCount(), h.GetSampleSum())
			}
		}
	}
}

func TestMetricsBlockingWaitHistogram(t *testing.T) {
	var h durHist
	for _, d := range []time.Duration{0, time.Microsecond, 3 * time.Microsecond, time.Millisecond, 2 * time.Second} {
		h.observe(d)
	}
	var b [len(durBounds) + 1]uint64
	var sum uint64
	h.addTo(&b, &sum)
	h.addTo(&b, &sum) // two loops with the same samples
	desc := prometheus.NewDesc("x_seconds", "x", nil, nil)
	var m dto.Metric
	if err := durConstHistogram(desc, &b, sum).Write(&m); err != nil {
		t.Fatal(err)
	}
	hg := m.GetHistogram()
	if hg.GetSampleCount() != 10 {
		t.Errorf("count = %d, want 10", hg.GetSampleCount())
	}
	if want := 2 * (2.001004); math.Abs(hg.GetSampleSum()-want) > 1e-9 {
		t.Errorf("sum = %v s, want %v", hg.GetSampleSum(), want)
	}
	want := map[float64]uint64{1e-6: 4, 5e-6: 6, 1e-3: 8, 1: 8}
	for _, bk := range hg.GetBucket() {
		if w, ok := want[bk.GetUpperBound()]; ok && bk.GetCumulativeCount() != w {
			t.Errorf("le=%v: %d, want %d", bk.GetUpperBound(), bk.GetCumulativeCount(), w)
		}
	}
}

// TestMetricsStdBackend: BackendStd says so in backend_info and lints clean.
func TestMetricsStdBackend(t *testing.T) {
	rt, reg := newMetricsRT(t, Config{Backend: BackendStd})
	cs, _ := echoTraffic(t, echoServer(t, rt, "callback"), 2, 5, 12)
	closeAll(cs)
	f := gather(t, reg)
	if got := f.sum("uringrt_backend_info", "backend", "std"); got != 1 {
		t.Errorf("backend_info{backend=std} = %v, want 1", got)
	}
	if got := f.sum("uringrt_backend_info", "backend", "uring"); got > 0 {
		t.Errorf("backend_info{backend=uring} = %v under BackendStd", got)
	}
	lint(t, reg)
}

// allowedLabels are the only label names the runtime's metrics carry
// (DESIGN.md: low cardinality, nothing per connection).
var allowedLabels = map[string]bool{
	"loop": true, "op": true, "outcome": true, "pool": true, "worker": true,
	"kind": true, "errno": true, "backend": true, "kernel": true, "setup_flags": true,
}

// TestMetricsLowCardinality checks that no label grows with connections:
// the series count per family is the same after 2 connections as after 40,
// and only the low-cardinality label names appear.
func TestMetricsLowCardinality(t *testing.T) {
	const loops = 2
	rt, reg := newMetricsRT(t, Config{Loops: loops})
	addr := echoServer(t, rt, "callback")
	series := func() map[string]int {
		n := make(map[string]int)
		for name, mf := range gather(t, reg) {
			n[name] = len(mf.GetMetric())
			for _, m := range mf.GetMetric() {
				for _, lp := range m.GetLabel() {
					if !allowedLabels[lp.GetName()] {
						t.Errorf("%s has label %s=%q, not one of the low-cardinality labels", name, lp.GetName(), lp.GetValue())
					}
					if lp.GetName() == "loop" && !slices.Contains([]string{"0", "1"}, lp.GetValue()) {
						t.Errorf("%s has loop=%q with %d loops", name, lp.GetValue(), loops)
					}
				}
			}
			if len(mf.GetMetric()) > 32 {
				t.Errorf("%s has %d series", name, len(mf.GetMetric()))
			}
		}
		return n
	}
	cs, _ := echoTraffic(t, addr, 2, 3, 12)
	small := series()
	cs2, _ := echoTraffic(t, addr, 40, 3, 12)
	large := series()
	closeAll(cs)
	closeAll(cs2)
	for name, n := range large {
		if small[name] != n {
			t.Errorf("%s: %d series with 2 connections, %d with 42", name, small[name], n)
		}
	}
}

// TestMetricsRingPressure drives a tiny ring with a single provided buffer
// so the pressure counters move: SQ full (more arms than SQEs), CQ overflow
// (more completions at once than the CQ holds) and ENOBUFS (more recvs at
// once than buffers). Each round writes to every connection before reading
// any echo, so many recvs complete in one task_work run.
func TestMetricsRingPressure(t *testing.T) {
	const conns, rounds = 64, 20
	rt, reg := newMetricsRT(t, Config{Loops: 1, RingEntries: 4, Buffers: 1, BufferSize: 64})
	addr := echoServer(t, rt, "callback")
	cs, _ := echoTraffic(t, addr, conns, 1, 12)
	defer closeAll(cs)
	msg, in := []byte("pressure-msg"), make([]byte, 12)
	var f families
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
		f = gather(t, reg)
		if f.sum("uringrt_sq_full_total") > 0 && f.sum("uringrt_buffer_ring_exhausted_total") > 0 &&
			f.sum("uringrt_cq_overflows_total") > 0 {
			t.Logf("after %d rounds: sq_full_total=%v buffer_ring_exhausted_total=%v cq_overflows_total=%v", r+1,
				f.sum("uringrt_sq_full_total"), f.sum("uringrt_buffer_ring_exhausted_total"), f.sum("uringrt_cq_overflows_total"))
			return
		}
	}
	t.Errorf("after %d bursts over %d connections on a 4-entry ring with 1 buffer: sq_full_total=%v buffer_ring_exhausted_total=%v cq_overflows_total=%v, want all > 0",
		rounds, conns, f.sum("uringrt_sq_full_total"), f.sum("uringrt_buffer_ring_exhausted_total"), f.sum("uringrt_cq_overflows_total"))
}

// TestMetricsAcceptErrorsExported: the accept-error family exists (at 0 for
// the errnos that matter) before any failure, so dashboards and alerts work.
func TestMetricsAcceptErrorsExported(t *testing.T) {
	_, reg := newMetricsRT(t, Config{Loops: 1})
	f := gather(t, reg)
	for _, e := range []string{"EMFILE", "ENFILE"} {
		if got := f.sum("uringrt_accept_errors_total", "errno", e); got != 0 {
			t.Errorf("accept_errors_total{errno=%s} = %v, want 0 (present)", e, got)
		}
	}
}

// TestMetricsAcceptErrorByErrno makes accept(2) fail with EMFILE (the
// process's descriptor limit lowered to its lowest free descriptor while a
// connection waits in the backlog) and checks the failure is counted under
// its errno.
func TestMetricsAcceptErrorByErrno(t *testing.T) {
	rt, reg := newMetricsRT(t, Config{Loops: 1})
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
	f := gather(t, reg)
	if got := f.sum("uringrt_accept_errors_total", "errno", "EMFILE"); got != 1 {
		t.Errorf("accept_errors_total{errno=EMFILE} = %v, want 1", got)
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

// TestDashboardMetricsExist gathers a live registry as the echo-server
// builds it (runtime, worker pool, Go and process collectors), after
// traffic through both APIs, and checks that every metric the Grafana
// dashboard queries exists.
func TestDashboardMetricsExist(t *testing.T) {
	const dashboard = "../deploy/grafana/uringrt.json"
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	rt := newRT(t, Config{Loops: 2, Registerer: reg})
	for _, api := range []string{"conn", "callback"} {
		cs, _ := echoTraffic(t, echoServer(t, rt, api), 4, 5, 12)
		closeAll(cs)
	}
	f := gather(t, reg)

	names, err := deploy.DashboardMetricNames(dashboard)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 10 {
		t.Fatalf("dashboard queries only %d uringrt metrics: %q", len(names), names)
	}
	// The Go and process collectors' names too (process_cpu_seconds_total
	// and the like), which DashboardMetricNames leaves out.
	other := regexp.MustCompile(`\b(?:go|process)_[a-zA-Z0-9_]+`)
	var doc any
	if err := readDashboard(dashboard, &doc); err != nil {
		t.Fatal(err)
	}
	for _, e := range deploy.DashboardExprs(doc) {
		for _, n := range other.FindAllString(e, -1) {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	for _, n := range names {
		if _, ok := f[n]; !ok {
			t.Errorf("dashboard queries %s; the live registry has no such family", n)
		}
	}
	t.Logf("%d dashboard metrics all present", len(names))
}

func readDashboard(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}
