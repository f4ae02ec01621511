package uringrt

// A peer that resets mid-read, against every tier.

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"
)

// TestPeerResetMidRead: a Read parked on an idle connection returns
// ECONNRESET when the peer resets; a write to the reset peer then fails
// with EPIPE or ECONNRESET and raises no SIGPIPE. The callback API reports
// the reset in OnClose.
func TestPeerResetMidRead(t *testing.T) {
	sigpipe := make(chan os.Signal, 8)
	signal.Notify(sigpipe, syscall.SIGPIPE)
	defer signal.Stop(sigpipe)
	for _, tier := range tiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			c, s := pair(t, rt, "tcp")
			done := make(chan error, 1)
			go func() {
				_, err := s.Read(make([]byte, 64))
				done <- err
			}()
			time.Sleep(30 * time.Millisecond) // let Read park
			setLinger0(t, c)
			c.Close()
			var err error
			select {
			case err = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("parked Read not woken by the peer's reset")
			}
			var oe *net.OpError
			if !errors.Is(err, syscall.ECONNRESET) || !errors.As(err, &oe) || oe.Op != "read" {
				t.Fatalf("Read across peer reset: %v, want *net.OpError{Op: read} wrapping ECONNRESET", err)
			}
			var werr error
			for i := 0; i < 10 && werr == nil; i++ {
				_, werr = s.Write(bytes.Repeat([]byte("x"), 4096))
			}
			if !errors.Is(werr, syscall.EPIPE) && !errors.Is(werr, syscall.ECONNRESET) {
				t.Fatalf("Write to reset peer: %v, want EPIPE or ECONNRESET", werr)
			}
			if !errors.As(werr, &oe) || oe.Op != "write" {
				t.Fatalf("Write to reset peer: %v, want *net.OpError{Op: write}", werr)
			}
			if tier.name == "std" {
				// Go's net writes without MSG_NOSIGNAL: the kernel raises
				// SIGPIPE, which the Go runtime discards (fd not 1 or 2).
				drainSignals(sigpipe)
				return
			}
			select {
			case <-sigpipe:
				t.Fatal("SIGPIPE raised by a write to a reset peer")
			case <-time.After(20 * time.Millisecond):
			}
			// Callback API: OnClose gets the reset.
			ln, err := rt.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			closed := make(chan error, 1)
			h := HandlerFuncs{
				Data:  func(c *CallbackConn, b []byte) { c.Write(b) },
				Close: func(c *CallbackConn, err error) { closed <- err },
			}
			go rt.Serve(ln, h)
			defer ln.Close()
			cc, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			cc.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := cc.Write([]byte("hi")); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(cc, make([]byte, 2)); err != nil {
				t.Fatal(err)
			}
			cc.(*net.TCPConn).SetLinger(0)
			cc.Close()
			select {
			case err := <-closed:
				if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
					t.Fatalf("OnClose after reset: %v, want ECONNRESET", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("OnClose not called after the peer's reset")
			}
			select {
			case <-sigpipe:
				t.Fatal("SIGPIPE raised by a callback send to a reset peer")
			case <-time.After(20 * time.Millisecond):
			}
		})
	}
}

func drainSignals(ch chan os.Signal) {
	for {
		select {
		case <-ch:
		case <-time.After(20 * time.Millisecond):
			return
		}
	}
}
