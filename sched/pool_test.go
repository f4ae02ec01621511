package sched

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestKeyOrder(t *testing.T) {
	for _, tc := range []struct {
		workers, submitters, keysEach, perKey int
	}{
		{1, 4, 4, 200},
		{3, 8, 5, 300},
		{8, 16, 3, 200},
	} {
		t.Run(fmt.Sprintf("workers=%d/submitters=%d", tc.workers, tc.submitters), func(t *testing.T) {
			p := NewFixed(Options{Workers: tc.workers})
			nkeys := tc.submitters * tc.keysEach
			// got[k] is appended to only by the worker of key k, one work
			// at a time; read after Close (which waits for the workers).
			got := make([][]int, nkeys)
			var wg sync.WaitGroup
			for s := 0; s < tc.submitters; s++ {
				wg.Go(func() {
					for i := 0; i < tc.perKey; i++ {
						for k := s * tc.keysEach; k < (s+1)*tc.keysEach; k++ {
							seq := i
							fn := func() { got[k] = append(got[k], seq) }
							if i%2 == 0 {
								_, err := p.SubmitKey(uint64(k), fn)
								must(t, err)
							} else {
								must(t, p.GoKey(uint64(k), fn))
							}
						}
					}
				})
			}
			wg.Wait()
			closePool(t, p, Drain)
			for k, seqs := range got {
				if len(seqs) != tc.perKey {
					t.Fatalf("key %d: %d works ran, want %d", k, len(seqs), tc.perKey)
				}
				for i, v := range seqs {
					if v != i {
						t.Fatalf("key %d: position %d ran work %d", k, i, v)
					}
				}
			}
		})
	}
}

func TestRoundRobinSpread(t *testing.T) {
	for _, workers := range []int{1, 2, 3, 4, 7} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			p := NewFixed(Options{Workers: workers})
			const per = 100
			for i := 0; i < workers*per; i++ {
				if i%2 == 0 {
					must(t, p.Go(func() {}))
				} else {
					_, err := p.Submit(func() {})
					must(t, err)
				}
			}
			closePool(t, p, Drain)
			for i, w := range p.Stats().Workers {
				if w.Run != per {
					t.Errorf("worker %d ran %d works, want %d", i, w.Run, per)
				}
			}
		})
	}
}

func TestCancelBeforeStart(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			p := k.new(Options{Workers: 1})
			g := newGate()
			must(t, p.Go(g.fn))
			wait(t, g.started, "gate")
			var ran atomic.Bool
			w, err := p.Submit(func() { ran.Store(true) })
			must(t, err)
			if r := p.Cancel(w); r != Cancelled {
				t.Fatalf("Cancel = %v, want Cancelled", r)
			}
			if r := p.Cancel(w); r != AlreadyCancelled {
				t.Fatalf("second Cancel = %v, want AlreadyCancelled", r)
			}
			close(g.release)
			closePool(t, p, Drain)
			if ran.Load() {
				t.Fatal("cancelled work ran")
			}
			if s := w.State(); s != WorkCancelled {
				t.Fatalf("State = %v", s)
			}
			st := p.Stats()
			if c, r := sum(st, cancelledOf), sum(st, runOf); c != 1 || r != 1 {
				t.Fatalf("cancelled=%d run=%d, want 1 1", c, r)
			}
		})
	}
}

// TestCancelInsideTakenBatch cancels a work after its worker has taken it
// into the batch it is running (the gap the original series left open).
// Deterministic: g0 blocks the worker while a, b and c are queued, so the
// next swap takes [a b c] at once; a then blocks inside that batch.
func TestCancelInsideTakenBatch(t *testing.T) {
	p := NewFixed(Options{Workers: 1})
	g0, a := newGate(), newGate()
	must(t, p.Go(g0.fn))
	wait(t, g0.started, "g0")
	var bRan, cRan atomic.Bool
	_, err := p.Submit(a.fn)
	must(t, err)
	wb, err := p.Submit(func() { bRan.Store(true) })
	must(t, err)
	wc, err := p.Submit(func() { cRan.Store(true) })
	must(t, err)
	close(g0.release)
	wait(t, a.started, "a")

	w := p.workers[0]
	w.mu.Lock()
	queued := len(w.list)
	w.mu.Unlock()
	if queued != 0 || w.depth() != 3 {
		t.Fatalf("list=%d depth=%d: b and c are not in the taken batch", queued, w.depth())
	}
	if r := p.Cancel(wc); r != Cancelled {
		t.Fatalf("Cancel(c) = %v, want Cancelled", r)
	}
	close(a.release)
	closePool(t, p, Drain)
	if cRan.Load() || !bRan.Load() {
		t.Fatalf("b ran=%v c ran=%v, want true false", bRan.Load(), cRan.Load())
	}
	if wb.State() != WorkDone || wc.State() != WorkCancelled {
		t.Fatalf("states b=%v c=%v", wb.State(), wc.State())
	}
	ws := p.Stats().Workers[0]
	if ws.Cancelled != 1 || ws.Run != 3 || ws.Batches != 2 || ws.BatchSizeSum != 4 || ws.QueueDepth != 0 {
		t.Fatalf("stats %+v", ws)
	}
}

