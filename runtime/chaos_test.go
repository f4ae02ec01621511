package uringrt

// Limits, handler panics, hostile peers and shutdown under load.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/uringrt/uringrt/runtime/experiment"
)

// ---- limits ----

// TestMaxConns: connections over Config.MaxConns are closed at once and
// counted; a connection is accepted again once one closes.
func TestMaxConns(t *testing.T) {
	for _, api := range []string{"callback", "conn"} {
		t.Run(api, func(t *testing.T) {
			const max, extra = 4, 6
			rt := newRT(t, Config{Loops: 2, MaxConns: max})
			var ln net.Listener
			if api == "callback" {
				ln = relServeCB(t, rt, relEchoHandler(false))
				// relServeCB's probe connection must be gone before counting.
				if !relWaitFor(5*time.Second, func() bool { return activeConns(rt) == 0 }) {
					t.Fatal("probe connection never closed")
				}
			} else {
				ln = relServeConnEcho(t, rt)
			}
			rng := rand.New(rand.NewSource(4))
			var ok []net.Conn
			for i := 0; i < max; i++ {
				c := relDialStd(t, ln.Addr().String())
				if err := relEchoCheck(c, 1000, 5*time.Second, rng); err != nil {
					t.Fatalf("conn %d under the cap: %v", i, err)
				}
				ok = append(ok, c)
			}
			for i := 0; i < extra; i++ {
				c := relDialStd(t, ln.Addr().String())
				c.SetDeadline(time.Now().Add(5 * time.Second))
				c.Write([]byte("x"))
				_, err := c.Read(make([]byte, 1))
				if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatalf("conn %d over the cap was served or left open: %v", max+i, err)
				}
			}
			rejected := func() uint64 { return loopSum(rt.Stats(), func(l *LoopStats) uint64 { return l.Rejected }) }
			if !relWaitFor(5*time.Second, func() bool { return rejected() >= extra }) {
				t.Fatalf("rejected = %v, want %d", rejected(), extra)
			}
			// Close one: a new connection is served again.
			ok[0].Close()
			if !relWaitFor(5*time.Second, func() bool { return activeConns(rt) < max }) {
				t.Fatal("closed connection still counted")
			}
			c := relDialStd(t, ln.Addr().String())
			if err := relEchoCheck(c, 1000, 5*time.Second, rng); err != nil {
				t.Fatalf("conn after one closed: %v", err)
			}
			for _, c := range ok[1:] {
				if err := relEchoCheck(c, 1000, 5*time.Second, rng); err != nil {
					t.Fatalf("conn under the cap after rejections: %v", err)
				}
			}
		})
	}
}

// ---- no crash ----

// TestHandlerPanicClosesOnlyItsConn: a panic in OnData is recovered,
// logged once, counted, and closes that connection; the others keep
// echoing.
func TestHandlerPanicClosesOnlyItsConn(t *testing.T) {
	for _, tier := range relCbTiers {
		t.Run(tier.name, func(t *testing.T) {
			var logs lockedBuffer
			cfg := tier.cfg
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			rt := newRT(t, cfg)
			h := HandlerFuncs{Blocking: tier.blocking, Data: func(c *CallbackConn, d []byte) {
				if bytes.Contains(d, []byte("PANIC")) {
					panic("test handler panic")
				}
				c.Write(d)
			}}
			ln := relServeCB(t, rt, h)
			rng := rand.New(rand.NewSource(5))
			var good []net.Conn
			for i := 0; i < 5; i++ {
				good = append(good, relDialStd(t, ln.Addr().String()))
			}
			for i := 0; i < 3; i++ {
				bad := relDialStd(t, ln.Addr().String())
				bad.SetDeadline(time.Now().Add(5 * time.Second))
				bad.Write([]byte("PANIC"))
				if _, err := bad.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatalf("the panicking connection was not closed: %v", err)
				}
			}
			for i, c := range good {
				if err := relEchoCheck(c, 10000, 5*time.Second, rng); err != nil {
					t.Fatalf("good conn %d after panics: %v", i, err)
				}
			}
			if n := strings.Count(logs.String(), "handler panicked"); n != 1 {
				t.Errorf("panic logged %d times, want once:\n%s", n, logs.String())
			}
			if p := rt.Stats().HandlerPanics; p != 3 {
				t.Errorf("HandlerPanics = %v, want 3", p)
			}
		})
	}
}

