package uringrt

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uringrt/uringrt/netpoll"
	"github.com/uringrt/uringrt/runtime/experiment"
)

// TestCallbackBlockingHandlerKeepsOrder runs a MayBlocker handler on the
// fixed pool: callbacks of one connection stay in order, OnOpen comes first
// and OnClose last with io.EOF after the peer's close.
func TestCallbackBlockingHandlerKeepsOrder(t *testing.T) {
	for _, blocking := range []bool{false, true} {
		rt := newRT(t, Config{Loops: 2, Workers: 3})
		var mu sync.Mutex
		events := map[*CallbackConn][]string{}
		closed := make(chan error, 16)
		h := HandlerFuncs{
			Blocking: blocking,
			Open: func(c *CallbackConn) {
				mu.Lock()
				events[c] = append(events[c], "open")
				mu.Unlock()
			},
			Data: func(c *CallbackConn, data []byte) {
				if blocking {
					time.Sleep(time.Millisecond) // a handler that blocks
				}
				c.Write(data)
			},
			Close: func(c *CallbackConn, err error) {
				mu.Lock()
				events[c] = append(events[c], "close")
				mu.Unlock()
				closed <- err
			},
		}
		addr := serveCB(t, rt, h).Addr().String()
		const conns = 8
		var wg sync.WaitGroup
		for i := 0; i < conns; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Error(err)
					return
				}
				defer c.Close()
				var sent []byte
				for m := 0; m < 40; m++ {
					p := []byte{byte(i), byte(m), byte(m * 7)}
					sent = append(sent, p...)
					c.Write(p)
				}
				c.SetReadDeadline(time.Now().Add(10 * time.Second))
				got := make([]byte, len(sent))
				if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, sent) {
					t.Errorf("conn %d: echo out of order or short: %v", i, err)
				}
			}(i)
		}
		wg.Wait()
		for i := 0; i < conns; i++ {
			select {
			case err := <-closed:
				if err != io.EOF {
					t.Errorf("OnClose err = %v, want io.EOF", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("OnClose not called")
			}
		}
		mu.Lock()
		for _, ev := range events {
			if len(ev) != 2 || ev[0] != "open" || ev[1] != "close" {
				t.Errorf("events = %v", ev)
			}
		}
		mu.Unlock()
	}
}