func TestCancelAfterStart(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			p := k.new(Options{Workers: 2})
			g := newGate()
			w, err := p.Submit(g.fn)
			must(t, err)
			wait(t, g.started, "work")
			if r := p.Cancel(w); r != Started {
				t.Fatalf("Cancel(running) = %v, want Started", r)
			}
			close(g.release)
			closePool(t, p, Drain)
			if r := p.Cancel(w); r != Started {
				t.Fatalf("Cancel(done) = %v, want Started", r)
			}
			if w.State() != WorkDone {
				t.Fatalf("State = %v", w.State())
			}
		})
	}
}

func TestCancelNotFound(t *testing.T) {
	a, b := NewFixed(Options{Workers: 1}), NewShared(Options{Workers: 1})
	defer closePool(t, a, Drain)
	defer closePool(t, b, Drain)
	w, err := a.Submit(func() {})
	must(t, err)
	for _, tc := range []struct {
		p    Pool
		w    *Work
		want CancelResult
	}{{a, nil, NotFound}, {b, nil, NotFound}, {b, w, NotFound}} {
		if r := tc.p.Cancel(tc.w); r != tc.want {
			t.Errorf("Cancel = %v, want %v", r, tc.want)
		}
	}
}

func TestCloseDrain(t *testing.T) {
	for _, k := range kinds {
		for _, workers := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/workers=%d", k.name, workers), func(t *testing.T) {
				p := k.new(Options{Workers: workers})
				var ran atomic.Int64
				const n = 5000
				for i := 0; i < n; i++ {
					must(t, p.Go(func() { ran.Add(1) }))
				}
				closePool(t, p, Drain)
				if ran.Load() != n || sum(p.Stats(), runOf) != n {
					t.Fatalf("ran %d (stats %d), want %d", ran.Load(), sum(p.Stats(), runOf), n)
				}
				if q := p.Stats().Queued; q != 0 {
					t.Fatalf("Queued = %d after Close", q)
				}
			})
		}
	}
}

// expired returns a context that has already ended: Close with it does all
// its work but does not wait.
func expired() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func TestCloseCancelQueued(t *testing.T) {
	for _, k := range kinds {
		for _, workers := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/workers=%d", k.name, workers), func(t *testing.T) {
				p := k.new(Options{Workers: workers})
				gates := make([]*gate, workers)
				for i := range gates {
					gates[i] = newGate()
					// FixedPool: round-robin puts one gate on each worker.
					// SharedPool: each idle worker takes one.
					must(t, p.Go(gates[i].fn))
				}
				for _, g := range gates {
					wait(t, g.started, "gate")
				}
				var ran atomic.Int64
				const n = 300
				works := make([]*Work, 0, n)
				for i := 0; i < n; i++ {
					if i%3 == 0 {
						must(t, p.Go(func() { ran.Add(1) }))
						continue
					}
					w, err := p.Submit(func() { ran.Add(1) })
					must(t, err)
					works = append(works, w)
				}
				if err := p.Close(expired(), CancelQueued); !errors.Is(err, context.Canceled) {
					t.Fatalf("Close(expired ctx) = %v, want context.Canceled", err)
				}
				for _, w := range works {
					if r := p.Cancel(w); r != AlreadyCancelled {
						t.Fatalf("Cancel after Close(CancelQueued) = %v", r)
					}
				}
				for _, g := range gates {
					close(g.release)
				}
				closePool(t, p, CancelQueued)
				if ran.Load() != 0 {
					t.Fatalf("%d queued works ran", ran.Load())
				}
				st := p.Stats()
				if c, r := sum(st, cancelledOf), sum(st, runOf); c != n || r != uint64(workers) {
					t.Fatalf("cancelled=%d run=%d, want %d %d", c, r, n, workers)
				}
			})
		}
	}
}

// TestCloseCancelQueuedInBatch: Close(CancelQueued) also cancels the works
// of a batch the worker has already taken.
func TestCloseCancelQueuedInBatch(t *testing.T) {
	p := NewFixed(Options{Workers: 1})
	g0, a := newGate(), newGate()
	must(t, p.Go(g0.fn))
	wait(t, g0.started, "g0")
	must(t, p.Go(a.fn))
	var ran atomic.Int64
	w, err := p.Submit(func() { ran.Add(1) })
	must(t, err)
	must(t, p.Go(func() { ran.Add(1) }))
	close(g0.release)
	wait(t, a.started, "a") // [a w go] is the running batch
	if err := p.Close(expired(), CancelQueued); err == nil {
		t.Fatal("Close(expired ctx) = nil while a work blocks")
	}
	close(a.release)
	closePool(t, p, CancelQueued)
	if ran.Load() != 0 || w.State() != WorkCancelled {
		t.Fatalf("ran=%d state=%v", ran.Load(), w.State())
	}
	if c := p.Stats().Workers[0].Cancelled; c != 2 {
		t.Fatalf("cancelled = %d, want 2", c)
	}
}

