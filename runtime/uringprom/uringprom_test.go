package uringprom_test

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/uringrt/uringrt/deploy"
	uringrt "github.com/uringrt/uringrt/runtime"
	"github.com/uringrt/uringrt/runtime/experiment"
	"github.com/uringrt/uringrt/runtime/uringprom"
)

// newRT starts a counting runtime with its metrics on a fresh registry.
func newRT(t *testing.T, cfg uringrt.Config) (*uringrt.Runtime, *prometheus.Registry) {
	t.Helper()
	cfg.Metrics = true
	rt, err := uringrt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	reg := prometheus.NewRegistry()
	if err := uringprom.Register(reg, rt); err != nil {
		t.Fatal(err)
	}
	return rt, reg
}

// echo serves an echo on rt through api ("callback" or "conn") until the
// test ends and returns its address.
func echo(t *testing.T, rt *uringrt.Runtime, api string) string {
	t.Helper()
	ln, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	if api == "callback" || api == "callback-blocking" { // the latter on the runtime's worker pool
		go func() {
			defer wg.Done()
			rt.Serve(ln, uringrt.HandlerFuncs{Data: func(c *uringrt.CallbackConn, d []byte) { c.Write(d) }, Blocking: api == "callback-blocking"})
		}()
	} else {
		go func() {
			defer wg.Done()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				wg.Add(1)
				go func() { defer wg.Done(); defer c.Close(); io.Copy(c, c) }()
			}
		}()
	}
	t.Cleanup(func() { ln.Close(); rt.Close(); wg.Wait() })
	return ln.Addr().String()
}

// traffic dials conns connections to addr with Go's net, echoes msgs
// messages of 12 bytes on each and closes them.
func traffic(t *testing.T, addr string, conns, msgs int) {
	t.Helper()
	msg, in := []byte("hello, world"), make([]byte, 12)
	for i := 0; i < conns; i++ {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		for j := 0; j < msgs; j++ {
			if _, err := c.Write(msg); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(c, in); err != nil {
				t.Fatal(err)
			}
		}
		c.Close()
	}
}

type families map[string]*dto.MetricFamily

