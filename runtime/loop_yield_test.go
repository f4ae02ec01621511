package uringrt

import (
	"runtime"
	"sync"
	"testing"
)

// TestRunnableProbeSeesQueuedGoroutines: the probe a locked loop asks
// before it blocks (loop_yield.go) reports goroutines started but not yet
// run as runnable, and none once they have run. With GOMAXPROCS 1 no other
// P can run them meanwhile, so the answer is exact.
func TestRunnableProbeSeesQueuedGoroutines(t *testing.T) {
	p := newRunnableProbe()
	if p == nil {
		t.Fatal("no /sched/goroutines/runnable metric: this Go (1.26+ has it) would never yield for stranded goroutines")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var wg sync.WaitGroup
	release := make(chan struct{})
	for range 3 {
		wg.Add(1)
		go func() { defer wg.Done(); <-release }()
	}
	if !p.runnable() {
		t.Error("3 goroutines started and not yet run: runnable() = false")
	}
	close(release)
	wg.Wait()
	// Everything started above has run and exited; let anything else
	// the test binary woke meanwhile run too before asking again.
	quiet := false
	for range 100 {
		runtime.Gosched()
		if !p.runnable() {
			quiet = true
			break
		}
	}
	if !quiet {
		t.Error("runnable() stayed true with nothing left to run")
	}
}
