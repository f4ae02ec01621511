package uringprom

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/uringrt/uringrt/sched"
)

var poolKinds = []struct {
	name string
	new  func(sched.Options) sched.Pool
}{
	{"fixed", func(o sched.Options) sched.Pool { return sched.NewFixed(o) }},
	{"shared", func(o sched.Options) sched.Pool { return sched.NewShared(o) }},
}

func drain(t *testing.T, p sched.Pool) {
	t.Helper()
	if err := p.Close(context.Background(), sched.Drain); err != nil {
		t.Fatal(err)
	}
}

func TestPoolCollectorLint(t *testing.T) {
	for _, k := range poolKinds {
		t.Run(k.name, func(t *testing.T) {
			p := k.new(sched.Options{Workers: 2})
			for i := 0; i < 100; i++ {
				if err := p.Go(func() {}); err != nil {
					t.Fatal(err)
				}
			}
			drain(t, p)
			c := NewPoolCollector(p, k.name)
			problems, err := testutil.CollectAndLint(c)
			if err != nil {
				t.Fatal(err)
			}
			for _, pr := range problems {
				t.Errorf("lint: %s: %s", pr.Metric, pr.Text)
			}
			reg := prometheus.NewPedanticRegistry()
			if err := reg.Register(c); err != nil {
				t.Fatal(err)
			}
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

func TestPoolCollectorValues(t *testing.T) {
	p := sched.NewFixed(sched.Options{Workers: 2})
	for i := 0; i < 6; i++ {
		if err := p.Go(func() {}); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, p)
	const want = `
# HELP uringrt_worker_works_run_total Works whose function the worker called, including ones that panicked.
# TYPE uringrt_worker_works_run_total counter
uringrt_worker_works_run_total{pool="p",worker="0"} 3
uringrt_worker_works_run_total{pool="p",worker="1"} 3
# HELP uringrt_worker_queue_depth Works handed to the worker and not yet finished (shared pools: works in the shared list or being run, worker="shared").
# TYPE uringrt_worker_queue_depth gauge
uringrt_worker_queue_depth{pool="p",worker="0"} 0
uringrt_worker_queue_depth{pool="p",worker="1"} 0
`
	err := testutil.CollectAndCompare(NewPoolCollector(p, "p"), strings.NewReader(want),
		"uringrt_worker_works_run_total", "uringrt_worker_queue_depth")
	if err != nil {
		t.Fatal(err)
	}
	// The histogram counts every batch once: its sum is the 6 works.
	var n uint64
	for _, w := range p.Stats().Workers {
		n += w.BatchSizeSum
	}
	if n != 6 {
		t.Fatalf("batch size sum %d, want 6", n)
	}
}

// TestUnusedPoolNotExported: a pool never given a work exports no series
// (an idle 2-loop echo-server exported 100 per-worker series of its
// unused pool); once given one, every series of the pool is exported
// (TestRuntimeUnusedPoolNotExported: a runtime's own pool likewise).
func TestUnusedPoolNotExported(t *testing.T) {
	for _, k := range poolKinds {
		t.Run(k.name, func(t *testing.T) {
			p := k.new(sched.Options{Workers: 4})
			c := NewPoolCollector(p, k.name)
			if n := testutil.CollectAndCount(c); n != 0 {
				t.Fatalf("unused pool: %d series, want 0", n)
			}
			// A scrape while the pool's first work runs sees it used (a
			// shared pool's worker had taken it off the list and not yet
			// published its counters: no series).
			done := make(chan int)
			if err := p.Go(func() { done <- testutil.CollectAndCount(c) }); err != nil {
				t.Fatal(err)
			}
			if n := <-done; n == 0 {
				t.Fatal("pool running its first work: no series")
			}
			if n := testutil.CollectAndCount(c); n == 0 {
				t.Fatal("used pool: no series")
			}
			drain(t, p)
		})
	}
}
