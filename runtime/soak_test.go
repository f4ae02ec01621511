package uringrt

import (
	"errors"
	"io"
	"math/rand"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSoakChurn is connection churn with echo traffic against a callback
// server and a net.Conn server on one runtime: connects, verified echoes,
// closes (a third of them by reset). Afterwards RSS, descriptors and
// goroutines return to their baseline.
//
// It runs 5 s by default and 60 s (about 20,000 connections) with
// URINGRT_SOAK=1:
//
//	URINGRT_SOAK=1 go test -run TestSoakChurn -v ./runtime/
func TestSoakChurn(t *testing.T) {
	dur := 5 * time.Second
	if os.Getenv("URINGRT_SOAK") == "1" {
		dur = 60 * time.Second
	}
	if end := relTestDeadline(t, dur+60*time.Second); time.Until(end) < dur+30*time.Second {
		t.Skipf("not enough time left for a %v soak", dur)
	}
	rt := newRT(t, Config{Loops: 2})
	cbLn := relServeCB(t, rt, relEchoHandler(false))
	connLn := relServeConnEcho(t, rt)
	addrs := []string{cbLn.Addr().String(), connLn.Addr().String()}

	// Warm up (first connections grow pools and buffers), then baseline.
	runChurn(t, addrs, 300*time.Millisecond, 4)
	settle := func() (fds, gs int, rss int64) {
		relWaitFor(2*time.Second, func() bool { return activeConns(rt) == 0 })
		time.Sleep(100 * time.Millisecond)
		runtime.GC()
		debug.FreeOSMemory()
		return countFDs(t), runtime.NumGoroutine(), relRssBytes(t)
	}
	fds0, gs0, rss0 := settle()

	start := time.Now()
	n, errs := runChurn(t, addrs, dur, 16)
	t.Logf("%d connections (%.0f/s) in %v, %d errors", n, float64(n)/time.Since(start).Seconds(), time.Since(start).Round(time.Millisecond), errs)
	if errs > 0 {
		t.Errorf("%d echoes failed", errs)
	}
	if n == 0 {
		t.Fatal("no connection completed")
	}

	// Tolerances: descriptors exact (every connection closed), goroutines
	// +5 (timers, pools' idle workers), RSS +32 MiB (heap fragmentation
	// and the GC's headroom; not proportional to the connections made).
	// The race detector's shadow memory is not returned to the OS, so
	// under -race RSS is reported, not checked.
	rssTol := int64(32 << 20)
	if raceBuild() {
		rssTol = 1 << 40
	}
	var fds, gs int
	var rss int64
	ok := relWaitFor(5*time.Second, func() bool {
		fds, gs, rss = settle()
		return fds <= fds0 && gs <= gs0+5 && rss <= rss0+rssTol
	})
	t.Logf("baseline fds %d goroutines %d RSS %d MiB; after fds %d goroutines %d RSS %d MiB", fds0, gs0, rss0>>20, fds, gs, rss>>20)
	if !ok {
		t.Fatalf("did not return to baseline: fds %d -> %d, goroutines %d -> %d, RSS %d -> %d MiB", fds0, fds, gs0, gs, rss0>>20, rss>>20)
	}
}

const churnRate = 350

// runChurn runs workers that connect, echo a verified message of random
// size, and close (a third by reset) until dur passes. It returns the
// number of connections completed and of failures.
func runChurn(t *testing.T, addrs []string, dur time.Duration, workers int) (int64, int64) {
	start := time.Now()
	end := start.Add(dur)
	var done, failed atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			wbuf, rbuf := make([]byte, 8192), make([]byte, 8192)
			for time.Now().Before(end) {
				// At most churnRate connections a second (about 20,000 in
				// 60 s), which keeps TIME_WAIT sockets within the port range.
				if float64(done.Load()) > churnRate*time.Since(start).Seconds() {
					time.Sleep(time.Millisecond)
					continue
				}
				c, err := net.DialTimeout("tcp", addrs[rng.Intn(len(addrs))], 5*time.Second)
				if err != nil {
					failed.Add(1)
					t.Logf("dial: %v", err)
					time.Sleep(10 * time.Millisecond)
					continue
				}
				c.SetDeadline(time.Now().Add(5 * time.Second))
				for m := rng.Intn(4); m >= 0; m-- {
					n := 1 + rng.Intn(len(wbuf))
					relFillPattern(wbuf[:n], int64(m))
					if _, err := c.Write(wbuf[:n]); err != nil {
						failed.Add(1)
						t.Logf("write: %v", err)
						break
					}
					if _, err := io.ReadFull(c, rbuf[:n]); err != nil {
						failed.Add(1)
						t.Logf("read: %v", err)
						break
					}
					if err := relCheckPattern(rbuf[:n], int64(m)); err != nil {
						failed.Add(1)
						t.Errorf("echo: %v", err)
						break
					}
				}
				switch rng.Intn(3) {
				case 0: // reset
					c.(*net.TCPConn).SetLinger(0)
				case 1: // half-close, wait for the server's close
					c.(*net.TCPConn).CloseWrite()
					if _, err := c.Read(rbuf[:1]); errors.Is(err, os.ErrDeadlineExceeded) {
						failed.Add(1)
						t.Logf("server did not close after half-close: %v", err)
					}
				}
				c.Close()
				done.Add(1)
			}
		}(w)
	}
	wg.Wait()
	return done.Load(), failed.Load()
}
