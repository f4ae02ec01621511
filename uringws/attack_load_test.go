package uringws

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// heapInUse is the heap in use after a collection.
func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// waitFor polls cond until it holds or 30 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("after 30 s: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAttackPingFlood: a client sends pings as fast as it can and reads
// no pong. The pongs back up in the client's socket; the server must
// then stop reading (or close) instead of queueing a pong per ping, so
// its heap stays far under what the client sent. gorilla on net/http
// blocks in the pong write, as uringws's goroutine path does.
func TestAttackPingFlood(t *testing.T) {
	const budget = 48 << 20 // bytes of pings the client tries to send
	ping := clientFrame(true, 0, opPing, testKey, make([]byte, maxControlPayload))
	batch := make([]byte, 0, 64*len(ping))
	for i := 0; i < 64; i++ {
		batch = append(batch, ping...)
	}
	u := &Upgrader{}
	for _, s := range serveAll(t, upgradeHandler(u, echoHandler)) {
		rc := dialRaw(t, s.addr, "")
		before := heapInUse()
		sent := 0
		for sent < budget {
			// A write the server does not take for 2 s: it stopped
			// reading, which is the bound.
			rc.c.SetWriteDeadline(time.Now().Add(2 * time.Second))
			n, err := rc.c.Write(batch)
			sent += n
			if err != nil {
				break
			}
		}
		grew := heapInUse() - before
		t.Logf("%s: client sent %d bytes of pings, server heap grew %d", s.name, sent, grew)
		if grew > 12<<20 && grew > int64(sent)/4 {
			t.Errorf("%s: heap grew %d bytes for %d bytes of unread pings: pongs are queued without bound", s.name, grew, sent)
		}
		rc.c.Close()
	}
}

// trickleConns opens n websockets to addr and sends each the frame f one
// byte per round, pace apart, checking the server's heap after the
// handshakes and once the header is all but complete; then it reads every
// echo.
func trickleConns(t *testing.T, s *server, n int, pace time.Duration) {
	payload := []byte("trickled")
	f := clientFrame(true, 0, opBinary, testKey, payload)
	conns := make([]*rawConn, n)
	for i := range conns {
		conns[i] = dialRaw(t, s.addr, "")
	}
	before := heapInUse()
	hn := len(f) - len(payload)
	var first int64
	for b := 0; b < hn-1; b++ {
		for i, rc := range conns {
			rc.c.SetWriteDeadline(time.Now().Add(20 * time.Second))
			if _, err := rc.c.Write(f[b : b+1]); err != nil {
				t.Fatalf("%s: conn %d byte %d: %v", s.name, i, b, err)
			}
		}
		time.Sleep(pace)
		if b == 0 {
			// Let a loop starved by a loaded machine take every first
			// byte (and the buffer it may take) before the snapshot.
			time.Sleep(250 * time.Millisecond)
			first = heapInUse()
		}
	}
	last := heapInUse()
	per, grew := (last-before)/int64(n), (last-first)/int64(n)
	t.Logf("%s: %d connections holding %d of a %d-byte header: heap %d bytes a connection, %d of it after the first byte", s.name, n, hn-1, hn, per, grew)
	// Bounded, not growing with the bytes held: a partial header may take
	// a receive buffer (the loop path's is 16 KiB; gorilla's 4 KiB bufio
	// reader and writer and its goroutine's stack are there all along).
	if per > 32<<10 || grew > 4<<10 {
		t.Errorf("%s: a connection holding a partial header costs %d bytes of heap (%d after its first byte), want <= 32 KiB and not growing", s.name, per, grew)
	}
	for i, rc := range conns {
		rc.send(f[hn-1:])
		rc.c.SetReadDeadline(time.Now().Add(30 * time.Second))
		op, _, _, p, err := rc.frame()
		if err != nil || op != opBinary || string(p) != string(payload) {
			t.Fatalf("%s: conn %d: echo %d %q %v", s.name, i, op, p, err)
		}
		rc.c.Close()
	}
}

