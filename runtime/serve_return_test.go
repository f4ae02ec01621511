package uringrt

import (
	"context"
	"net"
	"testing"
	"time"
)

// TestServeReturnsWithPortFree: once Serve returned after Shutdown (or
// after the listener's Close), the listening socket is closed: a server
// restarted at once listens on the same port. 40 restarts on each backend,
// with a connection served before each stop. Before, Serve returned when
// the loop stopped accepting, before the socket's close(2), and Listen on
// the port failed with EADDRINUSE.
func TestServeReturnsWithPortFree(t *testing.T) {
	for _, b := range []Backend{BackendUring, BackendStd} {
		for _, stop := range []string{"Shutdown", "Close"} {
			t.Run(b.String()+"/"+stop, func(t *testing.T) {
				addr := "127.0.0.1:0"
				for i := range 40 {
					rt, err := New(Config{Loops: 1, Backend: b})
					if err != nil {
						t.Fatal(err)
					}
					ln, err := rt.Listen("tcp", addr)
					if err != nil {
						rt.Close()
						t.Fatalf("restart %d: Listen %s right after Serve returned: %v", i, addr, err)
					}
					addr = ln.Addr().String()
					served := make(chan error, 1)
					go func() { served <- rt.Serve(ln, EchoHandler{}) }()
					c, err := net.DialTimeout("tcp", addr, 5*time.Second)
					if err != nil {
						t.Fatal(err)
					}
					c.Write([]byte("x"))
					c.SetReadDeadline(time.Now().Add(10 * time.Second))
					if _, err := c.Read(make([]byte, 1)); err != nil {
						t.Fatalf("echo: %v", err)
					}
					c.Close()
					go func() {
						if stop == "Close" {
							ln.Close()
							return
						}
						ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
						defer cancel()
						rt.Shutdown(ctx)
					}()
					select {
					case <-served:
					case <-time.After(20 * time.Second): // a hang, not a timing bound
						t.Fatal("Serve did not return")
					}
					// Go's net: SO_REUSEADDR, no SO_REUSEPORT, as a new
					// process's listener.
					gl, err := net.Listen("tcp", addr)
					if err != nil {
						rt.Close()
						t.Fatalf("restart %d: net.Listen %s right after Serve returned: %v", i, addr, err)
					}
					gl.Close()
					rt.Close()
				}
			})
		}
	}
}
