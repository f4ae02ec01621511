package deploy

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"testing"
)

// knownMetrics is every metric family the uringrt runtime exposes (DESIGN.md,
// Metrics), without the Go and process collectors. The dashboard may query
// only these. This list is fixed by hand; TestKnownMetricsAreLive
// (live_test.go) holds it equal, names and types, to what a live runtime
// registers, and the runtime package's test TestDashboardMetricsExist calls
// DashboardMetricNames and checks the same names against a live
// prometheus.Registry, so a rename on either side fails a test.
var knownMetrics = map[string]string{
	// counters
	"uringrt_sqes_submitted_total":           "counter",
	"uringrt_cqes_reaped_total":              "counter",
	"uringrt_enter_calls_total":              "counter",
	"uringrt_pollable_requests_total":        "counter",
	"uringrt_poll_arms_total":                "counter",
	"uringrt_cq_overflows_total":             "counter",
	"uringrt_buffer_ring_exhausted_total":    "counter",
	"uringrt_io_retried_eagain_total":        "counter",
	"uringrt_buffers_lent_total":             "counter",
	"uringrt_stream_mode_enters_total":       "counter",
	"uringrt_sq_full_total":                  "counter",
	"uringrt_connections_accepted_total":     "counter",
	"uringrt_connections_closed_total":       "counter",
	"uringrt_connections_rejected_total":     "counter",
	"uringrt_accept_errors_total":            "counter",
	"uringrt_read_bytes_total":               "counter",
	"uringrt_written_bytes_total":            "counter",
	"uringrt_process_context_switches_total": "counter",
	"uringrt_worker_works_run_total":         "counter",
	"uringrt_worker_works_cancelled_total":   "counter",
	"uringrt_worker_panics_total":            "counter",
	"uringrt_worker_batches_total":           "counter",
	"uringrt_handler_panics_total":           "counter",
	"uringrt_idle_polls_total":               "counter",
	"uringrt_udp_received_datagrams_total":   "counter",
	"uringrt_udp_sent_datagrams_total":       "counter",
	"uringrt_udp_received_bytes_total":       "counter",
	"uringrt_udp_sent_bytes_total":           "counter",
	"uringrt_udp_truncated_total":            "counter",
	"uringrt_udp_poll_waits_total":           "counter",
	"uringrt_read_pauses_total":              "counter",
	"uringrt_idle_closed_total":              "counter",
	"uringrt_connections_timed_out_total":    "counter",
	"uringrt_write_refusals_total":           "counter",
	"uringrt_close_lingers_total":            "counter",
	"uringrt_inline_runs_total":              "counter",
	"uringrt_inline_takeovers_total":         "counter",
	"uringrt_close_lingers_cut_total":        "counter",
	// gauges
	"uringrt_connections_active":    "gauge",
	"uringrt_worker_queue_depth":    "gauge",
	"uringrt_backend_info":          "gauge",
	"uringrt_inflight_ops":          "gauge",
	"uringrt_output_buffered_bytes": "gauge",
	// histograms
	"uringrt_cqes_per_enter":              "histogram",
	"uringrt_taskwork_batch_size":         "histogram",
	"uringrt_worker_batch_size":           "histogram",
	"uringrt_blocking_queue_wait_seconds": "histogram",
}

const (
	dashboardPath = "grafana/uringrt.json"
	seccompPath   = "seccomp-io_uring.json"
)

func TestDashboardUsesOnlyKnownMetrics(t *testing.T) {
	names, err := DashboardMetricNames(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatal("dashboard uses no uringrt metrics")
	}
	for _, n := range names {
		if _, ok := knownMetrics[n]; !ok {
			t.Errorf("dashboard queries %q, which the runtime does not export", n)
		}
	}
}

