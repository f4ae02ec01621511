package uringhttp

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	uringrt "github.com/uringrt/uringrt/runtime"
)

// TestServeTakesListenerRuntime: Serve serves a listener of a runtime that
// is not the default one with Server.Runtime left nil (it failed: the
// default runtime was not the listener's), on both backends; a listener
// it cannot serve gets an error that names the fix.
func TestServeTakesListenerRuntime(t *testing.T) {
	for _, backend := range []uringrt.Backend{uringrt.BackendUring, uringrt.BackendStd} {
		rt, err := uringrt.New(uringrt.Config{Loops: 1, Backend: backend})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		ln, err := rt.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hi") })}
		done := make(chan error, 1)
		go func() { done <- s.Serve(ln) }()
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Get("http://" + ln.Addr().String() + "/")
		if err != nil {
			t.Fatalf("backend %v: %v", backend, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "hi" {
			t.Fatalf("backend %v: body %q", backend, b)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s.Shutdown(ctx)
		cancel()
		if err := <-done; err != http.ErrServerClosed {
			t.Fatalf("backend %v: Serve: %v", backend, err)
		}
	}

	other, err := uringrt.New(uringrt.Config{Loops: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	rt, err := uringrt.New(uringrt.Config{Loops: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ln, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = (&Server{Handler: http.NotFoundHandler(), Runtime: other}).Serve(ln)
	if err == nil || !strings.Contains(err.Error(), "leave Server.Runtime nil") {
		t.Fatalf("Serve with another Server.Runtime: %v, want an error naming the fix", err)
	}
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer gl.Close()
	err = (&Server{Handler: http.NotFoundHandler()}).Serve(gl)
	if err == nil || !strings.Contains(err.Error(), "uringrt.Listen") {
		t.Fatalf("Serve on a net.Listen listener: %v, want an error naming uringrt.Listen", err)
	}
	if got, ok := uringrt.ListenerRuntime(ln); !ok || got != rt {
		t.Fatalf("ListenerRuntime = %p, %v; want %p", got, ok, rt)
	}
}
