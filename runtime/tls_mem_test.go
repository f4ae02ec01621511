package uringrt

import (
	"crypto/tls"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"
)

// idleTLSHeap opens n TLS connections to a callback echo (one message
// each, then idle) and returns the heap bytes per connection.
func idleTLSHeap(t *testing.T, cfg Config, n int, profile string) float64 {
	rt := newRT(t, cfg)
	scfg, ccfg := tlsServerConfig(t)
	ln := serveCB(t, rt, tlsEcho(scfg, 10*time.Second, nil))
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	conns := make([]*tls.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < n; i++ {
		c, err := tls.Dial("tcp", ln.Addr().String(), ccfg)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		c.Write([]byte("hi"))
		buf := make([]byte, 2)
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond)
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	if profile != "" {
		f, _ := os.Create(profile)
		pprof.Lookup("heap").WriteTo(f, 0)
		f.Close()
	}
	// The client's conns are in the same heap: count a client's tls.Conn
	// as the server's (both sides hold one), halve the difference.
	return float64(ms1.HeapInuse-ms0.HeapInuse) / float64(n) / 2
}

func TestTLSIdleHeapReport(t *testing.T) {
	if os.Getenv("TLSMEM") == "" {
		t.Skip("TLSMEM=1")
	}
	runtime.MemProfileRate = 1
	t.Logf("shrink: %.0f", idleTLSHeap(t, Config{Loops: 1}, 500, "/tmp/tlsheap.prof"))
	t.Logf("keep: %.0f", idleTLSHeap(t, Config{Loops: 1, tlsKeepBuffers: true}, 500, ""))
}
