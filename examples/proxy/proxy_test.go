package main

import (
	"crypto/sha256"
	"io"
	"net"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uringrt/uringrt/runtime"
)

// rss returns the process's resident set size (bytes).
func rss(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// TestProxySlowClient: an upstream sends 64 MiB through the proxy to a
// client reading at 16 MiB/s. The client gets every byte (SHA-256), and
// the process's RSS grows by less than 32 MiB while the stream runs: the
// proxy pauses the upstream instead of queueing what the client has not
// read.
func TestProxySlowClient(t *testing.T) {
	const total = 64 << 20
	const rate = 16 << 20 // bytes/s the client reads
	for _, backend := range []uringrt.Backend{uringrt.BackendUring, uringrt.BackendStd} {
		t.Run(backend.String(), func(t *testing.T) {
			if backend == uringrt.BackendStd && testing.Short() {
				t.Skip("short")
			}
			up, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer up.Close()
			sent := make(chan [32]byte, 1)
			go func() {
				c, err := up.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				h := sha256.New()
				chunk := make([]byte, 1<<20)
				for i := range total / len(chunk) {
					for j := range chunk {
						chunk[j] = byte(i*31 + j*7 + j>>9)
					}
					h.Write(chunk)
					if _, err := c.Write(chunk); err != nil {
						t.Errorf("upstream write: %v", err)
						return
					}
				}
				sent <- [32]byte(h.Sum(nil))
			}()

			rt, err := uringrt.New(uringrt.Config{Loops: 2, Backend: backend})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			ln, err := rt.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			p := &Proxy{Runtime: rt, Upstream: up.Addr().String(), HighWater: 256 << 10, LowWater: 64 << 10, DialWait: 5 * time.Second}
			go rt.Serve(ln, p.Handler())
			defer ln.Close()

			debug.FreeOSMemory()
			base := rss(t)
			var peak atomic.Int64
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				tick := time.NewTicker(20 * time.Millisecond)
				defer tick.Stop()
				for {
					if r := rss(t); r > peak.Load() {
						peak.Store(r)
					}
					select {
					case <-stop:
						return
					case <-tick.C:
					}
				}
			}()

			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetReadDeadline(time.Now().Add(60 * time.Second))
			h := sha256.New()
			buf := make([]byte, 64<<10)
			start := time.Now()
			n := 0
			for n < total {
				m, err := c.Read(buf)
				h.Write(buf[:m])
				n += m
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("client read after %d bytes: %v", n, err)
				}
				// Pace to rate: sleep until n bytes are due.
				if ahead := time.Duration(float64(n)/rate*float64(time.Second)) - time.Since(start); ahead > 0 {
					time.Sleep(ahead)
				}
			}
			close(stop)
			<-done
			el := time.Since(start)
			if n != total {
				t.Fatalf("client got %d of %d bytes", n, total)
			}
			select {
			case want := <-sent:
				if [32]byte(h.Sum(nil)) != want {
					t.Fatal("checksum differs: bytes lost, duplicated or reordered")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("upstream did not finish")
			}
			growth := peak.Load() - base
			t.Logf("64 MiB in %v (%.1f MiB/s); RSS %d MiB at start, growth %.1f MiB", el.Round(time.Millisecond),
				float64(total)/el.Seconds()/(1<<20), base>>20, float64(growth)/(1<<20))
			if !raceEnabled && growth >= 32<<20 {
				t.Errorf("RSS grew by %.1f MiB (bound 32 MiB)", float64(growth)/(1<<20))
			}
			// After the upstream's end, the client sees EOF once all is sent.
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if m, err := c.Read(buf); err != io.EOF {
				t.Errorf("after the stream: %d bytes, %v; want EOF", m, err)
			}
		})
	}
}
