package main

import (
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// reconnectFlood runs workers clients against addr until stop closes: each
// connects, sends nothing, waits until the server closes its connection
// (evicts it), and connects again at once. It returns how many
// connections they made; wait ends it.
func reconnectFlood(addr string, workers int, stop chan struct{}) (connects *atomic.Int64, wait func()) {
	connects = new(atomic.Int64)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			buf := make([]byte, 1)
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, err := net.DialTimeout("tcp", addr, time.Second)
				if err != nil {
					continue // a full backlog dropped the SYN
				}
				connects.Add(1)
				c.SetReadDeadline(time.Now().Add(2 * time.Second))
				c.Read(buf) // until evicted (EOF), or 2 s
				c.Close()
			}
		})
	}
	return connects, wg.Wait
}

// TestProbesUnderReconnectFlood: while clients reconnect as soon as the
// metrics server evicts them, sending nothing, 20 of 20 /healthz and
// /readyz probes answer. The cap is 8 here, so that before a probe was
// evicted whenever 8 flood connections were accepted between its accept
// and the server reading its request (4-6 of 20 answered); the issue's
// 200 workers against the cap of 64: 16-18 of 20. Now silent connections
// come to the listener only after about a second (TCP_DEFER_ACCEPT), a
// probe at once with its request, and a connection whose request came
// (read, or waiting in its socket) is evicted only after every silent
// one. The flood must have reached the cap (evictions during the probes).
// URINGRT_PROBE_FLOOD=workers runs that many against the default cap.
func TestProbesUnderReconnectFlood(t *testing.T) {
	workers, max := 64, 8
	if s := os.Getenv("URINGRT_PROBE_FLOOD"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("URINGRT_PROBE_FLOOD=%q: want a number of workers", s)
		}
		workers, max = n, metricsMaxConnsDefault
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &health{}
	h.listening.Store(true)
	m := newMetricsServer(ln, prometheus.NewRegistry(), h, metricsConfig{maxConns: max, idleTimeout: 30 * time.Second})
	go m.serve()
	defer m.srv.Close()
	floodProbes(t, ln.Addr().String(), workers, m.ln.evictions)
}

// floodProbes runs a reconnect flood of workers clients against the
// metrics server at addr and probes it 20 times; evictions (nil: not
// checked) counts the server's evictions.
func floodProbes(t *testing.T, addr string, workers int, evictions func() uint64) {
	stop := make(chan struct{})
	connects, wait := reconnectFlood(addr, workers, stop)
	defer wait()
	defer close(stop)
	time.Sleep(1500 * time.Millisecond) // past the deferral: the flood fills the slots
	var ev0 uint64
	if evictions != nil {
		ev0 = evictions()
	}
	c0 := connects.Load()
	start := time.Now()
	answered := 0
	for i := range 20 {
		path := []string{"/healthz", "/readyz"}[i%2]
		code, err := probe(addr, path)
		if err != nil || code != http.StatusOK {
			t.Errorf("probe %d of 20 (%s): %d, %v", i+1, path, code, err)
		} else {
			answered++
		}
		time.Sleep(50 * time.Millisecond)
	}
	el := time.Since(start)
	n := connects.Load() - c0
	t.Logf("%d workers: %d connects during the probes (%.0f/s); %d of 20 probes answered", workers, n, float64(n)/el.Seconds(), answered)
	if evictions != nil {
		ev := evictions() - ev0
		t.Logf("%d evictions during the probes", ev)
		if ev == 0 {
			t.Error("no eviction during the probes: the flood did not reach the cap")
		}
	}
}

// TestProbesUnderReconnectFloodEveryAPI: the echo-server binary, on each
// API and on -backend std, answers 20 of 20 probes under a reconnect
// flood of 200 clients on its metrics port (the attack, shorter),
// and echoes after it.
func TestProbesUnderReconnectFloodEveryAPI(t *testing.T) {
	for _, args := range [][]string{{"-api", "conn"}, {"-api", "callback"}, {"-api", "callback", "-backend", "std"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			s := startServer(t, args...)
			floodProbes(t, s.metric, 200, nil)
			echoMsgs(t, s.addr, 5, 3)
		})
	}
}
