package sched

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestCollectorLint(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			p := k.new(Options{Workers: 2})
			for i := 0; i < 100; i++ {
				must(t, p.Go(func() {}))
			}
			closePool(t, p, Drain)
			c := NewCollector(p, k.name)
			problems, err := testutil.CollectAndLint(c)
			if err != nil {
				t.Fatal(err)
			}
			for _, pr := range problems {
				t.Errorf("lint: %s: %s", pr.Metric, pr.Text)
			}
			reg := prometheus.NewPedanticRegistry()
			must(t, reg.Register(c))
			if _, err := reg.Gather(); err != nil {
				t.Fatal(err)
			}
			// 2 workers x 4 per-worker families + depth (2 or 1) + histogram.
			want := 2*4 + 2 + 1
			if k.name == "shared" {
				want = 2*4 + 1 + 1
			}
			if n := testutil.CollectAndCount(c); n != want {
				t.Fatalf("%d series, want %d", n, want)
			}
		})
	}
}

func TestCollectorValues(t *testing.T) {
	p := NewFixed(Options{Workers: 2})
	for i := 0; i < 6; i++ {
		must(t, p.Go(func() {}))
	}
	closePool(t, p, Drain)
	const want = `
# HELP uringrt_worker_works_run_total Works whose function the worker called, including ones that panicked.
# TYPE uringrt_worker_works_run_total counter
uringrt_worker_works_run_total{pool="p",worker="0"} 3
uringrt_worker_works_run_total{pool="p",worker="1"} 3
# HELP uringrt_worker_queue_depth Works handed to the worker and not yet finished (shared pools: works in the shared list, worker="shared").
# TYPE uringrt_worker_queue_depth gauge
uringrt_worker_queue_depth{pool="p",worker="0"} 0
uringrt_worker_queue_depth{pool="p",worker="1"} 0
`
	err := testutil.CollectAndCompare(NewCollector(p, "p"), strings.NewReader(want),
		"uringrt_worker_works_run_total", "uringrt_worker_queue_depth")
	if err != nil {
		t.Fatal(err)
	}
	// The histogram counts every batch once: its count equals the sum of
	// Batches and its sum the 6 works.
	if n := sum(p.Stats(), func(w WorkerStats) uint64 { return w.BatchSizeSum }); n != 6 {
		t.Fatalf("batch size sum %d, want 6", n)
	}
}
