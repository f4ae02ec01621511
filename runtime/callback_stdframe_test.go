package uringrt

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// TestStdFramingKeepsUpToMaxWriteBuffer: with BackendStd, as with
// io_uring, framing keeps unconsumed input up to Config.MaxWriteBuffer
// (not the default 4 MiB): a 6 MiB frame under an 8 MiB cap arrives whole,
// and one over the cap closes the connection with ErrInboundFull.
func TestStdFramingKeepsUpToMaxWriteBuffer(t *testing.T) {
	const frame = 6 << 20
	stdFrame(t, frame, 8<<20)
	stdFrame(t, frame, 2<<20)
}

func stdFrame(t *testing.T, frame, max int) {
	rt := newRT(t, Config{Backend: BackendStd, MaxWriteBuffer: max})
	got := make(chan int, 1)
	closed := make(chan error, 1)
	addr := serveCB(t, rt, HandlerFuncs{
		Data: func(c *CallbackConn, d []byte) {
			if len(d) < frame {
				c.Discard(0) // keep it all until the frame is complete
				return
			}
			got <- len(d)
			c.Close()
		},
		Close: func(c *CallbackConn, err error) { closed <- err },
	}).Addr().String()
	c := dialStd(t, addr, 1)[0]
	go c.Write(bytes.Repeat([]byte("x"), frame))
	select {
	case n := <-got:
		if n != frame || frame > max {
			t.Fatalf("cap %d: OnData got %d bytes, frame %d", max, n, frame)
		}
	case err := <-closed:
		if frame <= max || !errors.Is(err, ErrInboundFull) {
			t.Fatalf("cap %d: closed before the frame of %d was complete: %v", max, frame, err)
		}
	case <-time.After(30 * time.Second): // a hang, not a timing bound
		t.Fatal("no complete frame in 30 s")
	}
}
