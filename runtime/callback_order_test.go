package uringrt

import (
	"bufio"
	"bytes"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestCallbackWritesOfOneCallbackContiguous: OnData answers each request
// line with two writes, "A" then "B\n", while goroutines write whole lines
// "xxxx\n" to the same connection (AsyncWrite, Write, and OutboundBuffered
// and Peek calls that look at its state meanwhile). What one callback
// writes stays contiguous: no reply is split by another writer's line,
// over 1M replies (200k under -race or for a MayBlocker handler), each
// arriving once.
func TestCallbackWritesOfOneCallbackContiguous(t *testing.T) {
	for _, tier := range []struct {
		name     string
		blocking bool
		backend  Backend
	}{{"loop", false, BackendUring}, {"blocking", true, BackendUring}, {"std", false, BackendStd}} {
		t.Run(tier.name, func(t *testing.T) { testCallbackContiguous(t, tier.blocking, tier.backend) })
	}
}

func testCallbackContiguous(t *testing.T, blocking bool, backend Backend) {
	replies := 1_000_000
	if raceEnabled || blocking || backend == BackendStd {
		replies = 200_000
	}
	rt := newRT(t, Config{Loops: 1, Backend: backend})
	opened := make(chan *CallbackConn, 1)
	addr := serveCB(t, rt, twoWriteReplies(t, blocking, opened)).Addr().String()
	conn := dialStd(t, addr, 1)[0]
	cc := <-opened

	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { close(stop); wg.Wait() }()
	var others atomic.Int64
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			line := []byte("xxxx\n")
			for {
				select {
				case <-stop:
					return
				default:
				}
				if cc.OutboundBuffered() > 256<<10 {
					time.Sleep(time.Millisecond) // leave the replies room under MaxWriteBuffer
					continue
				}
				var err error
				if backend == BackendStd && i == 3 {
					return // nothing is buffered to look at
				}
				switch i {
				case 0, 1:
					_, err = cc.AsyncWrite(line)
				case 2:
					_, err = cc.Write(line)
				case 3:
					cc.OutboundBuffered()
					cc.Peek(-1)
					cc.InboundBuffered()
					continue
				}
				switch {
				case err == nil:
					others.Add(1)
				case errors.Is(err, ErrWriteBufferFull):
					time.Sleep(time.Millisecond)
				default:
					return
				}
			}
		}()
	}

	go func() { // the requests, in batches of 1000 lines
		batch := bytes.Repeat([]byte("q\n"), 1000)
		for sent := 0; sent < replies; sent += 1000 {
			if _, err := conn.Write(batch); err != nil {
				return
			}
		}
	}()
	conn.SetReadDeadline(time.Now().Add(120 * time.Second))
	r := bufio.NewReaderSize(conn, 64<<10)
	got, split := 0, 0
	for got < replies {
		line, err := r.ReadSlice('\n')
		if err != nil {
			t.Fatalf("%d of %d replies, then %v", got, replies, err)
		}
		switch string(line) {
		case "AB\n":
			got++
		case "xxxx\n":
		default:
			if split++; split <= 5 {
				t.Errorf("split reply: line %q", line)
			}
			if bytes.HasSuffix(line, []byte("B\n")) || bytes.HasPrefix(line, []byte("B\n")) {
				got++
			}
		}
	}
	t.Logf("%d replies, %d lines of other writers accepted, %d split", got, others.Load(), split)
	if split > 0 {
		t.Fatalf("%d replies split by another writer's bytes", split)
	}
}

// twoWriteReplies answers each input line with two writes, "A" and "B\n",
// from the connection's callback, and hands each new connection to opened.
func twoWriteReplies(t *testing.T, blocking bool, opened chan<- *CallbackConn) HandlerFuncs {
	return HandlerFuncs{
		Blocking: blocking,
		Open:     func(c *CallbackConn) { opened <- c },
		Data: func(c *CallbackConn, data []byte) {
			for range bytes.Count(data, []byte{'\n'}) {
				if _, err := c.Write([]byte("A")); err != nil {
					t.Errorf("Write A: %v", err)
				}
				if _, err := c.Write([]byte("B\n")); err != nil {
					t.Errorf("Write B: %v", err)
				}
			}
		},
	}
}
