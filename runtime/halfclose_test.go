package uringrt

// The callback API at its closing edges: writes after a close began, and
// half-closed connections (HalfCloser).

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// TestCallbackAsyncWriteAfterAsyncClose: with megabytes queued for a peer
// that does not read yet, AsyncClose, then AsyncWrite: the write returns
// net.ErrClosed (it would never be sent); the peer gets what was queued
// before, then EOF.
func TestCallbackAsyncWriteAfterAsyncClose(t *testing.T) {
	const queued = 8 << 20
	for _, tier := range relCbTiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			opened := make(chan *CallbackConn, 2)
			ln := relServeCB(t, rt, HandlerFuncs{Open: func(c *CallbackConn) { opened <- c }, Blocking: tier.blocking})
			<-opened // relServeCB's probe
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			cc := <-opened
			size := int64(queued)
			if tier.cfg.Backend == BackendStd {
				size = 0 // std's AsyncWrite blocks until the peer reads
			}
			if _, err := cc.AsyncWrite(make([]byte, size)); err != nil {
				t.Fatal(err)
			}
			cc.AsyncClose()
			n, err := cc.AsyncWrite([]byte("0123456789abcdef"))
			if !errors.Is(err, net.ErrClosed) || n != 0 {
				t.Fatalf("AsyncWrite after AsyncClose = %d, %v; want 0, net.ErrClosed", n, err)
			}
			c.SetReadDeadline(time.Now().Add(20 * time.Second))
			got, err := io.Copy(io.Discard, c)
			if err != nil || got != size {
				t.Fatalf("peer read %d bytes then %v, want %d then EOF", got, err, size)
			}
		})
	}
}

// halfCloseHandler replies to a request only after the peer's FIN, from
// another goroutine, then closes: an HTTP/1.0-style exchange.
type halfCloseHandler struct {
	mu       sync.Mutex
	req      []byte
	blocking bool
	closed   chan error
}

func (h *halfCloseHandler) OnOpen(*CallbackConn) {}
func (h *halfCloseHandler) OnData(c *CallbackConn, d []byte) {
	h.mu.Lock()
	h.req = append(h.req, d...)
	h.mu.Unlock()
}
func (h *halfCloseHandler) OnReadEOF(c *CallbackConn) bool {
	h.mu.Lock()
	reply := "reply to " + string(h.req)
	h.mu.Unlock()
	go func() {
		time.Sleep(20 * time.Millisecond) // "later": after the FIN was handled
		if _, err := c.AsyncWrite([]byte(reply)); err != nil {
			h.closed <- err
		}
		c.AsyncClose()
	}()
	return true
}
func (h *halfCloseHandler) OnClose(c *CallbackConn, err error) {
	select {
	case h.closed <- err:
	default:
	}
}
func (h *halfCloseHandler) MayBlock() bool { return h.blocking }

// TestCallbackHalfClose: a client sends a request, shuts down its writing
// side and waits; the handler replies after the FIN from a goroutine with
// AsyncWrite and closes: the client reads the whole reply, then EOF, and
// OnClose gets nil (the handler closed it).
func TestCallbackHalfClose(t *testing.T) {
	for _, tier := range relCbTiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			ln, err := rt.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			h := &halfCloseHandler{blocking: tier.blocking, closed: make(chan error, 1)}
			go rt.Serve(ln, h)
			defer ln.Close()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.Write([]byte("GET /"))
			c.(*net.TCPConn).CloseWrite()
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			got, err := io.ReadAll(c)
			if err != nil || string(got) != "reply to GET /" {
				t.Fatalf("client read %q, %v; want the reply then EOF", got, err)
			}
			select {
			case err := <-h.closed:
				if err != nil {
					t.Fatalf("OnClose (or AsyncWrite) error %v, want nil", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no OnClose")
			}
		})
	}
}

// TestCallbackHalfCloseFuncs: HandlerFuncs.ReadEOF keeps the connection
// half-open; without it the peer's FIN closes it (OnClose io.EOF).
func TestCallbackHalfCloseFuncs(t *testing.T) {
	for _, tier := range relCbTiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			closed := make(chan error, 4)
			ln := relServeCB(t, rt, HandlerFuncs{
				ReadEOF: func(c *CallbackConn) {
					c.Write([]byte("bye"))
					c.Close()
				},
				Close:    func(c *CallbackConn, err error) { closed <- err },
				Blocking: tier.blocking,
			})
			<-closed // the probe
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.(*net.TCPConn).CloseWrite()
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if got, err := io.ReadAll(c); err != nil || string(got) != "bye" {
				t.Fatalf("client read %q, %v; want bye then EOF", got, err)
			}
			if err := <-closed; err != nil {
				t.Fatalf("OnClose %v, want nil", err)
			}
		})
	}
}
