package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestSumMetrics(t *testing.T) {
	text := `# HELP uringrt_cqes_reaped_total CQEs reaped.
# TYPE uringrt_cqes_reaped_total counter
uringrt_cqes_reaped_total{loop="0"} 100
uringrt_cqes_reaped_total{loop="1",odd="a} \"b\" c"} 50 1700000000000
uringrt_cqes_reaped_total_other 7
uringrt_enter_calls_total 3e1

uringrt_enter_calls_total{loop="1"} 10
`
	got, err := sumMetrics(strings.NewReader(text), metricCQEs, metricEnters)
	if err != nil {
		t.Fatal(err)
	}
	if got[metricCQEs] != 150 || got[metricEnters] != 40 {
		t.Errorf("got %v, want cqes 150 enters 40", got)
	}
}

// TestRunServerRingCounts: with -metrics-url the summary carries the
// server's SQEs and CQEs per message of the window and cqes_per_enter, from
// the counters' growth between the window's two scrapes; a server whose
// counters do not grow (readers in Go's netpoller) reads 0 per message.
func TestRunServerRingCounts(t *testing.T) {
	addr := startServer(t, echo)
	for _, tc := range []struct {
		name                 string
		sqes, cqes, enters   float64 // growth per scrape
		wantRatio, wantEnter float64 // cqes/sqes per message, cqes per enter (0: absent)
	}{
		{"ring", 1000, 2000, 10, 2, 200},
		{"netpoller", 0, 0, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var scrapes atomic.Int64
			ms := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := float64(scrapes.Add(1))
				fmt.Fprintf(w, "uringrt_sqes_submitted_total{loop=\"0\"} %g\n", 5+tc.sqes*n)
				fmt.Fprintf(w, "uringrt_cqes_reaped_total{loop=\"0\"} %g\n", 7+tc.cqes*n)
				fmt.Fprintf(w, "uringrt_enter_calls_total{loop=\"0\"} %g\n", 3+tc.enters*n)
			}))
			defer ms.Close()
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), testConfig(t, addr, "-metrics-url", ms.URL), &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
			}
			line := strings.TrimSpace(stdout.String())
			m := parseSummary(t, line)
			sq, okS := m["server_sqes_per_msg"]
			cq, okC := m["server_cqes_per_msg"]
			if !okS || !okC {
				t.Fatalf("summary %q lacks server_sqes_per_msg or server_cqes_per_msg", line)
			}
			if scrapes.Load() != 2 {
				t.Fatalf("%d scrapes, want 2 (the window's edges)", scrapes.Load())
			}
			if tc.wantRatio == 0 {
				if sq != 0 || cq != 0 {
					t.Errorf("summary %q: want 0 SQEs and CQEs per message", line)
				}
			} else if sq <= 0 || math.Abs(cq/sq-tc.wantRatio) > 0.1 {
				t.Errorf("summary %q: CQEs/SQEs per message %v/%v, want ratio %v", line, cq, sq, tc.wantRatio)
			}
			if e, ok := m["cqes_per_enter"]; tc.wantEnter == 0 && ok {
				t.Errorf("summary %q: cqes_per_enter with no enters", line)
			} else if tc.wantEnter != 0 && e != tc.wantEnter {
				t.Errorf("summary %q: cqes_per_enter %v, want %v", line, e, tc.wantEnter)
			}
		})
	}
}
