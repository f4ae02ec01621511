package uringrt

import (
	"context"
	"io"
	"net"
	"testing"
	"time"
)

// TestShutdownConnTrackedDuringDrain: a net.Conn that joins the runtime
// after Shutdown gave every connection its read deadline (accepted by an
// Accept that was past accept4 when the listener closed, or dialed during
// the drain) gets one too, so its handler's Read returns and Shutdown
// completes. Before, such a connection was not in Shutdown's snapshot: its
// handler read on, and Shutdown ran to its context's end (a stress run:
// TestShutdownUnderLoad/conn took 5 s against its 5 s context).
func TestShutdownConnTrackedDuringDrain(t *testing.T) {
	for _, tier := range tiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			ln := listenTCP(t, rt)
			// A peer on Go's net for the connection dialed mid-drain; it
			// never writes.
			peer, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer peer.Close()
			go func() {
				for {
					c, err := peer.Accept()
					if err != nil {
						return
					}
					defer c.Close()
				}
			}()
			accepted, aDeadline, bDialed := make(chan struct{}), make(chan struct{}), make(chan struct{})
			go func() {
				a, err := ln.Accept()
				if err != nil {
					return
				}
				close(accepted)
				io.Copy(io.Discard, a) // returns on Shutdown's deadline
				close(aDeadline)
				<-bDialed
				a.Close()
			}()
			x, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			select {
			case <-accepted:
			case <-time.After(10 * time.Second):
				t.Fatal("no accept")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- rt.Shutdown(ctx) }()
			select {
			case <-aDeadline:
			case <-time.After(10 * time.Second):
				t.Fatal("Shutdown gave the accepted conn no deadline")
			}
			b, err := rt.Dial("tcp", peer.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			go func() { io.Copy(io.Discard, b); b.Close() }()
			close(bDialed)
			start := time.Now()
			if err := <-done; err != nil {
				t.Fatalf("Shutdown: %v after %v with a conn dialed during its drain", err, time.Since(start))
			}
		})
	}
}
