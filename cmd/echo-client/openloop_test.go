package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// runJSON runs the client with -json after the test defaults and returns
// its summary; a non-zero exit fails the test.
func runJSON(t *testing.T, addr string, args ...string) summary {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cfg := testConfig(t, addr, append([]string{"-json"}, args...)...)
	if code := run(context.Background(), cfg, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	var sum summary
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("summary %q: %v", stdout.String(), err)
	}
	t.Logf("%s: %s\n%s", strings.Join(args, " "), strings.TrimSpace(stdout.String()), stderr.String())
	return sum
}

var engines = []string{"uring", "net"}

// TestOpenLoopRate: the messages go out at -rate in total over the
// connections, not as fast as the server echoes them, and the open-loop
// fields are printed in order. The bounds are loose for a loaded machine: a
// closed loop here runs at many times the rate.
func TestOpenLoopRate(t *testing.T) {
	addr := startServer(t, echo)
	const rate = 2000
	for _, args := range [][]string{
		{"-engine", "uring"},
		{"-engine", "net"},
		{"-engine", "uring", "-depth", "3", "-s", "100"},
		{"-engine", "net", "-depth", "3", "-s", "100"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			sum := runJSON(t, addr, append(args, "-rate", "2000", "-d", "1s", "-warmup", "200ms")...)
			o := sum.OpenLoop
			if o == nil || sum.P90us == nil || sum.P9999us == nil || sum.MaxUs == nil {
				t.Fatalf("open-loop fields missing: %+v", sum)
			}
			if sum.Errors != 0 || o.Rate != rate {
				t.Errorf("errors=%d rate=%v, want 0 and %d", sum.Errors, o.Rate, rate)
			}
			for name, got := range map[string]int64{"tps": sum.TPS, "sent_rate": o.SentRate} {
				if got < rate/4 || got > rate*3/2 {
					t.Errorf("%s=%d, want about %d msgs/s", name, got, rate)
				}
			}
			ps := []int64{sum.P50us, *sum.P90us, sum.P99us, sum.P999us, *sum.P9999us, *sum.MaxUs}
			for i := 1; i < len(ps); i++ {
				if ps[i] < ps[i-1] {
					t.Errorf("percentiles p50 p90 p99 p99.9 p99.99 max not ordered: %v", ps)
				}
			}
		})
	}
}

// stallOnce echoes; the connection whose read takes the server past
// after bytes in total sleeps stall once before echoing it.
func stallOnce(after int64, stall time.Duration) func(net.Conn) {
	var total atomic.Int64
	var once sync.Once
	return func(c net.Conn) {
		buf := make([]byte, 4096)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				if v := total.Add(int64(n)); v >= after && v-int64(n) < after {
					once.Do(func() { time.Sleep(stall) })
				}
				if _, err := c.Write(buf[:n]); err != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
}

// TestOpenLoopCountsStall: a server that stalls one connection for 200 ms
// in the measured window. In open loop the messages due on it during the
// stall wait in the client and their latency counts from their due time,
// so p99.9 shows the stall (about 20 of 3,000 samples are over 100 ms).
// Latency from the send instead (coordinated omission, as a closed loop
// measures) would give one slow sample, the one on the wire, and a p99.9
// of an ordinary round trip.
func TestOpenLoopCountsStall(t *testing.T) {
	const (
		stall = 200 * time.Millisecond
		size  = 12
	)
	// 2,000 msgs/s over 10 connections: one every 5 ms on each. The stall
	// starts at about message 1,000 (0.5 s), 0.3 s into the window.
	args := []string{"-rate", "2000", "-d", "1500ms", "-warmup", "200ms"}
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			addr := startServer(t, stallOnce(1000*size, stall))
			sum := runJSON(t, addr, append(args, "-engine", eng)...)
			if *sum.MaxUs < stall.Microseconds() {
				t.Errorf("max_us=%d, want >= %d: the stalled echo took that long", *sum.MaxUs, stall.Microseconds())
			}
			if sum.P999us < stall.Microseconds()/2 {
				t.Errorf("p999_us=%d, want >= %d: the messages due during the stall must count from their due time",
					sum.P999us, stall.Microseconds()/2)
			}
		})
	}
}

// startUnixServer serves handle on a unix socket in a temporary directory.
func startUnixServer(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "echo.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	return serveOn(t, ln, handle)
}

// TestUnixSocket: -addr takes a unix socket path (starting with / or
// unix:) or an abstract name (@), on both engines, in closed and open loop.
func TestUnixSocket(t *testing.T) {
	path := startUnixServer(t, echo)
	abstract := "@echo-client-test-" + filepath.Base(t.TempDir())
	ln, err := net.Listen("unix", abstract)
	if err != nil {
		t.Fatal(err)
	}
	serveOn(t, ln, echo)
	for _, eng := range engines {
		for _, addr := range []string{path, "unix:" + path, abstract} {
			for _, mode := range [][]string{nil, {"-rate", "1000"}} {
				t.Run(eng+" "+addr+" "+strings.Join(mode, " "), func(t *testing.T) {
					sum := runJSON(t, addr, append([]string{"-engine", eng}, mode...)...)
					if sum.TPS <= 0 || sum.Errors != 0 || sum.Conns != 10 {
						t.Errorf("tps=%d errors=%d conns=%d, want tps>0 errors=0 conns=10", sum.TPS, sum.Errors, sum.Conns)
					}
				})
			}
		}
	}
}

func TestSplitAddr(t *testing.T) {
	for addr, want := range map[string][2]string{
		"127.0.0.1:7777":  {"tcp", "127.0.0.1:7777"},
		"[::1]:7777":      {"tcp", "[::1]:7777"},
		"localhost:7777":  {"tcp", "localhost:7777"},
		"/run/echo.sock":  {"unix", "/run/echo.sock"},
		"./echo.sock":     {"unix", "./echo.sock"},
		"@echo":           {"unix", "@echo"},
		"unix:echo.sock":  {"unix", "echo.sock"},
		"unix:/echo.sock": {"unix", "/echo.sock"},
	} {
		if n, a := splitAddr(addr); n != want[0] || a != want[1] {
			t.Errorf("splitAddr(%q) = %q, %q, want %q, %q", addr, n, a, want[0], want[1])
		}
	}
}

// TestScheduleDueBy: dueBy counts exactly the messages whose due time has
// come, whatever the float rounding of the gap.
func TestScheduleDueBy(t *testing.T) {
	for _, rate := range []float64{3, 1000, 40000, 333333} {
		s := newSchedule(1000, rate, 7)
		for k := uint64(0); k < 5000; k += 37 {
			d := s.due(k)
			if got := s.dueBy(d); got != k+1 {
				t.Fatalf("rate %v: dueBy(due(%d)) = %d, want %d", rate, k, got, k+1)
			}
			if k > 0 && s.due(k-1) < d {
				if got := s.dueBy(d - 1); got != k {
					t.Fatalf("rate %v: dueBy(due(%d)-1) = %d, want %d", rate, k, got, k)
				}
			}
		}
		if s.dueBy(999) != 0 {
			t.Errorf("rate %v: messages due before the start", rate)
		}
		if s.dueOf(3, 2) != s.due(2*7+3) {
			t.Errorf("dueOf(3, 2) is not message 17 of the run")
		}
	}
}
