package main

import (
	"net"
	"runtime"
	"testing"
	"time"
)

// TestNoAllocPerMessage checks that the ping-pong loop allocates nothing in
// steady state: the mallocs of the whole process during a window must be
// far fewer than the messages exchanged.
func TestNoAllocPerMessage(t *testing.T) {
	addr := startServer(t, func(c net.Conn) {
		buf := make([]byte, 4096)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			if _, err := c.Write(buf[:n]); err != nil {
				return
			}
		}
	})
	for _, depth := range []int{1, 4} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		s := &runState{base: time.Now(), errOut: func(msg string) { t.Error(msg) }}
		s.phase.Store(phaseMeasure)
		w := newWorker(0, c, 64, depth)
		done := make(chan struct{})
		go func() { w.run(s); close(done) }()
		time.Sleep(100 * time.Millisecond)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		n0 := w.done.Load()
		// A window of messages, not of time: a loaded machine (CI, -race)
		// may echo only a few hundred in 300 ms.
		n1 := n0
		for end := time.Now().Add(20 * time.Second); n1-n0 < 2000 && time.Now().Before(end); n1 = w.done.Load() {
			time.Sleep(20 * time.Millisecond)
		}
		runtime.ReadMemStats(&after)
		s.phase.Store(phaseStop)
		c.Close()
		<-done
		msgs, mallocs := n1-n0, after.Mallocs-before.Mallocs
		t.Logf("depth %d: %d messages, %d mallocs", depth, msgs, mallocs)
		if msgs < 1000 || mallocs > msgs/100 {
			t.Errorf("depth %d: %d mallocs for %d messages", depth, mallocs, msgs)
		}
	}
}
