package uringrt

import (
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"
	"time"
)

func vmRSS(t *testing.T) int64 {
	t.Helper()
	debug.FreeOSMemory() // a GC first, then the freed pages returned
	return relRssBytes(t)
}

// TestIdleConnRSS holds 10,000 idle connections on the callback API (the
// clients live in a child process, so each process stays under its
// descriptor limit) and checks they cost at most 2 KiB of RSS each: an
// idle connection holds no buffer (multishot recv picks one from the ring
// only when data arrives).
func TestIdleConnRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	n := 10000
	if s := os.Getenv("URINGRT_IDLE_CONNS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	raiseSoftNOFILE()
	rt := newRT(t, Config{Loops: 1})
	addr := serveCB(t, rt, EchoHandler{}).Addr().String()
	before := vmRSS(t)
	idleClients(t, addr, n)
	after := vmRSS(t)
	per := float64(after-before) / float64(n)
	t.Logf("%d idle connections: RSS %d -> %d bytes, %.0f bytes each", n, before, after, per)
	if raceBuild() {
		t.Logf("-race: RSS includes the race detector's shadow memory; not checked (run without -race)")
		return
	}
	if per > 2048 {
		t.Fatalf("idle connection costs %.0f bytes of RSS, want <= 2048", per)
	}
}

// TestCallbackZeroAllocsPerMessage echoes many messages through the
// callback API and counts heap allocations of the whole process per
// message in steady state (the Go net client allocates nothing per
// message either).
func TestCallbackZeroAllocsPerMessage(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	addr := serveCB(t, rt, EchoHandler{}).Addr().String()
	const conns, msgs = 8, 2000
	cs := dialStd(t, addr, conns)
	buf := make([]byte, 12)
	round := func() {
		for _, c := range cs {
			c.SetDeadline(time.Time{})
			if _, err := c.Write(buf); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(c, buf); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 0; i < 200; i++ { // warm up: buffers grown, slots made
		round()
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for i := 0; i < msgs; i++ {
		round()
	}
	runtime.ReadMemStats(&m1)
	per := float64(m1.Mallocs-m0.Mallocs) / float64(conns*msgs)
	t.Logf("%d messages: %d allocations (%.4f per message)", conns*msgs, m1.Mallocs-m0.Mallocs, per)
	if per > 0.01 {
		t.Fatalf("%.4f allocations per message on the callback path, want 0", per)
	}
}
