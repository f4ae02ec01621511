package uringrt

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// TestReusePortSpreadsAccepts: with ReusePort each loop has its own
// listening socket; the kernel spreads connections over them and each
// connection stays on the loop that accepted it (no hand-off). Checked
// for Serve (a multishot accept per loop), for Accept, and for
// Config.ReusePort.
func TestReusePortSpreadsAccepts(t *testing.T) {
	const conns = 64
	for _, api := range []string{"serve", "accept", "config"} {
		t.Run(api, func(t *testing.T) {
			cfg := Config{Loops: 2}
			if api == "config" {
				cfg.ReusePort = true
			}
			rt := newRT(t, cfg)
			var ln net.Listener
			var err error
			if api == "config" {
				ln, err = rt.Listen("tcp", "127.0.0.1:0")
			} else {
				ln, err = (&ListenConfig{Runtime: rt, ReusePort: true}).Listen(context.Background(), "tcp", "127.0.0.1:0")
			}
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			rl, ok := ln.(*reuseListener)
			if !ok || len(rl.subs) != 2 {
				t.Fatalf("listener %T, want a ReusePort group of 2 sockets", ln)
			}
			var mu sync.Mutex
			var accepted []*netFD
			opened := make(chan struct{}, conns)
			if api == "serve" {
				go rt.Serve(ln, HandlerFuncs{Open: func(c *CallbackConn) {
					mu.Lock()
					accepted = append(accepted, c.fd)
					mu.Unlock()
					opened <- struct{}{}
				}})
			} else {
				go func() {
					for {
						c, err := ln.Accept()
						if err != nil {
							return
						}
						mu.Lock()
						accepted = append(accepted, c.(*Conn).fd)
						mu.Unlock()
						opened <- struct{}{}
					}
				}()
			}
			dialStd(t, ln.Addr().String(), conns)
			for range conns {
				select {
				case <-opened:
				case <-time.After(10 * time.Second):
					t.Fatal("connections not accepted")
				}
			}
			mu.Lock()
			defer mu.Unlock()
			perSocket := map[*listener]int{}
			for _, n := range accepted {
				perSocket[n.ln]++
				if n.l != n.ln.fd.l {
					t.Errorf("connection accepted on loop %d runs on loop %d (handed off)", n.ln.fd.l.id, n.l.id)
				}
			}
			for i, s := range rl.subs {
				if perSocket[s] == 0 {
					t.Errorf("socket of loop %d accepted none of %d connections: %v", i, conns, perSocket)
				}
			}
			for _, l := range rt.Stats().Loops {
				if l.Accepted == 0 {
					t.Errorf("loop %d accepted no connection", l.ID)
				}
			}
		})
	}
}

// TestReusePortListenerLife: a ReusePort group's Accept honours deadlines
// and Close, and closing it frees the port (every socket of it closed).
func TestReusePortListenerLife(t *testing.T) {
	rt := newRT(t, Config{Loops: 2, ReusePort: true})
	ln, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.(interface{ SetDeadline(time.Time) error }).SetDeadline(time.Now().Add(30 * time.Millisecond))
	if _, err := ln.Accept(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("Accept past the deadline: %v", err)
	}
	ln.(interface{ SetDeadline(time.Time) error }).SetDeadline(time.Time{})
	done := make(chan error, 1)
	go func() { _, err := ln.Accept(); done <- err }()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not wake Accept")
	}
	if err := ln.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
	// Every socket of the group is gone: the port can be bound without
	// SO_REUSEPORT.
	l2, err := net.Listen("tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("port still held after Close: %v", err)
	}
	l2.Close()
}

// TestReusePortShutdown: Shutdown (and Close) of the runtime reaches a
// ReusePort group: a blocked Accept returns net.ErrClosed, Serve returns.
func TestReusePortShutdown(t *testing.T) {
	for _, api := range []string{"accept", "serve"} {
		t.Run(api, func(t *testing.T) {
			rt, err := New(Config{Loops: 2, ReusePort: true, Backend: BackendUring})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			ln, err := rt.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			if api == "accept" {
				go func() { _, err := ln.Accept(); done <- err }()
			} else {
				go func() { done <- rt.Serve(ln, EchoHandler{}) }()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := rt.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if api == "accept" && !errors.Is(err, net.ErrClosed) {
					t.Errorf("Accept after Shutdown: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s still blocked after Shutdown", api)
			}
		})
	}
}

// TestReusePortMaxConns: Config.MaxConns caps a ReusePort group's open
// connections as it caps one listener's, not each socket's.
func TestReusePortMaxConns(t *testing.T) {
	const max, conns = 4, 12
	rt := newRT(t, Config{Loops: 2, ReusePort: true, MaxConns: max})
	ln := listenTCP(t, rt)
	var mu sync.Mutex
	open := 0
	go rt.Serve(ln, HandlerFuncs{Open: func(*CallbackConn) { mu.Lock(); open++; mu.Unlock() }})
	dialStd(t, ln.Addr().String(), conns)
	// Every connection is either served or rejected (closed at once).
	eventually(t, 10*time.Second, func() (bool, string) {
		mu.Lock()
		o := open
		mu.Unlock()
		rej := loopSum(rt.Stats(), func(l *LoopStats) uint64 { return l.Rejected })
		return o+int(rej) == conns, fmt.Sprintf("open %d + rejected %v != %d", o, rej, conns)
	})
	mu.Lock()
	defer mu.Unlock()
	if open != max {
		t.Errorf("%d connections served over a ReusePort group with MaxConns %d", open, max)
	}
}

// TestReusePortAcceptCloseRace: the first Accept of a ReusePort group
// (which starts the group's accept goroutines) and Close at the same time.
// Close's wait for those goroutines raced with their start (a WaitGroup Add
// unordered with its Wait; the race detector caught it in a stress run of
// TestReusePortShutdown).
func TestReusePortAcceptCloseRace(t *testing.T) {
	rt := newRT(t, Config{Loops: 2, ReusePort: true})
	for i := 0; i < 100; i++ {
		ln, err := rt.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := ln.Accept(); done <- err }()
		ln.Close()
		select {
		case err := <-done:
			if !errors.Is(err, net.ErrClosed) {
				t.Fatalf("Accept after Close: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Accept still blocked 10 s after Close")
		}
	}
}