func gather(t *testing.T, g prometheus.Gatherer) families {
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

// series returns the series of family name that carry every label pair of
// kv, or nil if the family is missing.
func (f families) series(name string, kv ...string) []*dto.Metric {
	mf, ok := f[name]
	if !ok {
		return nil
	}
	var out []*dto.Metric
	for _, m := range mf.GetMetric() {
		all := true
		for i := 0; i+1 < len(kv); i += 2 {
			found := false
			for _, lp := range m.GetLabel() {
				found = found || lp.GetName() == kv[i] && lp.GetValue() == kv[i+1]
			}
			all = all && found
		}
		if all {
			out = append(out, m)
		}
	}
	return out
}

func lint(t *testing.T, g prometheus.Gatherer) {
	t.Helper()
	problems, err := testutil.GatherAndLint(g)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// wantFamilies are the families a runtime exports, with their types.
var wantFamilies = map[string]dto.MetricType{
	"uringrt_sqes_submitted_total": dto.MetricType_COUNTER, "uringrt_cqes_reaped_total": dto.MetricType_COUNTER,
	"uringrt_enter_calls_total": dto.MetricType_COUNTER, "uringrt_cq_overflows_total": dto.MetricType_COUNTER,
	"uringrt_sq_full_total": dto.MetricType_COUNTER, "uringrt_poll_arms_total": dto.MetricType_COUNTER,
	"uringrt_buffers_lent_total": dto.MetricType_COUNTER, "uringrt_buffer_ring_exhausted_total": dto.MetricType_COUNTER,
	"uringrt_io_retried_eagain_total":  dto.MetricType_COUNTER,
	"uringrt_stream_mode_enters_total": dto.MetricType_COUNTER,
	"uringrt_idle_polls_total":         dto.MetricType_COUNTER, "uringrt_connections_accepted_total": dto.MetricType_COUNTER,
	"uringrt_connections_closed_total": dto.MetricType_COUNTER, "uringrt_connections_rejected_total": dto.MetricType_COUNTER,
	"uringrt_connections_active": dto.MetricType_GAUGE, "uringrt_read_bytes_total": dto.MetricType_COUNTER,
	"uringrt_written_bytes_total": dto.MetricType_COUNTER, "uringrt_pollable_requests_total": dto.MetricType_COUNTER,
	"uringrt_inflight_ops": dto.MetricType_GAUGE, "uringrt_cqes_per_enter": dto.MetricType_HISTOGRAM,
	"uringrt_taskwork_batch_size": dto.MetricType_HISTOGRAM, "uringrt_blocking_queue_wait_seconds": dto.MetricType_HISTOGRAM,
	"uringrt_process_context_switches_total": dto.MetricType_COUNTER, "uringrt_accept_errors_total": dto.MetricType_COUNTER,
	"uringrt_backend_info": dto.MetricType_GAUGE, "uringrt_handler_panics_total": dto.MetricType_COUNTER,
	"uringrt_read_pauses_total": dto.MetricType_COUNTER, "uringrt_output_buffered_bytes": dto.MetricType_GAUGE,
	"uringrt_idle_closed_total": dto.MetricType_COUNTER, "uringrt_udp_received_datagrams_total": dto.MetricType_COUNTER,
	"uringrt_connections_timed_out_total": dto.MetricType_COUNTER, "uringrt_write_refusals_total": dto.MetricType_COUNTER,
	"uringrt_close_lingers_total": dto.MetricType_COUNTER, "uringrt_close_lingers_cut_total": dto.MetricType_COUNTER,
	"uringrt_inline_runs_total": dto.MetricType_COUNTER, "uringrt_inline_takeovers_total": dto.MetricType_COUNTER,
	"uringrt_udp_sent_datagrams_total": dto.MetricType_COUNTER, "uringrt_udp_received_bytes_total": dto.MetricType_COUNTER,
	"uringrt_udp_sent_bytes_total": dto.MetricType_COUNTER, "uringrt_udp_truncated_total": dto.MetricType_COUNTER,
	"uringrt_udp_poll_waits_total": dto.MetricType_COUNTER, "uringrt_worker_queue_depth": dto.MetricType_GAUGE,
	"uringrt_worker_works_run_total": dto.MetricType_COUNTER, "uringrt_worker_works_cancelled_total": dto.MetricType_COUNTER,
	"uringrt_worker_panics_total": dto.MetricType_COUNTER, "uringrt_worker_batches_total": dto.MetricType_COUNTER,
	"uringrt_worker_batch_size": dto.MetricType_HISTOGRAM,
}

// TestFamilies: with io_uring every family exists with its type and help,
// lints clean, and the counters match the runtime's Stats after traffic.
func TestFamilies(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  uringrt.Config
	}{
		{"uring", uringrt.Config{Loops: 2, Backend: uringrt.BackendUring}},
		{"blocking", uringrt.Config{Loops: 1, Backend: uringrt.BackendUring, Workers: 2, Switches: experiment.Switches{Pollable: experiment.PollBlocking}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, reg := newRT(t, tc.cfg)
			problems, err := testutil.CollectAndLint(uringprom.NewCollector(rt))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				t.Errorf("lint: %s: %s", p.Metric, p.Text)
			}
			traffic(t, echo(t, rt, "conn"), 4, 10)
			lint(t, reg)
			f := gather(t, reg)
			for name, typ := range wantFamilies {
				mf, ok := f[name]
				switch {
				case !ok && strings.HasPrefix(name, "uringrt_worker_") && tc.cfg.Switches.Pollable != experiment.PollBlocking:
					// The pool serves MayBlocker handlers and PollBlocking
					// only: unused here, not exported (TestUnusedPoolNotExported).
				case !ok:
					t.Errorf("%s not exported", name)
				case mf.GetType() != typ:
					t.Errorf("%s is a %v, want %v", name, mf.GetType(), typ)
				case mf.GetHelp() == "":
					t.Errorf("%s has no help", name)
				}
			}
			for name := range f {
				if _, ok := wantFamilies[name]; !ok {
					t.Errorf("%s exported, not in wantFamilies", name)
				}
			}
			var read uint64
			for _, l := range rt.Stats().Loops {
				read += l.ReadBytes
			}
			var got float64
			for _, m := range f.series("uringrt_read_bytes_total") {
				got += m.GetCounter().GetValue()
			}
			if read == 0 || got != float64(read) {
				t.Errorf("uringrt_read_bytes_total = %v, Stats ReadBytes = %d; want equal and > 0", got, read)
			}
			if n := len(f.series("uringrt_backend_info", "backend", "uring")); n != 1 {
				t.Errorf("%d backend_info{backend=uring} series, want 1", n)
			}
			if s := f.series("uringrt_process_context_switches_total", "kind", "voluntary"); len(s) != 1 || s[0].GetCounter().GetValue() <= 0 {
				t.Errorf("process_context_switches_total{kind=voluntary}: %v, want one series > 0", s)
			}
			for _, e := range []string{"EMFILE", "ENFILE", "ENOBUFS", "ENOMEM"} {
				if len(f.series("uringrt_accept_errors_total", "errno", e)) != 1 {
					t.Errorf("accept_errors_total{errno=%s} not exported before a failure", e)
				}
			}
		})
	}
}

