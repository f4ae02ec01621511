package sched

import (
	"fmt"
	"sync/atomic"
	"testing"
)

// The seed's nop benchmark (DESIGN.md, experiment 2): one run is nopWorks
// works submitted by one goroutine in batches of nopBatch (100 submits, then
// the next 100, without waiting), each work a nop that decrements the run's
// counter; the run ends when the last work has run.
const (
	nopWorks = 200_000
	nopBatch = 100
)

// BenchmarkNop reports works/s for fixed vs shared pools. Sub-benchmarks
// alternate pool kinds per worker count so that machine noise hits both.
func BenchmarkNop(b *testing.B) {
	for _, workers := range []int{1, 2, 3, 4, 8} {
		for _, k := range kinds {
			b.Run(fmt.Sprintf("pool=%s/workers=%d", k.name, workers), func(b *testing.B) {
				benchNop(b, k.new(Options{Workers: workers}))
			})
		}
	}
}

func benchNop(b *testing.B, p Pool) {
	defer closePool(b, p, Drain)
	var left atomic.Int64
	done := make(chan struct{}, 1)
	nop := func() {
		if left.Add(-1) == 0 {
			done <- struct{}{}
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		left.Store(nopWorks)
		for s := 0; s < nopWorks; s += nopBatch {
			for range nopBatch {
				if err := p.Go(nop); err != nil {
					b.Fatal(err)
				}
			}
		}
		<-done
	}
	b.ReportMetric(float64(nopWorks)*float64(b.N)/b.Elapsed().Seconds(), "works/s")
}