// TestCallbackAsyncWriteAndClose pushes data from another goroutine and
// closes the connection from the handler.
func TestCallbackAsyncWriteAndClose(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	opened := make(chan *CallbackConn, 1)
	closed := make(chan error, 1)
	addr := serveCB(t, rt, HandlerFuncs{
		Open: func(c *CallbackConn) { opened <- c },
		Data: func(c *CallbackConn, data []byte) {
			if bytes.Equal(data, []byte("quit")) {
				c.Write([]byte("bye"))
				c.Close()
			}
		},
		Close: func(c *CallbackConn, err error) { closed <- err },
	}).Addr().String()
	got, cc, err := asyncWriteThenQuit(t, addr, opened)
	if err != nil || got != "hello bye" {
		t.Fatalf("got %q, %v", got, err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("OnClose after local Close: %v", err)
	}
	if _, err := cc.AsyncWrite([]byte("late")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("AsyncWrite after close: %v", err)
	}
}

// TestDialCallback drives a dialed connection through the callback API: the
// client writes in OnOpen, checks the echo in OnData and closes.
func TestDialCallback(t *testing.T) {
	for _, backend := range []Backend{BackendUring, BackendStd} {
		t.Run(backend.String(), func(t *testing.T) {
			rt := newRT(t, Config{Loops: 1, Backend: backend})
			addr := serveCB(t, rt, EchoHandler{}).Addr().String()
			got := make(chan []byte, 1)
			closed := make(chan error, 1)
			var buf []byte
			_, err := rt.DialCallback(context.Background(), "tcp", addr, HandlerFuncs{
				Open: func(c *CallbackConn) { c.Write([]byte("ping pong")) },
				Data: func(c *CallbackConn, data []byte) {
					buf = append(buf, data...)
					if len(buf) == 9 {
						got <- buf
						c.Close()
					}
				},
				Close: func(c *CallbackConn, err error) { closed <- err },
			})
			if err != nil {
				t.Fatal(err)
			}
			select {
			case b := <-got:
				if string(b) != "ping pong" {
					t.Fatalf("echo %q", b)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("no echo")
			}
			if err := <-closed; err != nil {
				t.Fatalf("OnClose after local Close: %v", err)
			}
			ln, _ := net.Listen("tcp", "127.0.0.1:0")
			dead := ln.Addr().String()
			ln.Close()
			if _, err := rt.DialCallback(context.Background(), "tcp", dead, EchoHandler{}); err == nil {
				t.Fatal("DialCallback to a closed port succeeded")
			}
		})
	}
}

// TestCallbackAsyncWriteOrderTiers: data AsyncWritten before the peer's
// reply goes out before what OnData writes for that reply, on every loop
// setting, with the CPUs busy. TestCallbackAsyncWriteAndClose caught the
// first way this broke (the loop reaped the reply before handling the
// posted write: 49 of 500 runs under load). A second, rarer way (reaping
// that entered the kernel itself picked up the reply: 6-9 of 3,000 rounds
// under DedicatedLoops in a reviewer's repeat) does not show reliably in
// this test's 2,000 rounds; the loop now drains posted requests there too.
func TestCallbackAsyncWriteOrderTiers(t *testing.T) {
	startCPUHogs(t, 2, 30*time.Second)
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"default", Config{Loops: 1}},
		{"idlepoll", Config{Loops: 1, IdlePoll: 50 * time.Microsecond}},
		{"dedicated", Config{Loops: 1, DedicatedLoops: true}},
		{"no-defer-taskrun", Config{Loops: 1, Switches: experiment.Switches{DisableDeferTaskrun: true}}},
		{"nobatch", Config{Loops: 1, Switches: experiment.Switches{WaitBatch: experiment.WaitBatchOff}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newRT(t, tc.cfg)
			opened := make(chan *CallbackConn, 1)
			addr := serveCB(t, rt, HandlerFuncs{
				Open: func(c *CallbackConn) { opened <- c },
				Data: func(c *CallbackConn, data []byte) {
					if bytes.HasSuffix(data, []byte("quit")) {
						c.Write([]byte("bye"))
						c.Close()
					}
				},
			}).Addr().String()
			const rounds = 2000
			bad := 0
			for i := 0; i < rounds; i++ {
				got, _, err := asyncWriteThenQuit(t, addr, opened)
				if err != nil || got != "hello bye" {
					if bad++; bad <= 2 {
						t.Errorf("round %d: got %q, %v; want \"hello bye\"", i, got, err)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d rounds out of order", bad, rounds)
			}
		})
	}
}

// asyncWriteThenQuit dials addr, AsyncWrites "hello " on the server's side
// of the connection (received from opened), then sends "quit" (to which
// the handler answers "bye" and closes) and returns all the client read.
func asyncWriteThenQuit(t *testing.T, addr string, opened <-chan *CallbackConn) (string, *CallbackConn, error) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cc := <-opened
	if _, err := cc.AsyncWrite([]byte("hello ")); err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("quit"))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(c)
	return string(got), cc, err
}

// TestCallbackRecvBundles streams 256 KiB each way over 8 connections to a
// callback echo at once: with recv bundles (Linux 6.10+) OnData gets more
// than one provided buffer's worth in a call, without them never, and
// either way every byte comes back once and in order.
func TestCallbackRecvBundles(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(map[bool]string{false: "bundles", true: "no-bundles"}[off], func(t *testing.T) {
			rt := newRT(t, Config{Loops: 1, Switches: experiment.Switches{DisableRecvBundles: off}})
			var most atomic.Int64
			ln := serveCB(t, rt, HandlerFuncs{Data: func(c *CallbackConn, d []byte) {
				if n := int64(len(d)); n > most.Load() {
					most.Store(n)
				}
				c.Write(d)
			}})
			streamEchoAll(t, ln.Addr().String(), 8, 256<<10)
			size := int64(rt.cfg.BufferSize)
			bundles := !off && rt.features.Bits&netpoll.FeatRecvSendBundle != 0
			switch {
			case bundles && most.Load() <= size:
				t.Fatalf("largest OnData %d bytes: no bundle of more than one %d-byte buffer", most.Load(), size)
			case !bundles && most.Load() > max(size, streamBufSize):
				// Past the probe, a stream reads into a buffer of its
				// own (callback_stream.go).
				t.Fatalf("largest OnData %d bytes with one %d-byte buffer per CQE", most.Load(), size)
			}
		})
	}
}