// relChaosPeer does one hostile thing to addr, chosen by rng.
func relChaosPeer(addr string, rng *rand.Rand, payload []byte) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return
	}
	tc := c.(*net.TCPConn)
	c.SetDeadline(time.Now().Add(2 * time.Second))
	switch rng.Intn(7) {
	case 0: // connect and reset at once
		tc.SetLinger(0)
	case 1: // garbage, then reset while the echo is in flight
		c.Write(payload[:1+rng.Intn(len(payload))])
		tc.SetLinger(0)
	case 2: // a lot, never read, close (the server's sends hit a closed peer)
		c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
		c.Write(payload)
	case 3: // half-close, then read what comes back
		c.Write(payload[:1+rng.Intn(1000)])
		tc.CloseWrite()
		io.Copy(io.Discard, c)
	case 4: // close at a random moment mid-echo
		go c.Write(payload)
		time.Sleep(time.Duration(rng.Intn(2000)) * time.Microsecond)
	case 5: // close the read side, keep writing
		tc.CloseRead()
		c.Write(payload[:1+rng.Intn(len(payload))])
		tc.SetLinger(0)
	case 6: // nothing at all
	}
	c.Close()
}

// TestNetworkChaosNoCrash: hostile peers (resets mid-echo, half-closes,
// peers that never read, closes at random moments) against both APIs:
// the runtime does not panic, a well-behaved connection keeps echoing, and
// every descriptor is released.
func TestNetworkChaosNoCrash(t *testing.T) {
	for _, api := range []string{"callback", "conn"} {
		for _, tier := range []struct {
			name string
			cfg  Config
		}{{"default", Config{Loops: 2}}, {"features-off", Config{Loops: 1, Switches: experiment.Switches{DisableBufRing: true, DisableMultishot: true, DisableDeferTaskrun: true}}}, {"ring", Config{Loops: 1, Switches: experiment.Switches{Pollable: experiment.PollRing}}}} {
			if api == "callback" && tier.name == "ring" {
				continue
			}
			t.Run(api+"/"+tier.name, func(t *testing.T) {
				fds := countFDs(t)
				rt, err := New(Config{Backend: BackendUring, Loops: tier.cfg.Loops,
					Switches: experiment.Switches{Pollable: tier.cfg.Pollable, DisableBufRing: tier.cfg.DisableBufRing, DisableMultishot: tier.cfg.DisableMultishot, DisableDeferTaskrun: tier.cfg.DisableDeferTaskrun},
				})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { rt.Close() })
				var ln net.Listener
				if api == "callback" {
					ln = relServeCB(t, rt, relEchoHandler(false))
				} else {
					ln = relServeConnEcho(t, rt)
				}
				good := relDialStd(t, ln.Addr().String())
				payload := make([]byte, 256<<10)
				relFillPattern(payload, 0)
				end := relTestDeadline(t, 10*time.Second)
				var wg sync.WaitGroup
				for w := 0; w < 8; w++ {
					wg.Add(1)
					go func(w int) {
						defer wg.Done()
						rng := rand.New(rand.NewSource(int64(w)))
						for i := 0; i < 40 && time.Now().Before(end); i++ {
							relChaosPeer(ln.Addr().String(), rng, payload)
						}
					}(w)
				}
				gerr := make(chan error, 1)
				go func() {
					rng := rand.New(rand.NewSource(99))
					for i := 0; i < 20; i++ {
						if err := relEchoCheck(good, 4096, 5*time.Second, rng); err != nil {
							gerr <- err
							return
						}
					}
					gerr <- nil
				}()
				wg.Wait()
				if err := <-gerr; err != nil {
					t.Fatalf("well-behaved conn during chaos: %v", err)
				}
				good.Close()
				ln.Close()
				if err := rt.Close(); err != nil {
					t.Fatal(err)
				}
				if !relWaitFor(5*time.Second, func() bool { return countFDs(t) <= fds }) {
					t.Fatalf("descriptors: %d before, %d after:%s", fds, countFDs(t), listFDs())
				}
			})
		}
	}
}

// ---- shutdown under load ----

