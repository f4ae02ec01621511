package uringrt

import (
	"io"
	"net"
	"runtime"
	"testing"
	"time"
)

// TestIdleGoroutines: a runtime serving the callback API, after a
// connection came and went, holds a goroutine per loop, Serve's, and at
// most the inline monitor: the worker pool starts a worker only when
// given work (it started all of them, 20 on two CPUs, at New).
func TestIdleGoroutines(t *testing.T) {
	for _, backend := range []Backend{BackendUring, BackendStd} {
		before := runtime.NumGoroutine()
		rt, err := New(Config{Loops: 2, Backend: backend})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := rt.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go rt.Serve(ln, HandlerFuncs{Data: func(c *CallbackConn, d []byte) { c.Write(d) }})
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		c.Write([]byte("ping"))
		if _, err := io.ReadFull(c, make([]byte, 4)); err != nil {
			t.Fatal(err)
		}
		c.Close()
		want := 2 + 1 + 1 // loops, Serve, the monitor
		if backend == BackendStd {
			want = 1 // Serve's accept loop
		}
		var got int
		relWaitFor(10*time.Second, func() bool { got = runtime.NumGoroutine() - before; return got <= want })
		rt.Close()
		if got > want {
			buf := make([]byte, 1<<16)
			t.Fatalf("backend %v: %d goroutines at idle, want <= %d:\n%s", backend, got, want, buf[:runtime.Stack(buf, true)])
		}
	}
}