// TestAttackTrickledHeaders: 500 websockets each send a frame header a
// byte at a time; the server holds them in bounded memory and answers
// every frame once it is whole.
func TestAttackTrickledHeaders(t *testing.T) {
	for _, s := range serveAll(t, upgradeHandler(&Upgrader{}, echoHandler)) {
		trickleConns(t, s, 500, 10*time.Millisecond)
	}
}

// TestAttackTrickledHeadersHeavy is TestAttackTrickledHeaders at a byte a
// second on 9,000 websockets on the loop path (client and server
// descriptors share the process's 20,000). URINGWS_HEAVY=1 runs it.
func TestAttackTrickledHeadersHeavy(t *testing.T) {
	if os.Getenv("URINGWS_HEAVY") == "" {
		t.Skip("set URINGWS_HEAVY=1 (9,000 connections, 13 s)")
	}
	s := serveOne(t, "uringhttp", upgradeHandler(&Upgrader{}, echoHandler))
	trickleConns(t, s, 9000, time.Second)
}

// openFDs counts the process's descriptors.
func openFDs() int {
	d, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(d)
}

// TestAttackDroppedMidway: connections dropped mid-handshake, right
// after it, mid-header, mid-payload and mid-fragmented-message give back
// their goroutines and descriptors, and every upgraded one gets OnClose.
func TestAttackDroppedMidway(t *testing.T) {
	var opened, closed atomic.Int64
	h := HandlerFuncs{
		Open:  func(c *Conn) { opened.Add(1) },
		Close: func(c *Conn, code int, reason string) { closed.Add(1) },
	}
	big := clientFrame(true, 0, opBinary, testKey, make([]byte, 10000))
	frag := clientFrame(false, 0, opText, testKey, []byte("part"))
	drops := []func(s *server) error{
		func(s *server) error { // mid-handshake
			c, err := net.Dial("tcp", s.addr)
			if err == nil {
				fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n")
				c.Close()
			}
			return err
		},
		func(s *server) error { rc := dialRaw(t, s.addr, ""); return rc.c.Close() },
		func(s *server) error { rc := dialRaw(t, s.addr, ""); rc.send(big[:3]); return rc.c.Close() },
		func(s *server) error { rc := dialRaw(t, s.addr, ""); rc.send(big[:5000]); return rc.c.Close() },
		func(s *server) error { rc := dialRaw(t, s.addr, ""); rc.send(frag); return rc.c.Close() },
	}
	for _, s := range serveAll(t, upgradeHandler(&Upgrader{}, h)) {
		rc := dialRaw(t, s.addr, "") // warm the server up
		rc.c.Close()
		waitFor(t, s.name+": warm-up OnClose", func() bool { return closed.Load() == opened.Load() })
		g0, fd0 := runtime.NumGoroutine(), openFDs()
		for i := 0; i < 100; i++ {
			if err := drops[i%len(drops)](s); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, fmt.Sprintf("%s: OnClose for every upgraded connection (%d opened, %d closed)", s.name, opened.Load(), closed.Load()),
			func() bool { return closed.Load() == opened.Load() })
		// A few goroutines may stay that the drops did not cost: helpers
		// started on first use (uringhttp's worker reaper, the runtime's
		// inline monitor: seen in a dump under two CPU hogs) stay, and a
		// loaded machine sends handlers off the loop sooner. A leak would
		// be one a connection: 100.
		const spare = 8
		waitFor(t, fmt.Sprintf("%s: goroutines back to %d+%d (now %d)", s.name, g0, spare, runtime.NumGoroutine()),
			func() bool { return runtime.NumGoroutine() <= g0+spare })
		waitFor(t, fmt.Sprintf("%s: descriptors back to %d (now %d)", s.name, fd0, openFDs()),
			func() bool { return openFDs() <= fd0 })
	}
}
