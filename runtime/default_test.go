package uringrt

import (
	"context"
	"testing"

	"go.uber.org/goleak"
)

// TestDefaultRuntimeReleased: the default runtime behind runtime.Listen
// and runtime.Dial starts lazily and CloseDefault releases it with every
// goroutine (goleak clean); the next use starts a new one.
func TestDefaultRuntimeReleased(t *testing.T) {
	CloseDefault() // whatever an earlier test left
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for round := range 2 {
		ln, err := Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			c, err := ln.Accept()
			if err == nil {
				c.Write([]byte("hi"))
				c.Close()
			}
		}()
		c, err := DialContext(context.Background(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 2)
		if _, err := c.Read(b); err != nil || string(b) != "hi" {
			t.Fatalf("round %d: read %q, %v", round, b, err)
		}
		c.Close()
		ln.Close()
		if err := CloseDefault(); err != nil {
			t.Fatal(err)
		}
	}
	if err := CloseDefault(); err != nil {
		t.Errorf("CloseDefault without a default runtime: %v", err)
	}
}