func TestCloseDeadline(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			p := k.new(Options{Workers: 1})
			g := newGate()
			must(t, p.Go(g.fn))
			wait(t, g.started, "gate")
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			if err := p.Close(ctx, Drain); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Close = %v, want DeadlineExceeded", err)
			}
			close(g.release)
			closePool(t, p, Drain)
		})
	}
}

func TestSubmitAfterClose(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			p := k.new(Options{Workers: 2})
			closePool(t, p, Drain)
			fn := func() { t.Error("work ran after Close") }
			_, err1 := p.Submit(fn)
			_, err2 := p.SubmitKey(7, fn)
			for i, err := range []error{err1, err2, p.Go(fn), p.GoKey(7, fn)} {
				if !errors.Is(err, ErrClosed) {
					t.Errorf("call %d: err = %v, want ErrClosed", i, err)
				}
			}
		})
	}
}

func TestPanicRecovery(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			var (
				mu     sync.Mutex
				values []any
				stacks []string
			)
			p := k.new(Options{Workers: 1, OnPanic: func(v any, stack []byte) {
				mu.Lock()
				values = append(values, v)
				stacks = append(stacks, string(stack))
				mu.Unlock()
			}})
			g := newGate()
			must(t, p.Go(g.fn))
			wait(t, g.started, "gate")
			// Queued behind the gate, so on a FixedPool they form one batch:
			// the panic is in its middle.
			var ran atomic.Int64
			must(t, p.Go(func() { ran.Add(1) }))
			w, err := p.Submit(func() { panic("boom") })
			must(t, err)
			must(t, p.Go(func() { ran.Add(1) }))
			must(t, p.Go(func() { panic(errors.New("bang")) }))
			must(t, p.Go(func() { ran.Add(1) }))
			close(g.release)
			closePool(t, p, Drain)
			if ran.Load() != 3 {
				t.Fatalf("%d of 3 healthy works ran", ran.Load())
			}
			if w.State() != WorkDone {
				t.Fatalf("panicked work state %v", w.State())
			}
			mu.Lock()
			defer mu.Unlock()
			if len(values) != 2 || values[0] != "boom" || fmt.Sprint(values[1]) != "bang" {
				t.Fatalf("OnPanic values %v", values)
			}
			if !strings.Contains(stacks[0], "TestPanicRecovery") {
				t.Fatalf("stack does not show the panicking work:\n%s", stacks[0])
			}
			st := p.Stats()
			if pc, r := sum(st, panicsOf), sum(st, runOf); pc != 2 || r != 6 {
				t.Fatalf("panics=%d run=%d, want 2 6", pc, r)
			}
		})
	}
}

func TestStatsDepth(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			p := k.new(Options{Workers: 1})
			g := newGate()
			must(t, p.Go(g.fn))
			wait(t, g.started, "gate")
			for i := 0; i < 10; i++ {
				must(t, p.Go(func() {}))
			}
			st := p.Stats()
			want := int64(11) // the gate's work, still running, counts
			if st.Queued != want {
				t.Fatalf("Queued = %d, want %d", st.Queued, want)
			}
			close(g.release)
			closePool(t, p, Drain)
		})
	}
}

func TestBatchBucket(t *testing.T) {
	for _, tc := range []struct{ n, b int }{
		{0, 0}, {1, 0}, {2, 1}, {3, 2}, {4, 2}, {5, 3}, {1024, 10}, {1025, 11}, {1 << 20, 11},
	} {
		if b := batchBucket(tc.n); b != tc.b {
			t.Errorf("batchBucket(%d) = %d, want %d", tc.n, b, tc.b)
		}
		if tc.n > 0 && float64(tc.n) > BatchBucketUpperBound(tc.b) {
			t.Errorf("%d above bound of bucket %d", tc.n, tc.b)
		}
	}
}

func TestRing(t *testing.T) {
	var r ring
	next, want := 0, 0
	for round := 0; round < 50; round++ {
		for i := 0; i < round*7%300; i++ {
			r.push(item{w: &Work{owner: Pool(nil)}, fn: nil})
			r.buf[(r.head+r.n-1)&(len(r.buf)-1)].w.state.Store(uint32(next))
			next++
		}
		for i := 0; i < round*5%300 && r.n > 0; i++ {
			if got := int(r.pop().w.state.Load()); got != want {
				t.Fatalf("pop %d, want %d", got, want)
			}
			want++
		}
		seen := 0
		r.each(func(it *item) {
			if int(it.w.state.Load()) != want+seen {
				t.Fatalf("each order broken")
			}
			seen++
		})
		if seen != r.n || r.n != next-want {
			t.Fatalf("n=%d seen=%d queued=%d", r.n, seen, next-want)
		}
	}
}
