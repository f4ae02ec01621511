package uringrt

// Cancellation safety: cancelled reads lose no byte and write none late.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uringrt/uringrt/runtime/experiment"
)

// ---- cancellation safety ----

// TestReadCancelNoLateWrite: a Read cut short by a deadline or by Close
// returns only when the kernel is done with its buffer: a sentinel
// written into the buffer afterwards survives data sent later, and that
// data is read whole by the next Read.
func TestReadCancelNoLateWrite(t *testing.T) {
	for _, tier := range tiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			rng := rand.New(rand.NewSource(1))
			c, s := pair(t, rt, "tcp")
			msg := make([]byte, 64)
			for i := 0; i < 30; i++ {
				buf := make([]byte, 64)
				s.SetReadDeadline(time.Now().Add(time.Duration(rng.Intn(3000)) * time.Microsecond))
				if n, err := s.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatalf("read with nothing sent = %d, %v; want a timeout", n, err)
				}
				for j := range buf {
					buf[j] = 0xEE
				}
				relFillPattern(msg, int64(i))
				if _, err := c.Write(msg); err != nil {
					t.Fatal(err)
				}
				s.SetReadDeadline(time.Now().Add(5 * time.Second))
				got := make([]byte, len(msg))
				if _, err := io.ReadFull(s, got); err != nil {
					t.Fatalf("round %d: the message sent after a timed-out Read: %v", i, err)
				}
				if !bytes.Equal(got, msg) {
					t.Fatalf("round %d: message %v, want %v", i, got, msg)
				}
				if !bytes.Equal(buf, bytes.Repeat([]byte{0xEE}, len(buf))) {
					t.Fatalf("round %d: the kernel wrote into the buffer of a Read that had returned: %v", i, buf)
				}
			}
			// Close: a Read blocked across Close returns ErrClosed and its
			// buffer is not written afterwards.
			for i := 0; i < 5; i++ {
				c, s := pair(t, rt, "tcp")
				buf := make([]byte, 64)
				done := make(chan error, 1)
				go func() {
					_, err := s.Read(buf)
					done <- err
				}()
				time.Sleep(time.Duration(rng.Intn(3000)) * time.Microsecond)
				s.Close()
				if err := <-done; !errors.Is(err, net.ErrClosed) {
					t.Fatalf("read blocked across Close: %v", err)
				}
				for j := range buf {
					buf[j] = 0xEE
				}
				c.Write(msg) // may fail: the peer is gone
				time.Sleep(5 * time.Millisecond)
				if !bytes.Equal(buf, bytes.Repeat([]byte{0xEE}, len(buf))) {
					t.Fatalf("the kernel wrote into the buffer of a Read ended by Close: %v", buf)
				}
			}
		})
	}
}

// TestReadDeadlinesLoseNoBytes: a stream of numbered bytes read with
// random deadlines (past, now, soon): every byte the kernel took arrives
// once and in order.
func TestReadDeadlinesLoseNoBytes(t *testing.T) {
	for _, tier := range tiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			c, s := pair(t, rt, "tcp")
			const total = 1 << 20
			end := relTestDeadline(t, 30*time.Second)
			werr := make(chan error, 1)
			go func() {
				rng := rand.New(rand.NewSource(2))
				buf := make([]byte, 16<<10)
				c.SetWriteDeadline(end)
				for off := 0; off < total; {
					n := min(1+rng.Intn(len(buf)), total-off)
					relFillPattern(buf[:n], int64(off))
					if _, err := c.Write(buf[:n]); err != nil {
						werr <- err
						return
					}
					off += n
					if rng.Intn(8) == 0 {
						time.Sleep(time.Duration(rng.Intn(500)) * time.Microsecond)
					}
				}
				werr <- nil
			}()
			rng := rand.New(rand.NewSource(3))
			buf := make([]byte, 16<<10)
			timeouts := 0
			for off := 0; off < total; {
				if time.Now().After(end) {
					t.Fatalf("ran out of time after %d of %d bytes", off, total)
				}
				s.SetReadDeadline(time.Now().Add(time.Duration(rng.Intn(1500)-500) * time.Microsecond))
				n, err := s.Read(buf[:1+rng.Intn(len(buf))])
				if cerr := relCheckPattern(buf[:n], int64(off)); cerr != nil {
					t.Fatal(cerr)
				}
				off += n
				if err != nil {
					if !errors.Is(err, os.ErrDeadlineExceeded) {
						t.Fatalf("read after %d bytes: %v", off, err)
					}
					if n != 0 {
						t.Fatalf("a timed-out Read returned %d bytes", n)
					}
					timeouts++
				}
			}
			if err := <-werr; err != nil {
				t.Fatal(err)
			}
			if timeouts == 0 {
				t.Error("no Read timed out: the test did not cut reads short")
			}
			t.Logf("%d reads cut short by deadlines", timeouts)
		})
	}
}

// TestAsyncReadDeadlineUnderLoad: under experiment.PollAsync (IOSQE_ASYNC recv) a Read
// whose deadline passes must return even when the cancel reaches the recv
// while it moves from io-wq to its internal poll (the kernel answers ENOENT
// or EALREADY and cancels nothing); the loop sends the cancel again. Before
// that, with two other processes keeping the CPUs busy, a Read here hung
// within a few thousand rounds.
func TestAsyncReadDeadlineUnderLoad(t *testing.T) {
	const hogFor = 10 * time.Second
	startCPUHogs(t, 2, hogFor)
	rt := newRT(t, Config{Loops: 1, Switches: experiment.Switches{Pollable: experiment.PollAsync}})
	const conns = 16
	end := time.Now().Add(hogFor - 2*time.Second)
	var rounds atomic.Int64
	errs := make(chan error, conns)
	for k := 0; k < conns; k++ {
		c, s := pair(t, rt, "tcp")
		go func() {
			errs <- func() error {
				rng := rand.New(rand.NewSource(int64(k)))
				msg := []byte("after the timeout")
				got := make([]byte, len(msg))
				buf := make([]byte, 64)
				for time.Now().Before(end) {
					rounds.Add(1)
					s.SetReadDeadline(time.Now().Add(time.Duration(rng.Intn(1000)) * time.Microsecond))
					done := make(chan error, 1)
					go func() { _, err := s.Read(buf); done <- err }()
					select {
					case err := <-done:
						if !errors.Is(err, os.ErrDeadlineExceeded) {
							return fmt.Errorf("Read = %v, want a timeout", err)
						}
					case <-time.After(5 * time.Second):
						return errors.New("a Read whose deadline passed is still blocked after 5 s")
					}
					if _, err := c.Write(msg); err != nil {
						return err
					}
					s.SetReadDeadline(time.Now().Add(5 * time.Second))
					if _, err := io.ReadFull(s, got); err != nil || !bytes.Equal(got, msg) {
						return fmt.Errorf("the message after the timeout: %q, %v", got, err)
					}
				}
				return nil
			}()
		}()
	}
	for k := 0; k < conns; k++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	t.Logf("%d rounds on %d connections", rounds.Load(), conns)
}
