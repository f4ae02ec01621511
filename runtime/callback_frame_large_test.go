package uringrt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// TestCallbackKeptCapCountsKeptOnly: a parser of 48 KiB frames under
// MaxWriteBuffer 64 KiB keeps at most one partial frame (under 48 KiB),
// though the kept bytes and a new recv together pass 64 KiB: the cap
// bounds what the handler kept, so every frame is parsed and the
// connection stays open.
func TestCallbackKeptCapCountsKeptOnly(t *testing.T) {
	const frame, frames = 48 << 10, 64
	for _, tier := range pauseTiers {
		t.Run(tier.name, func(t *testing.T) {
			cfg := tier.cfg
			cfg.MaxWriteBuffer = 64 << 10
			rt := newRT(t, cfg)
			var parsed atomic.Int64
			var maxKept atomic.Int64
			closed := make(chan error, 1)
			addr := serveCB(t, rt, HandlerFuncs{
				Blocking: tier.blocking,
				Data: func(c *CallbackConn, _ []byte) {
					for {
						if _, err := c.Peek(frame); err != nil {
							break
						}
						c.Discard(frame)
						parsed.Add(1)
					}
					if n := int64(c.InboundBuffered()); n > maxKept.Load() {
						maxKept.Store(n)
					}
				},
				Close: func(c *CallbackConn, err error) { closed <- err },
			}).Addr().String()
			c := dialStd(t, addr, 1)[0]
			go c.Write(make([]byte, frame*frames))
			if !relWaitFor(20*time.Second, func() bool { return parsed.Load() == frames }) {
				select {
				case err := <-closed:
					t.Fatalf("closed after %d of %d frames: %v", parsed.Load(), frames, err)
				default:
					t.Fatalf("%d of %d frames parsed", parsed.Load(), frames)
				}
			}
			if m := maxKept.Load(); m >= frame {
				t.Errorf("kept %d bytes, want under a frame", m)
			}
		})
	}
}

// TestCallbackFramingFromGoroutineDuringOnData: while OnData runs (it
// waits for the goroutine), Peek, Next, Discard and InboundBuffered
// called from another goroutine return ErrNotInCallback (0) and take
// nothing: the handler then gets all its bytes.
func TestCallbackFramingFromGoroutineDuringOnData(t *testing.T) {
	if !haveCurG {
		t.Skip("no goroutine identity on this architecture")
	}
	rt := newRT(t, Config{Loops: 1})
	opened := make(chan *CallbackConn, 1)
	inData := make(chan struct{})
	tried := make(chan struct{})
	var got atomic.Int64
	var first atomic.Bool
	addr := serveCB(t, rt, HandlerFuncs{
		Open: func(c *CallbackConn) { opened <- c },
		Data: func(c *CallbackConn, data []byte) {
			if first.CompareAndSwap(false, true) {
				inData <- struct{}{}
				<-tried
			}
			n, _ := c.Discard(-1)
			got.Add(int64(n))
		},
	}).Addr().String()
	conn := dialStd(t, addr, 1)[0]
	c := <-opened
	conn.Write([]byte("0123456789"))
	select {
	case <-inData:
	case <-time.After(10 * time.Second):
		t.Fatal("no OnData")
	}
	errs := []error{}
	_, err := c.Peek(1)
	errs = append(errs, err)
	_, err = c.Next(1)
	errs = append(errs, err)
	_, err = c.Discard(1)
	errs = append(errs, err)
	n := c.InboundBuffered()
	close(tried)
	for i, err := range errs {
		if !errors.Is(err, ErrNotInCallback) {
			t.Errorf("call %d from a goroutine during OnData: %v, want ErrNotInCallback", i, err)
		}
	}
	if n != 0 {
		t.Errorf("InboundBuffered from a goroutine during OnData = %d, want 0", n)
	}
	if !relWaitFor(5*time.Second, func() bool { return got.Load() == 10 }) {
		t.Errorf("handler consumed %d of 10 bytes", got.Load())
	}
}

// TestCallbackLargeFrames: 1 MiB values behind a 4-byte length, sent
// back to back, parsed with Peek and Discard (the memcached set pattern):
// every value arrives whole (CRC) on every tier, and the kept input never
// holds more than a frame and a recv.
func TestCallbackLargeFrames(t *testing.T) {
	const value, count = 1 << 20, 24
	for _, tier := range pauseTiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			sums := make(chan uint32, count)
			addr := serveCB(t, rt, HandlerFuncs{
				Blocking: tier.blocking,
				Data: func(c *CallbackConn, _ []byte) {
					for {
						hdr, err := c.Peek(4)
						if err != nil {
							return
						}
						n := int(binary.BigEndian.Uint32(hdr))
						b, err := c.Peek(4 + n)
						if err != nil {
							return
						}
						sums <- crc32.ChecksumIEEE(b[4:])
						c.Discard(4 + n)
					}
				},
			}).Addr().String()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			want := make([]uint32, count)
			var out bytes.Buffer
			for i := range count {
				v := pausePattern(value)
				v[0], v[value-1] = byte(i), byte(i>>8)
				want[i] = crc32.ChecksumIEEE(v)
				out.Write(binary.BigEndian.AppendUint32(nil, value))
				out.Write(v)
			}
			go conn.Write(out.Bytes())
			for i := range count {
				select {
				case s := <-sums:
					if s != want[i] {
						t.Fatalf("value %d: CRC %08x, want %08x", i, s, want[i])
					}
				case <-time.After(20 * time.Second):
					t.Fatalf("%d of %d values", i, count)
				}
			}
		})
	}
}