// TestStdBackend: under BackendStd backend_info says std, and the
// families still lint clean.
func TestStdBackend(t *testing.T) {
	rt, reg := newRT(t, uringrt.Config{Backend: uringrt.BackendStd})
	traffic(t, echo(t, rt, "callback"), 2, 5)
	f := gather(t, reg)
	if n := len(f.series("uringrt_backend_info", "backend", "std", "setup_flags", "none")); n != 1 {
		t.Errorf("%d backend_info{backend=std,setup_flags=none} series, want 1", n)
	}
	if n := len(f.series("uringrt_backend_info", "backend", "uring")); n != 0 {
		t.Errorf("backend_info{backend=uring} under BackendStd")
	}
	lint(t, reg)
}

// TestRegister: a runtime built without Config.Metrics, as the default
// runtime is, gets its metrics on at Register and counts the bytes echoed
// after it (Register refused it: "built without Config.Metrics"); a second
// runtime on the same registry conflicts.
func TestRegister(t *testing.T) {
	rt, err := uringrt.Default()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { uringrt.CloseDefault() })
	if rt.MetricsEnabled() {
		t.Fatal("the default runtime counts without Register")
	}
	reg0 := prometheus.NewRegistry()
	if err := uringprom.Register(reg0, rt); err != nil {
		t.Fatalf("Register(reg, uringrt.Default()): %v", err)
	}
	traffic(t, echo(t, rt, "callback"), 2, 10)
	var in float64
	for _, m := range gather(t, reg0).series("uringrt_read_bytes_total") {
		in += m.GetCounter().GetValue()
	}
	if want := float64(2 * 10 * 12); in < want {
		t.Errorf("uringrt_read_bytes_total = %v after Register, want >= %v", in, want)
	}
	_, reg := newRT(t, uringrt.Config{Backend: uringrt.BackendStd})
	rt2, err := uringrt.New(uringrt.Config{Backend: uringrt.BackendStd, Metrics: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rt2.Close()
	var are prometheus.AlreadyRegisteredError
	if err := uringprom.Register(reg, rt2); !errors.As(err, &are) {
		t.Errorf("second runtime on one registry: %v, want AlreadyRegisteredError", err)
	}
}

// allowedLabels are the only label names the metrics carry (low
// cardinality, nothing per connection).
var allowedLabels = map[string]bool{
	"loop": true, "op": true, "outcome": true, "pool": true, "worker": true,
	"kind": true, "errno": true, "backend": true, "kernel": true, "setup_flags": true,
}

// TestLowCardinality checks that no label grows with connections: the
// series count per family is the same after 2 connections as after 42,
// and only the low-cardinality label names appear.
func TestLowCardinality(t *testing.T) {
	const loops = 2
	rt, reg := newRT(t, uringrt.Config{Loops: loops, Backend: uringrt.BackendUring})
	addr := echo(t, rt, "callback")
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
	traffic(t, addr, 2, 3)
	small := series()
	traffic(t, addr, 40, 3)
	large := series()
	for name, n := range large {
		if small[name] != n {
			t.Errorf("%s: %d series with 2 connections, %d with 42", name, small[name], n)
		}
	}
}

// TestDashboardMetricsExist gathers a live registry as the echo-server
// builds it (runtime, worker pool, Go and process collectors), after
// traffic through both APIs (and a MayBlocker handler, so that the worker
// pool, which exports nothing until used, is used), and checks that every
// metric the Grafana dashboard queries exists.
func TestDashboardMetricsExist(t *testing.T) {
	const dashboard = "../../deploy/grafana/uringrt.json"
	rt, reg := newRT(t, uringrt.Config{Loops: 2})
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, api := range []string{"conn", "callback", "callback-blocking"} {
		traffic(t, echo(t, rt, api), 4, 5)
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
	data, err := os.ReadFile(dashboard)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
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

// TestRuntimeUnusedPoolNotExported: a runtime whose worker pool is unused
// (no MayBlocker handler, not PollBlocking) exports none of the pool's
// uringrt_worker_* series.
func TestRuntimeUnusedPoolNotExported(t *testing.T) {
	rt, reg := newRT(t, uringrt.Config{Loops: 2, Backend: uringrt.BackendUring})
	traffic(t, echo(t, rt, "callback"), 2, 5)
	for name := range gather(t, reg) {
		if strings.HasPrefix(name, "uringrt_worker_") {
			t.Errorf("%s exported for the runtime's unused pool", name)
		}
	}
}