// TestDashboardSeriesSuffixes checks the raw series names: a histogram is
// queried only through _bucket/_sum/_count, and those suffixes appear only
// on histograms.
func TestDashboardSeriesSuffixes(t *testing.T) {
	doc := readJSON(t, dashboardPath)
	for _, expr := range DashboardExprs(doc) {
		for _, tok := range identRE.FindAllString(stringRE.ReplaceAllString(expr, `""`), -1) {
			if len(tok) < len(MetricPrefix) || tok[:len(MetricPrefix)] != MetricPrefix {
				continue
			}
			base := ExprMetricNames(tok)[0]
			kind := knownMetrics[base]
			if kind == "histogram" && base == tok {
				t.Errorf("expr %q uses histogram %s without _bucket/_sum/_count", expr, base)
			}
			if kind != "histogram" && base != tok {
				t.Errorf("expr %q uses %s, but %s is a %s, not a histogram", expr, tok, base, kind)
			}
		}
	}
}

// TestDashboardCoversMetrics makes sure the panels the dashboard promises are
// there: each family below is queried at least once.
func TestDashboardCoversMetrics(t *testing.T) {
	names, err := DashboardMetricNames(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"uringrt_cqes_reaped_total", "uringrt_read_bytes_total", "uringrt_written_bytes_total",
		"uringrt_enter_calls_total", "uringrt_cqes_per_enter", "uringrt_taskwork_batch_size",
		"uringrt_process_context_switches_total",
		"uringrt_connections_active", "uringrt_connections_accepted_total",
		"uringrt_connections_closed_total", "uringrt_connections_rejected_total",
		"uringrt_pollable_requests_total", "uringrt_sq_full_total", "uringrt_cq_overflows_total",
		"uringrt_buffer_ring_exhausted_total", "uringrt_worker_queue_depth",
		"uringrt_worker_works_run_total", "uringrt_backend_info",
		"uringrt_accept_errors_total", "uringrt_poll_arms_total", "uringrt_sqes_submitted_total",
		"uringrt_blocking_queue_wait_seconds", "uringrt_handler_panics_total", "uringrt_idle_polls_total",
	} {
		if !slices.Contains(names, want) {
			t.Errorf("dashboard has no query on %s", want)
		}
	}
}

func TestDashboardShape(t *testing.T) {
	doc := readJSON(t, dashboardPath).(map[string]any)
	if v, _ := doc["schemaVersion"].(float64); v < 36 {
		t.Errorf("schemaVersion = %v, want >= 36", doc["schemaVersion"])
	}
	var hasDS bool
	for _, v := range doc["templating"].(map[string]any)["list"].([]any) {
		v := v.(map[string]any)
		if v["type"] == "datasource" && v["query"] == "prometheus" {
			hasDS = true
		}
	}
	if !hasDS {
		t.Error("no Prometheus datasource template variable")
	}
	ids := map[float64]bool{}
	var tables int
	for _, p := range doc["panels"].([]any) {
		p := p.(map[string]any)
		id := p["id"].(float64)
		if ids[id] {
			t.Errorf("duplicate panel id %v", id)
		}
		ids[id] = true
		if p["type"] == "row" {
			continue
		}
		if p["type"] == "table" {
			tables++
		}
		ds, _ := p["datasource"].(map[string]any)
		if ds["uid"] != "${datasource}" {
			t.Errorf("panel %q datasource = %v, want the ${datasource} variable", p["title"], p["datasource"])
		}
		if ts, _ := p["targets"].([]any); len(ts) == 0 {
			t.Errorf("panel %q has no targets", p["title"])
		}
	}
	if tables == 0 {
		t.Error("no table panel (backend info)")
	}
}

func TestExprMetricNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`sum(rate(uringrt_cqes_reaped_total{loop="0"}[$__rate_interval]))`, []string{"uringrt_cqes_reaped_total"}},
		{`histogram_quantile(0.99, sum by (le) (rate(uringrt_cqes_per_enter_bucket[5m])))`, []string{"uringrt_cqes_per_enter"}},
		{`rate(uringrt_taskwork_batch_size_sum[1m]) / rate(uringrt_taskwork_batch_size_count[1m])`, []string{"uringrt_taskwork_batch_size"}},
		{`uringrt_backend_info{backend="uringrt_not_a_metric", kernel='uringrt_x'}`, []string{"uringrt_backend_info"}},
		{`go_goroutines + process_cpu_seconds_total`, nil},
		{`sum by (pool, worker) (uringrt_worker_queue_depth{instance=~"$instance"})`, []string{"uringrt_worker_queue_depth"}},
	} {
		if got := ExprMetricNames(tc.expr); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ExprMetricNames(%q) = %q, want %q", tc.expr, got, tc.want)
		}
	}
}

type seccompProfile struct {
	DefaultAction   string `json:"defaultAction"`
	DefaultErrnoRet *int   `json:"defaultErrnoRet"`
	ArchMap         []struct {
		Architecture     string   `json:"architecture"`
		SubArchitectures []string `json:"subArchitectures"`
	} `json:"archMap"`
	Syscalls []seccompRule `json:"syscalls"`
}

type seccompRule struct {
	Names    []string        `json:"names"`
	Action   string          `json:"action"`
	Args     json.RawMessage `json:"args"`
	Comment  string          `json:"comment"`
	Includes json.RawMessage `json:"includes"`
	Excludes json.RawMessage `json:"excludes"`
}

func TestSeccompProfile(t *testing.T) {
	data, err := os.ReadFile(seccompPath)
	if err != nil {
		t.Fatal(err)
	}
	var p seccompProfile
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatalf("%s: %v", seccompPath, err)
	}
	if p.DefaultAction != "SCMP_ACT_ERRNO" {
		t.Errorf("defaultAction = %q, want SCMP_ACT_ERRNO", p.DefaultAction)
	}
	if p.DefaultErrnoRet == nil || *p.DefaultErrnoRet != 1 {
		t.Errorf("defaultErrnoRet = %v, want 1 (EPERM)", p.DefaultErrnoRet)
	}
	var haveX86 bool
	for _, a := range p.ArchMap {
		haveX86 = haveX86 || a.Architecture == "SCMP_ARCH_X86_64"
	}
	if !haveX86 {
		t.Error("archMap lacks SCMP_ARCH_X86_64")
	}
	if len(p.Syscalls) < 10 {
		t.Fatalf("only %d syscall rules; want Docker's full default profile", len(p.Syscalls))
	}

	// Unconditionally allowed: action ALLOW, no argument filter, no
	// includes/excludes (which would tie the rule to arches or capabilities).
	uncond := map[string]*seccompRule{}
	for i := range p.Syscalls {
		r := &p.Syscalls[i]
		if len(r.Names) == 0 || r.Action == "" {
			t.Errorf("rule %d: names=%q action=%q: both are required", i, r.Names, r.Action)
		}
		if r.Action == "SCMP_ACT_ALLOW" && len(r.Args) == 0 && len(r.Includes) == 0 && len(r.Excludes) == 0 {
			for _, n := range r.Names {
				uncond[n] = r
			}
		}
	}
	for _, sc := range []string{"io_uring_setup", "io_uring_enter", "io_uring_register"} {
		r := uncond[sc]
		if r == nil {
			t.Errorf("%s is not allowed unconditionally", sc)
			continue
		}
		if r.Comment == "" {
			t.Errorf("%s is allowed by a rule without a comment saying why", sc)
		}
	}
	// Syscalls the server needs anyway; a sanity check that this is the
	// default profile and not a stub.
	for _, sc := range []string{"accept4", "epoll_pwait", "read", "write", "mmap", "futex", "eventfd2", "getrusage"} {
		if uncond[sc] == nil {
			t.Errorf("%s is not allowed", sc)
		}
	}
}

func readJSON(t *testing.T, path string) any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}
