package uringrt

import (
	"io"
	"runtime"
	"testing"

	"github.com/uringrt/uringrt/runtime/experiment"
)

// TestConnReadWriteAllocsPerMessage: a ping-pong between two Conns of one
// runtime, through the pollable policy's read and write, allocates nothing
// per message under the hybrid, ring and async policies (the policy is an
// interface held by the Runtime; calling it must not allocate).
// experiment.PollBlocking is measured and logged only: it hands each operation to a
// worker as a closure. Run without -race (the race detector allocates).
func TestConnReadWriteAllocsPerMessage(t *testing.T) {
	for _, p := range []experiment.Pollable{experiment.PollHybrid, experiment.PollRing, experiment.PollAsync, experiment.PollBlocking} {
		t.Run(p.String(), func(t *testing.T) {
			rt := newRT(t, Config{Loops: 1, Switches: experiment.Switches{Pollable: p}})
			client, server := pair(t, rt, "tcp")
			buf := make([]byte, 12)
			round := func() {
				if _, err := client.Write(buf); err != nil {
					t.Fatal(err)
				}
				if _, err := io.ReadFull(server, buf); err != nil {
					t.Fatal(err)
				}
				if _, err := server.Write(buf); err != nil {
					t.Fatal(err)
				}
				if _, err := io.ReadFull(client, buf); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < 200; i++ { // warm up: slots made, buffers grown
				round()
			}
			const msgs = 2000
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			for i := 0; i < msgs; i++ {
				round()
			}
			runtime.ReadMemStats(&m1)
			per := float64(m1.Mallocs-m0.Mallocs) / msgs
			t.Logf("%s: %d round trips, %d allocations (%.4f per round trip)", p, msgs, m1.Mallocs-m0.Mallocs, per)
			if raceBuild() {
				return // -race allocates on its own; checked without -race
			}
			if p != experiment.PollBlocking && per > 0.05 {
				t.Fatalf("%.4f allocations per round trip on the %s Conn path, want 0", per, p)
			}
		})
	}
}
