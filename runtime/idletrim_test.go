package uringrt

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// TestIdleLoopDropsPools: a burst of connections whose replies are queued
// together grows the loop's pool of free output chunks past its floor; a
// second or two later the loop holds none of them (before, the pool kept
// what the burst had held until later flushes shrank it, so an idle server
// stayed that much larger for good: 3 MiB here).
func TestIdleLoopDropsPools(t *testing.T) {
	rt, err := New(Config{Loops: 1, Backend: BackendUring})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	reply := make([]byte, 3000)
	ln := serveCB(t, rt, HandlerFuncs{Data: func(c *CallbackConn, data []byte) { c.Write(reply) }})
	const n = 1000
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	// All at once, so the replies are queued in the same iterations.
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetDeadline(time.Now().Add(20 * time.Second))
			c.Write([]byte("x"))
			io.ReadFull(c, make([]byte, len(reply)))
		}()
	}
	wg.Wait()
	l := rt.loops[0]
	pooled := func() int {
		ch := make(chan int, 1)
		l.post(request{kind: reqFunc, fn: func() { ch <- l.chunks.bytes + len(l.streamBufs)*streamBufSize }})
		return <-ch
	}
	peak := pooled()
	end := time.Now().Add(20 * time.Second)
	for pooled() > 0 && time.Now().Before(end) {
		time.Sleep(1500 * time.Millisecond) // (a poll wakes the loop: not every second)
	}
	if left := pooled(); left > 0 {
		t.Fatalf("an idle loop keeps %d bytes of free output buffers (%d right after the burst)", left, peak)
	}
	t.Logf("free output buffers right after the burst: %d bytes; idle: none", peak)
}
