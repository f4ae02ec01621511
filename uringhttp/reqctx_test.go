package uringhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// A request's context behaves as the one context.WithCancel makes: done
// at cancel with context.Canceled, done with its parent, and contexts
// derived from it (WithCancel, WithTimeout, AfterFunc) follow it.
func TestReqContextSemantics(t *testing.T) {
	type key struct{}
	base := context.WithValue(context.Background(), key{}, "v")
	var c reqContext
	c.init(base)
	if c.Value(key{}) != "v" || c.Err() != nil {
		t.Fatalf("Value %v Err %v", c.Value(key{}), c.Err())
	}
	if _, ok := c.Deadline(); ok {
		t.Fatal("deadline without one")
	}
	child, cancelChild := context.WithCancel(&c)
	defer cancelChild()
	tchild, cancelT := context.WithTimeout(&c, time.Hour)
	defer cancelT()
	ran := make(chan struct{})
	context.AfterFunc(&c, func() { close(ran) })
	stopped := false
	stop := context.AfterFunc(&c, func() { stopped = true })
	if !stop() {
		t.Fatal("stop of a pending AfterFunc reported false")
	}
	c.cancel(context.Canceled)
	c.cancel(errors.New("second")) // ignored
	for _, ctx := range []context.Context{&c, child, tchild} {
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("%v not done", ctx)
		}
		if ctx.Err() != context.Canceled || context.Cause(ctx) != context.Canceled {
			t.Fatalf("%v: Err %v Cause %v", ctx, ctx.Err(), context.Cause(ctx))
		}
	}
	<-ran
	if stopped {
		t.Fatal("a stopped AfterFunc ran")
	}
	late := make(chan struct{})
	if context.AfterFunc(&c, func() { close(late) })() {
		t.Fatal("stop after done reported true")
	}
	<-late

	// A parent that can be done: the request's context follows it, and
	// one made under a done parent is done at once.
	parent, cancelParent := context.WithCancelCause(context.Background())
	var d reqContext
	d.init(parent)
	cause := errors.New("base gone")
	cancelParent(cause)
	select {
	case <-d.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("not done with its parent")
	}
	if d.Err() != context.Canceled || context.Cause(&d) != cause {
		t.Fatalf("Err %v Cause %v", d.Err(), context.Cause(&d))
	}
	var e reqContext
	e.init(parent)
	if e.Err() != context.Canceled {
		t.Fatalf("under a done parent: Err %v", e.Err())
	}
	<-e.Done()
}

// Connections of one listener share their connection context when no
// ConnContext is set; each request's context still carries the local
// address and the server.
func TestConnContextShared(t *testing.T) {
	got := make(chan string, 4)
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		la, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		_, hasSrv := r.Context().Value(http.ServerContextKey).(*http.Server)
		if la == nil {
			got <- "no local address"
		} else {
			got <- fmt.Sprintf("%s %v", la, hasSrv)
		}
	})}
	addr := serve(t, s)
	for i := 0; i < 3; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
		if g := <-got; g != addr+" false" && g != addr+" true" {
			t.Fatalf("connection %d: %s, want %s", i, g, addr)
		}
		c.Close()
	}
}
