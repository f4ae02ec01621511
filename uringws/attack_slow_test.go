package uringws

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"
)

// TestAttackTrickleDefeatsNoIdleTimeout: a client that keeps a message
// under way forever, a byte every 20 ms, is closed with 1001 at
// IdleTimeout (bytes arriving are not a message), on every path.
func TestAttackTrickleDefeatsNoIdleTimeout(t *testing.T) {
	u := &Upgrader{IdleTimeout: 200 * time.Millisecond}
	f := clientFrame(true, 0, opBinary, testKey, make([]byte, 100000))
	for _, s := range serveAll(t, upgradeHandler(u, echoHandler)) {
		rc := dialRaw(t, s.addr, "")
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; i < len(f); i++ {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				if _, err := rc.c.Write(f[i : i+1]); err != nil {
					return
				}
			}
		}()
		rc.c.SetReadDeadline(time.Now().Add(30 * time.Second))
		code := -1
		for code < 0 {
			op, _, _, p, err := rc.frame()
			if err != nil {
				t.Fatalf("%s: no close frame while trickling: %v", s.name, err)
			}
			if op == opClose && len(p) >= 2 {
				code = int(binary.BigEndian.Uint16(p))
			}
		}
		close(stop)
		<-done
		if code != CloseGoingAway {
			t.Fatalf("%s: trickler closed with %d, want 1001", s.name, code)
		}
		rc.c.Close()
	}
}

// TestAttackNeverReadingConsumer: a server writes 64 KiB messages to a
// client that never reads. On the loop path the writer gets
// ErrSlowConsumer with at most WriteBufferLimit queued; on the goroutine
// path the write blocks (as gorilla's does) and Close from another
// goroutine ends it within its 5 s bound. Either way the server's heap
// stays far under what was attempted.
func TestAttackNeverReadingConsumer(t *testing.T) {
	const limit = 512 << 10
	u := &Upgrader{WriteBufferLimit: limit}
	type result struct {
		err     error
		written int
		queued  int
	}
	for _, name := range []string{"uringhttp", "uringhttp-std", "net/http"} {
		opened := make(chan *Conn, 1)
		res := make(chan result, 1)
		closed := make(chan struct{})
		h := HandlerFuncs{
			Open: func(c *Conn) {
				opened <- c
				go func() {
					msg := bytes.Repeat([]byte("b"), 64<<10)
					r := result{}
					for r.written < 1<<30 {
						if r.err = c.WriteMessage(BinaryMessage, msg); r.err != nil {
							break
						}
						r.written += len(msg)
					}
					r.queued = c.Buffered()
					res <- r
				}()
			},
			Close: func(c *Conn, code int, reason string) { close(closed) },
		}
		s := serveOne(t, name, upgradeHandler(u, h))
		before := heapInUse()
		rc := dialRaw(t, s.addr, "") // reads nothing
		c := <-opened
		var r result
		if s.rt != nil && name == "uringhttp" {
			r = <-res
			if r.err != ErrSlowConsumer || r.queued > limit {
				t.Fatalf("%s: writer ended with %v, %d queued (limit %d)", name, r.err, r.queued, limit)
			}
		} else {
			// The writer blocks once the sockets are full: wait for
			// the heap to show it is not queueing, then Close.
			select {
			case r = <-res:
				t.Fatalf("%s: writer ended with %v after %d bytes to a client that reads nothing", name, r.err, r.written)
			case <-time.After(2 * time.Second):
			}
			c.Close(CloseNormalClosure, "")
			select {
			case r = <-res:
			case <-time.After(30 * time.Second):
				t.Fatalf("%s: a write blocked on a consumer that reads nothing outlived Close", name)
			}
		}
		grew := heapInUse() - before
		t.Logf("%s: writer stopped after %d bytes (%v), heap grew %d", name, r.written, r.err, grew)
		if grew > 16<<20 {
			t.Errorf("%s: heap grew %d bytes writing to a consumer that reads nothing", name, grew)
		}
		rc.c.Close()
		select {
		case <-closed:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no OnClose", name)
		}
	}
}
