package uringrt

import (
	"errors"
	"testing"
	"time"
)

// TestCallbackCloseKeepsWriteTimeout: a connection closed (Close, after
// its queued output) whose peer never reads is still bound by its write
// timeout: OnClose comes with ErrWriteTimeout and the queued output is
// dropped, whether the timeout was set before the Close (from another
// goroutine) or in the same callback just before it (the close then
// begins before the posted timeout is applied).
func TestCallbackCloseKeepsWriteTimeout(t *testing.T) {
	for _, inCallback := range []bool{false, true} {
		rt := newRT(t, Config{Loops: 1, MaxWriteBuffer: 1 << 20})
		closed := make(chan error, 1)
		addr := serveCB(t, rt, HandlerFuncs{
			Open: func(c *CallbackConn) {
				go func() {
					for { // fill the runtime's queue to a peer that does not read
						_, err := c.AsyncWrite(make([]byte, 64<<10))
						if errors.Is(err, ErrWriteBufferFull) {
							break
						}
						if err != nil {
							return
						}
						time.Sleep(time.Millisecond)
					}
					if !inCallback {
						c.SetWriteTimeout(50 * time.Millisecond)
						c.Close()
						return
					}
					c.AfterFunc(0, func(c *CallbackConn) {
						c.SetWriteTimeout(50 * time.Millisecond)
						c.Close()
					})
				}()
			},
			Close: func(c *CallbackConn, err error) { closed <- err },
		}).Addr().String()
		c, err := relSmallBufDialer.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-closed:
			if !errors.Is(err, ErrWriteTimeout) {
				t.Errorf("inCallback %v: OnClose err = %v, want ErrWriteTimeout", inCallback, err)
			}
		case <-time.After(20 * time.Second): // a hang, not a timing bound
			t.Errorf("inCallback %v: no OnClose 20 s after Close to a peer that never reads", inCallback)
		}
		c.Close()
	}
}
