package uringrt

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// TestTimeoutsAlikeOnBothBackends: the same handlers, run on io_uring and
// on BackendStd (what BackendAuto falls back to under a container's
// default seccomp profile), see the same closes: a silent peer is closed
// with ErrReadTimeout, one that sends a byte now and then is not (the
// timeout counts from the last byte), SetReadTimeout(0) turns it off,
// and a peer that reads nothing of the output is closed with
// ErrWriteTimeout. Before BackendStd implemented them, SetReadTimeout and
// SetWriteTimeout returned errors.ErrUnsupported there and no connection
// was ever closed.
func TestTimeoutsAlikeOnBothBackends(t *testing.T) {
	for _, b := range []Backend{BackendUring, BackendStd} {
		t.Run(b.String(), func(t *testing.T) {
			rt := newRT(t, Config{Loops: 1, Backend: b, MaxWriteBuffer: 1 << 20})
			const to = 300 * time.Millisecond

			// A silent peer.
			closed := make(chan error, 1)
			addr := serveCB(t, rt, HandlerFuncs{
				Open: func(c *CallbackConn) {
					if err := c.SetReadTimeout(to); err != nil {
						t.Errorf("SetReadTimeout: %v", err)
					}
				},
				Close: func(c *CallbackConn, err error) { closed <- err },
			}).Addr().String()
			start := time.Now()
			dialStd(t, addr, 1)
			if err := waitClose(t, closed); !errors.Is(err, ErrReadTimeout) || !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("silent peer: OnClose err = %v, want ErrReadTimeout", err)
			}
			if d := time.Since(start); d < to {
				t.Fatalf("silent peer closed after %v, before its timeout of %v", d, to)
			}

			// A peer that trickles a byte every 20 ms for 4 timeouts, then
			// stops.
			c := dialStd(t, addr, 1)[0]
			for range 4 * int(to/(20*time.Millisecond)) {
				if _, err := c.Write([]byte("x")); err != nil {
					t.Fatalf("trickling peer closed: %v", err)
				}
				select {
				case err := <-closed:
					t.Fatalf("trickling peer closed with %v", err)
				case <-time.After(20 * time.Millisecond):
				}
			}
			if err := waitClose(t, closed); !errors.Is(err, ErrReadTimeout) {
				t.Fatalf("trickling peer, once silent: OnClose err = %v, want ErrReadTimeout", err)
			}

			// SetReadTimeout(0) turns it off.
			addr = serveCB(t, rt, HandlerFuncs{
				Open: func(c *CallbackConn) {
					c.SetReadTimeout(to / 3)
					c.SetReadTimeout(0)
				},
				Data:  func(c *CallbackConn, d []byte) { c.Write(d) },
				Close: func(c *CallbackConn, err error) { closed <- err },
			}).Addr().String()
			c = dialStd(t, addr, 1)[0]
			select {
			case err := <-closed:
				t.Fatalf("read timeout turned off, yet closed with %v", err)
			case <-time.After(3 * to):
			}
			c.Write([]byte("ping"))
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.ReadFull(c, make([]byte, 4)); err != nil {
				t.Fatalf("echo after the timeout was turned off: %v", err)
			}
			c.Close()
			if err := waitClose(t, closed); err != io.EOF && err != nil {
				t.Fatalf("OnClose err = %v, want EOF", err)
			}

			// A peer that does not read.
			addr = serveCB(t, rt, HandlerFuncs{
				Open: func(c *CallbackConn) {
					if err := c.SetWriteTimeout(to / 3); err != nil {
						t.Errorf("SetWriteTimeout: %v", err)
					}
					go func() {
						for { // fill the path to a peer that does not read
							if _, err := c.AsyncWrite(make([]byte, 64<<10)); errors.Is(err, net.ErrClosed) {
								return
							}
							time.Sleep(time.Millisecond)
						}
					}()
				},
				Close: func(c *CallbackConn, err error) { closed <- err },
			}).Addr().String()
			nc, err := relSmallBufDialer.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			if err := waitClose(t, closed); !errors.Is(err, ErrWriteTimeout) || !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("non-reading peer: OnClose err = %v, want ErrWriteTimeout", err)
			}
		})
	}
}

// TestStdWriteTimeoutMeasuresProgress: with BackendStd a write timeout
// closes a connection whose output stalls, not one whose peer reads
// slowly: 4 MiB written in one Write to a peer reading 64 KiB every 10 ms
// (about 30 timeouts' worth of time) arrive whole.
func TestStdWriteTimeoutMeasuresProgress(t *testing.T) {
	rt := newRT(t, Config{Backend: BackendStd})
	const size = 4 << 20
	closed := make(chan error, 1)
	addr := serveCB(t, rt, HandlerFuncs{
		Open: func(c *CallbackConn) {
			c.SetWriteTimeout(50 * time.Millisecond)
			go func() {
				if _, err := c.Write(make([]byte, size)); err != nil {
					t.Errorf("Write to a slow reader: %v", err)
				}
				c.Close()
			}()
		},
		Close: func(c *CallbackConn, err error) { closed <- err },
	}).Addr().String()
	nc, err := relSmallBufDialer.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetReadDeadline(time.Now().Add(60 * time.Second)) // a hang, not a timing bound
	buf := make([]byte, 64<<10)
	n := 0
	for {
		m, err := io.ReadFull(nc, buf)
		n += m
		if err != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n != size {
		t.Fatalf("slow reader got %d of %d bytes", n, size)
	}
	if err := waitClose(t, closed); err != nil && err != io.EOF && !errors.Is(err, net.ErrClosed) {
		t.Fatalf("OnClose err = %v, want a local close", err)
	}
}

// TestStdShutdownWithReadTimeout: with BackendStd a connection whose
// handler set a long read timeout still ends at Shutdown at once (the
// timeout's deadlines do not override Shutdown's).
func TestStdShutdownWithReadTimeout(t *testing.T) {
	rt, err := New(Config{Backend: BackendStd})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ln, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opened := make(chan *CallbackConn, 1)
	go rt.Serve(ln, HandlerFuncs{
		Open: func(c *CallbackConn) { opened <- c },
		Data: func(c *CallbackConn, d []byte) { c.SetReadTimeout(time.Hour) },
	})
	c := dialStd(t, ln.Addr().String(), 1)[0]
	cc := <-opened
	c.Write([]byte("x"))
	time.Sleep(50 * time.Millisecond)
	go func() {
		for range 50 { // racing Shutdown's deadline
			cc.SetReadTimeout(time.Hour)
			time.Sleep(time.Millisecond)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := rt.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// waitClose waits for an OnClose's error (30 s at most: a hang, not a
// timing bound).
func waitClose(t *testing.T, closed chan error) error {
	t.Helper()
	select {
	case err := <-closed:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("no OnClose in 30 s")
		return nil
	}
}
