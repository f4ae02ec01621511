package uringrt

// Tens of thousands of connections at once.

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// manyConns is 10,000 unless URINGRT_CONNS says otherwise.
func manyConns() int {
	if n, err := strconv.Atoi(os.Getenv("URINGRT_CONNS")); err == nil && n > 0 {
		return n
	}
	return 10000
}

// TestTenThousandConns holds 10,000 connections open at once and echoes a
// message on every one: against the callback API with Go's net clients,
// and against a goroutine-per-connection net.Conn server with uringrt
// clients (in a child process, so each process needs only ~10,000
// descriptors). Bounded to about 60 s; skipped with -short, and when
// RLIMIT_NOFILE cannot reach 12,000. URINGRT_CONNS=n changes the count.
func TestTenThousandConns(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 connections: skipped with -short")
	}
	manyConns := manyConns()
	raiseNOFILE(t, uint64(manyConns)+2000)
	for _, api := range []string{"callback", "netconn"} {
		t.Run(api, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			if d, ok := t.Deadline(); ok {
				ctx, cancel = context.WithDeadline(context.Background(), d.Add(-5*time.Second))
			}
			defer cancel()
			rt := newRT(t, Config{Loops: 2})
			ln, err := rt.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			var open, peak, opened atomic.Int64
			up := func() {
				opened.Add(1)
				n := open.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
			}
			switch api {
			case "callback":
				go rt.Serve(ln, HandlerFuncs{
					Open:  func(*CallbackConn) { up() },
					Data:  func(c *CallbackConn, b []byte) { c.Write(b) },
					Close: func(*CallbackConn, error) { open.Add(-1) },
				})
			case "netconn":
				go func() {
					for {
						c, err := ln.Accept()
						if err != nil {
							return
						}
						up()
						go func() {
							defer open.Add(-1)
							defer c.Close()
							io.Copy(c, c)
						}()
					}
				}()
			}
			defer ln.Close()
			// The clients live in a child process (TestMain's
			// URINGRT_MANY_CLIENT), so each process holds 10,000
			// descriptors, within a 20,000 hard limit.
			start := time.Now()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("URINGRT_MANY_CLIENT=%s,%d,%s", ln.Addr(), manyConns, api))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("client process: %v\n%s", err, out)
			}
			dialed := strings.TrimSpace(string(out))
			t.Logf("%s: %d conns (%s), all echoed in %v; server peak open %d", api, manyConns, dialed, time.Since(start), peak.Load())
			if peak.Load() < int64(manyConns) {
				t.Fatalf("server had at most %d connections open at once, want %d", peak.Load(), manyConns)
			}
		})
	}
}
