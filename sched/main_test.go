package sched

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the run if any goroutine (a worker) outlives its test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testTimeout bounds every wait in the tests.
const testTimeout = 10 * time.Second

type poolKind struct {
	name string
	new  func(Options) Pool
}

var kinds = []poolKind{
	{"fixed", func(o Options) Pool { return NewFixed(o) }},
	{"shared", func(o Options) Pool { return NewShared(o) }},
}

// closePool closes p, draining, and fails the test if it takes too long.
func closePool(t testing.TB, p Pool, mode CloseMode) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := p.Close(ctx, mode); err != nil {
		t.Fatalf("Close(%v): %v", mode, err)
	}
}

// wait receives from ch or fails the test after testTimeout.
func wait(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(testTimeout):
		t.Fatalf("timeout waiting for %s", what)
	}
}

// gate is a work that signals started and blocks until released.
type gate struct {
	started, release chan struct{}
}

func newGate() *gate { return &gate{make(chan struct{}), make(chan struct{})} }

func (g *gate) fn() {
	close(g.started)
	<-g.release
}

func sum(s Stats, f func(WorkerStats) uint64) uint64 {
	var n uint64
	for _, w := range s.Workers {
		n += f(w)
	}
	return n
}

func runOf(w WorkerStats) uint64       { return w.Run }
func cancelledOf(w WorkerStats) uint64 { return w.Cancelled }
func panicsOf(w WorkerStats) uint64    { return w.Panics }

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
