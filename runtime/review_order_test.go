package uringrt

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestReviewBatchSpillReorders: after a batch-budget spill (no takeover,
// so no refusal window), functions a connection queues in the next
// iteration run on the loop while its spilled ones still run on their
// goroutine: the connection's functions run out of the order queued.
func TestReviewBatchSpillReorders(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	var seq atomic.Int64
	var order []string
	var mu = make(chan struct{}, 1)
	addr := serveCB(t, rt, HandlerFuncs{Data: func(c *CallbackConn, d []byte) {
		for _, line := range strings.Fields(string(d)) {
			if !c.RunOnLoop(func() {
				for t0 := time.Now(); time.Since(t0) < 200*time.Microsecond; {
				}
				mu <- struct{}{}
				order = append(order, line)
				<-mu
				seq.Add(1)
				c.Write([]byte(line + "\n"))
			}) {
				t.Error("RunOnLoop refused")
			}
		}
	}}).Addr().String()
	c := dialStd(t, addr, 1)[0]
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var a, b, want strings.Builder
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&a, "m%d ", i)
		fmt.Fprintf(&want, "m%d\n", i)
	}
	for i := 20; i < 30; i++ {
		fmt.Fprintf(&b, "m%d ", i)
		fmt.Fprintf(&want, "m%d\n", i)
	}
	io.WriteString(c, a.String())
	time.Sleep(1500 * time.Microsecond)
	io.WriteString(c, b.String())
	got := make([]byte, want.Len())
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	_, takeovers := inlineCounts(rt)
	mu <- struct{}{}
	ord := append([]string(nil), order...)
	<-mu
	if string(got) != want.String() {
		t.Fatalf("%d takeover(s); functions of one connection ran out of the order queued:\n run order %v\n replies %q", takeovers, ord, got)
	}
}

// TestReviewTakeoverSpillReorders: after a monitor takeover, the
// connection's spilled functions may still run when the refusal window
// closes; functions it queues then must not run on the loop before them.
func TestReviewTakeoverSpillReorders(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	var mu sync.Mutex
	var order []string
	addr := serveCB(t, rt, HandlerFuncs{Data: func(c *CallbackConn, d []byte) {
		for _, line := range strings.Fields(string(d)) {
			if !c.RunOnLoop(func() {
				time.Sleep(20 * time.Millisecond)
				mu.Lock()
				order = append(order, line)
				mu.Unlock()
				c.Write([]byte(line + "\n"))
			}) {
				t.Errorf("RunOnLoop refused %s", line)
			}
		}
	}}).Addr().String()
	c := dialStd(t, addr, 1)[0]
	c.SetDeadline(time.Now().Add(20 * time.Second))
	var a, want strings.Builder
	for i := 0; i < 6; i++ {
		fmt.Fprintf(&a, "s%d ", i)
		fmt.Fprintf(&want, "s%d\n", i)
	}
	fmt.Fprintf(&want, "late\n")
	io.WriteString(c, a.String())
	time.Sleep(40 * time.Millisecond) // past the 8 ms refusal; s1..s5 (100 ms) still running off the loop
	io.WriteString(c, "late")
	got := make([]byte, want.Len())
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	_, tos := inlineCounts(rt)
	mu.Lock()
	ord := append([]string(nil), order...)
	mu.Unlock()
	if string(got) != want.String() {
		t.Fatalf("takeovers %d; run order %v", tos, ord)
	}
}