// TestShutdownUnderLoad: Shutdown while 1,000 connections echo returns
// before its 5 s context ends; every byte echoed before it began is
// intact; afterwards no descriptor, goroutine or in-flight op remains.
func TestShutdownUnderLoad(t *testing.T) {
	for _, api := range []string{"callback", "conn"} {
		t.Run(api, func(t *testing.T) {
			conns := 1000
			if testing.Short() {
				conns = 200
			}
			ignore := goleak.IgnoreCurrent()
			fds := countFDs(t)
			rt, err := New(Config{Backend: BackendUring, Loops: 2, Metrics: true})
			if err != nil {
				t.Fatal(err)
			}
			ln, err := rt.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			var srv sync.WaitGroup
			srv.Add(1)
			if api == "callback" {
				go func() { defer srv.Done(); rt.Serve(ln, relEchoHandler(false)) }()
			} else {
				go func() {
					defer srv.Done()
					for {
						c, err := ln.Accept()
						if err != nil {
							if errors.Is(err, net.ErrClosed) {
								return
							}
							continue
						}
						srv.Add(1)
						go func() { defer srv.Done(); defer c.Close(); io.Copy(c, c) }()
					}
				}()
			}
			end := relTestDeadline(t, 60*time.Second)
			var verified atomic.Int64
			var cl sync.WaitGroup
			errs := make(chan error, conns)
			var started sync.WaitGroup
			var shutdownBegan atomic.Bool
			for i := 0; i < conns; i++ {
				started.Add(1)
				cl.Add(1)
				go func(i int) {
					defer cl.Done()
					c, err := net.DialTimeout("tcp", ln.Addr().String(), 10*time.Second)
					started.Done()
					if err != nil {
						errs <- fmt.Errorf("dial %d: %w", i, err)
						return
					}
					defer c.Close()
					c.SetDeadline(end)
					rng := rand.New(rand.NewSource(int64(i)))
					wbuf, rbuf := make([]byte, 512), make([]byte, 512)
					var off int64
					for {
						n := 1 + rng.Intn(len(wbuf))
						relFillPattern(wbuf[:n], off)
						if _, err := c.Write(wbuf[:n]); err != nil {
							break
						}
						got, err := io.ReadFull(c, rbuf[:n])
						if cerr := relCheckPattern(rbuf[:got], off); cerr != nil {
							errs <- fmt.Errorf("conn %d: %w", i, cerr)
							return
						}
						verified.Add(int64(got))
						off += int64(got)
						if err != nil {
							if !shutdownBegan.Load() {
								errs <- fmt.Errorf("conn %d failed before shutdown: %w", i, err)
							}
							return
						}
					}
					if !shutdownBegan.Load() {
						errs <- fmt.Errorf("conn %d write failed before shutdown", i)
					}
				}(i)
			}
			started.Wait()
			time.Sleep(300 * time.Millisecond)
			before := verified.Load()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			shutdownBegan.Store(true)
			start := time.Now()
			err = rt.Shutdown(ctx)
			took := time.Since(start)
			t.Logf("%d bytes echoed and verified before Shutdown; Shutdown took %v", before, took)
			if err != nil {
				t.Fatalf("Shutdown under load: %v after %v", err, took)
			}
			if before == 0 {
				t.Fatal("nothing was echoed before Shutdown: no load")
			}
			cl.Wait()
			srv.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			for _, l := range rt.loops {
				<-l.done
				if l.inflight != 0 || l.closing != 0 || len(l.cbConns) != 0 {
					t.Errorf("loop %d after Shutdown: %d ops in flight, %d fds closing, %d callback conns", l.id, l.inflight, l.closing, len(l.cbConns))
				}
			}
			rt.mu.Lock()
			left := len(rt.conns) + len(rt.stdConns)
			rt.mu.Unlock()
			if left != 0 {
				t.Errorf("%d connections still tracked after Shutdown", left)
			}
			var inflight int64
			for _, l := range rt.Stats().Loops {
				inflight += l.Inflight
			}
			if inflight != 0 {
				t.Errorf("Inflight = %v after Shutdown", inflight)
			}
			if !relWaitFor(5*time.Second, func() bool { return countFDs(t) <= fds }) {
				t.Errorf("descriptors: %d before, %d after", fds, countFDs(t))
			}
			var leak error
			relWaitFor(5*time.Second, func() bool { leak = goleak.Find(ignore); return leak == nil })
			if err := leak; err != nil {
				t.Errorf("goroutines left after Shutdown: %v", err)
			}
		})
	}
}
