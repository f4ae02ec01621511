package uringrt

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestReviewAfterFuncCloses: an AfterFunc that writes and closes its
// connection while the peer is sending: the peer reads what it wrote and,
// on BackendStd, an orderly end (BackendStd closed at once with the peer's
// bytes unread, so the peer got a reset: with GOMAXPROCS=1 mostly before
// "bye", and the AfterFunc looked as if it never ran).
func TestReviewAfterFuncCloses(t *testing.T) {
	for _, b := range reviewBackends {
		t.Run(b.name, func(t *testing.T) {
			rt := newRT(t, Config{Loops: 1, Backend: b.backend})
			var ran atomic.Int64
			ln := serveCB(t, rt, HandlerFuncs{
				Open: func(c *CallbackConn) {
					c.AfterFunc(5*time.Millisecond, func(c *CallbackConn) {
						ran.Add(1)
						c.Write([]byte("bye"))
						c.Close()
					})
				},
			})
			const rounds = 30
			for i := 0; i < rounds; i++ {
				peer, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				go func() {
					chunk := make([]byte, 1024)
					for k := 0; k < 1<<14; k++ { // bounded: 16 MiB
						if _, err := peer.Write(chunk); err != nil {
							return
						}
					}
				}()
				peer.SetReadDeadline(time.Now().Add(10 * time.Second))
				got, err := io.ReadAll(peer)
				peer.Close()
				if b.backend == BackendUring && errors.Is(err, syscall.ECONNRESET) {
					// The io_uring close of a connection whose queues it
					// found empty is a close(2) without a FIN first: the
					// peer, still sending, reads what was sent, then a
					// reset.
					err = nil
				}
				if string(got) != "bye" || err != nil {
					t.Fatalf("round %d: got %q, %v; the AfterFunc ran %d times in %d connections", i, got, err, ran.Load(), i+1)
				}
			}
		})
	}
}
