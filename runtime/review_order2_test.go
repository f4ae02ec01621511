package uringrt

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// After a monitor takeover, the connection's spilled functions still run
// on their goroutine when the refusal window closes; functions it queues
// then run on the loop before them.
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
