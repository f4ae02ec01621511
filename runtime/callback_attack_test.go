package uringrt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Hostile peers against the callback API's receive path and buffer
// lending (stream mode, lend.go): bursts that stop reading, resets in
// the middle of a stream, half-closes, big and small messages in turn,
// more streams than a loop has stream buffers, closes from OnData while a
// buffer is lent, and the runtime closing during the streams. After each,
// every buffer is back (checkCBIdle).

// checkCBIdle waits (20 s at most) until rt's loops serve no callback
// connection, then checks that nothing they held is left: no stream
// buffer out of its loop's pool (nor one twice in it, nor more than
// streamMaxBufs allocated), no provided buffer lent, no queued chunk
// accounted in the memory budget.
func checkCBIdle(t *testing.T, rt *Runtime) {
	t.Helper()
	end := time.Now().Add(20 * time.Second)
	for _, l := range rt.loops {
		for {
			var conns, live, first, lent, pool int
			var held int64
			dup := false
			onLoop(l, func() {
				conns, live, first, lent, pool = len(l.cbConns), l.streamLive, l.firstLive, l.lentBufs, len(l.streamBufs)
				held = l.budget.held.Load()
				seen := map[*byte]bool{}
				for _, b := range l.streamBufs {
					dup = dup || seen[&b[0]]
					seen[&b[0]] = true
				}
			})
			if conns > 0 {
				if time.Now().After(end) {
					t.Fatalf("loop %d still serves %d callback conns", l.id, conns)
				}
				time.Sleep(5 * time.Millisecond)
				continue
			}
			if live != 0 || first != 0 || lent != 0 || held != 0 || dup || pool > streamMaxBufs {
				t.Fatalf("loop %d with no conns: streamLive %d, firstLive %d, lentBufs %d, budget held %d, a stream buffer twice in the pool: %v, pool %d (max %d)",
					l.id, live, first, lent, held, dup, pool, streamMaxBufs)
			}
			break
		}
	}
	if h := rt.budget.held.Load(); h != 0 {
		t.Fatalf("runtime budget holds %d bytes with no conns", h)
	}
}

// attackHandlers are the handler shapes the attacks run against.
func attackHandlers() map[string]Handler {
	return map[string]Handler{
		"nocopy": EchoHandler{},
		"write": HandlerFuncs{Data: func(c *CallbackConn, d []byte) {
			if _, err := c.Write(d); err != nil {
				c.Close()
			}
		}},
		// Peek/Next framing: 4 KiB frames echoed whole, lent when they
		// lie in the received buffer, the partial tail kept.
		"frame": HandlerFuncs{Data: func(c *CallbackConn, d []byte) {
			for {
				f, err := c.Next(4 << 10)
				if err != nil {
					return
				}
				if _, err := c.WriteNoCopy(f); err != nil {
					c.Close()
					return
				}
			}
		}},
		// Writes from another goroutine: OnData copies and hands off.
		"async": asyncEcho(),
		// A MayBlocker: OnData runs on a worker and may block.
		"blocking": blockingEcho{},
	}
}

// blockingEcho is a MayBlocker echo (not a HalfCloser): OnData runs on
// a worker and blocks a moment every 16th call, as a handler waiting on a
// database does.
type blockingEcho struct{}

func (blockingEcho) MayBlock() bool         { return true }
func (blockingEcho) OnOpen(c *CallbackConn) {}
func (blockingEcho) OnData(c *CallbackConn, d []byte) {
	n, _ := c.Value().(int)
	if c.SetValue(n + 1); n%16 == 0 {
		time.Sleep(time.Millisecond)
	}
	if _, err := c.Write(d); err != nil {
		c.Close()
	}
}
func (blockingEcho) OnClose(c *CallbackConn, err error) {}

// asyncEcho echoes through AsyncWrite from one goroutine per connection,
// in order, retrying a refused write. OnData hands each copy over a
// channel of 16 (its own memory stays small; reads pause long before it
// fills).
func asyncEcho() Handler {
	type state struct{ ch chan []byte }
	return HandlerFuncs{
		Open: func(c *CallbackConn) {
			s := &state{ch: make(chan []byte, 16)}
			c.SetValue(s)
			go func() {
				for b := range s.ch {
					for {
						_, err := c.AsyncWrite(b)
						if errors.Is(err, ErrWriteBufferFull) {
							time.Sleep(time.Millisecond)
							continue
						}
						break
					}
				}
			}()
		},
		Data: func(c *CallbackConn, d []byte) {
			c.Value().(*state).ch <- append([]byte(nil), d...)
		},
		Close: func(c *CallbackConn, err error) { close(c.Value().(*state).ch) },
	}
}

// eachAttack runs f as a subtest for every handler of hs, on whole and on
// incrementally consumed provided buffers (cfg.IncrementalBuffers).
func eachAttack(t *testing.T, hs map[string]Handler, f func(t *testing.T, h Handler, cfg Config)) {
	for _, inc := range []bool{false, true} {
		for name, h := range hs {
			t.Run(fmt.Sprintf("%s/inc=%v", name, inc), func(t *testing.T) {
				f(t, h, Config{IncrementalBuffers: inc})
			})
		}
	}
}

func needBufRing(t *testing.T, rt *Runtime) {
	if rt.loops[0].bufRing == nil {
		t.Skip("no provided buffer ring")
	}
}

// TestAttackBurstThenStopReading: peers that write big bursts and never
// read. Every connection's queue stays under MaxWriteBuffer, the loop's
// stream buffers under streamMaxBufs, and once the peers go everything is
// given back.
func TestAttackBurstThenStopReading(t *testing.T) {
	eachAttack(t, attackHandlers(), func(t *testing.T, h Handler, cfg Config) {
		const mwb = 256 << 10
		cfg.Loops, cfg.MaxWriteBuffer = 1, mwb
		rt := newRT(t, cfg)
		needBufRing(t, rt)
		var maxQ atomic.Int64
		ln := serveCB(t, rt, HandlerFuncs{
			Open: func(c *CallbackConn) { h.OnOpen(c) },
			Data: func(c *CallbackConn, d []byte) {
				h.OnData(c, d)
				if q := int64(c.outq.n); q > maxQ.Load() {
					maxQ.Store(q)
				}
			},
			Close: func(c *CallbackConn, err error) { h.OnClose(c, err) },
		})
		const conns = 8
		cs := dialStd(t, ln.Addr().String(), conns)
		resetPeakRSS(t)
		rss0 := relRssBytes(t)
		inParallel(t, conns, func(i int) error {
			c := cs[i]
			buf := make([]byte, 64<<10)
			for k := range buf {
				buf[k] = byte(k)
			}
			// Write until a write makes no progress for 1 s (the
			// server stopped reading), 16 MiB at most.
			for n := 0; n < 16<<20; n += len(buf) {
				c.SetWriteDeadline(time.Now().Add(time.Second))
				if _, err := c.Write(buf); err != nil {
					break
				}
			}
			return nil
		})
		l := rt.loops[0]
		var live int
		var held int64
		onLoop(l, func() { live, held = l.streamLive, l.budget.held.Load() })
		if q := maxQ.Load(); q > mwb {
			t.Errorf("a queue held %d bytes, MaxWriteBuffer %d", q, mwb)
		}
		if live > streamMaxBufs {
			t.Errorf("%d stream buffers out, max %d", live, streamMaxBufs)
		}
		// Queued chunk capacity: under MaxWriteBuffer plus a chunk
		// of rounding, or a lent 32 KiB stream buffer, a connection.
		if lim := int64(conns * (mwb + streamBufSize)); held > lim {
			t.Errorf("queues hold %d bytes, want at most %d", held, lim)
		}
		// Peak RSS: the ring, the stream buffers and what the queues may
		// hold, twice (the GC's headroom), plus 32 MiB for the rest
		// (writing 16 MiB a peer, an unbounded server would hold 128; the
		// async handler's own copies are in it).
		ring := int64(rt.cfg.Buffers * rt.cfg.BufferSize)
		if grow, lim := peakRSS(t)-rss0, ring+streamMaxBufs*streamBufSize+2*int64(conns*(mwb+streamBufSize))+32<<20; !raceEnabled && grow > lim {
			t.Errorf("peak RSS grew %d MiB, want at most %d MiB", grow>>20, lim>>20)
		}
		for _, c := range cs {
			c.Close()
		}
		checkCBIdle(t, rt)
	})
}

// streamThenCloseWrite writes msg to c in 64 KiB writes from a new
// goroutine, then shuts c's writing side (CloseWrite); the channel gives
// the first write error, or CloseWrite's result.
func streamThenCloseWrite(c net.Conn, msg []byte) <-chan error {
	werr := make(chan error, 1)
	go func() {
		for off := 0; off < len(msg); off += 64 << 10 {
			if _, err := c.Write(msg[off:min(off+64<<10, len(msg))]); err != nil {
				werr <- err
				return
			}
		}
		werr <- c.(*net.TCPConn).CloseWrite()
	}()
	return werr
}

// pattern returns n patterned bytes (seed).
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*31) + byte(i>>12)
	}
	return b
}

// TestAttackResetMidStream: peers that reset (SO_LINGER 0) in the middle
// of a 64 KiB stream, with the server's echo still queued and their own
// input unread: no panic, and every buffer comes back.
func TestAttackResetMidStream(t *testing.T) {
	eachAttack(t, attackHandlers(), func(t *testing.T, h Handler, cfg Config) {
		cfg.Loops = 2
		rt := newRT(t, cfg)
		needBufRing(t, rt)
		ln := serveCB(t, rt, h)
		for round := range 8 {
			inParallel(t, 8, func(i int) error {
				c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
				if err != nil {
					return err
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(30 * time.Second))
				msg := pattern(64<<10, byte(i+round))
				// Whole echoes first (stream mode), then a reset
				// part-way through one.
				for range 4 {
					go c.Write(msg)
					got := make([]byte, len(msg))
					if _, err := io.ReadFull(c, got); err != nil {
						return err
					}
					if d := firstDiff(got, msg); d >= 0 {
						return fmt.Errorf("echo byte %d differs", d)
					}
				}
				cut := (i*7919 + round*104729) % len(msg)
				if _, err := c.Write(msg[:cut]); err != nil {
					return err
				}
				if i%2 == 0 {
					// Read part of the echo of the cut (the framing
					// handler echoes whole 4 KiB frames only), leaving
					// the rest.
					io.ReadFull(c, make([]byte, cut&^(4<<10-1)/2))
				}
				setLinger0(t, c)
				return nil
			})
		}
		checkCBIdle(t, rt)
	})
}

// halfCloseEcho is EchoHandler that keeps a half-closed connection open
// and closes it from OnReadEOF, once its echo is queued.
type halfCloseEcho struct{ EchoHandler }

func (halfCloseEcho) OnReadEOF(c *CallbackConn) bool {
	c.Close()
	return true
}

// TestAttackHalfCloseStream: a peer that streams, shuts its writing side
// (CloseWrite) while the server is in stream mode, and reads until EOF
// gets every byte of the echo in order; also from a MayBlocker handler,
// whose OnData calls for the bytes before the FIN may still be queued on
// its worker when the FIN comes.
func TestAttackHalfCloseStream(t *testing.T) {
	hs := attackHandlers()
	delete(hs, "async") // its writes after the FIN's close fail, by contract
	hs["halfcloser"] = halfCloseEcho{}
	eachAttack(t, hs, func(t *testing.T, h Handler, cfg Config) {
		cfg.Loops = 1
		rt := newRT(t, cfg)
		needBufRing(t, rt)
		ln := serveCB(t, rt, h)
		defer logTCPAbortsOnFailure(t)()
		inParallel(t, 8, func(i int) error {
			c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
			if err != nil {
				return err
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(60 * time.Second))
			msg := pattern(4<<20, byte(i))
			werr := streamThenCloseWrite(c, msg)
			got, err := io.ReadAll(c)
			if err != nil {
				// Where the stream broke tells a close with unread
				// input (before the writer's FIN) from one after.
				writer := "still writing"
				select {
				case werr := <-werr:
					writer = fmt.Sprintf("done (%v)", werr)
				default:
				}
				st := rt.Stats().Loops[0]
				return fmt.Errorf("conn %d: read %d of %d echoed bytes, writer %s, server pauses %d, accepted %d, closed %d: %w",
					i, len(got), len(msg), writer, st.ReadPausesConn, st.Accepted, st.Closed, err)
			}
			if err := <-werr; err != nil {
				return err
			}
			if d := firstDiff(got, msg); d >= 0 || len(got) != len(msg) {
				return fmt.Errorf("conn %d: echo of %d bytes differs at %d (got %d)", i, len(msg), d, len(got))
			}
			return nil
		})
		if _, blocking := h.(blockingEcho); !blocking && streamEnters(rt) == 0 {
			t.Error("no connection entered stream mode") // (a MayBlocker's never do)
		}
		checkCBIdle(t, rt)
	})
}

// logTCPAbortsOnFailure snapshots the kernel's counters of connections it
// reset (TcpExt TCPAbortOn*: a close with unread input, data after a
// close, memory, timeout, linger) and returns a func, to defer, that logs
// how they grew if t failed meanwhile. They count the whole network
// namespace, but the tests of a package run one at a time: a reset a
// test's peer saw shows up in them as the server's reason for it.
func logTCPAbortsOnFailure(t *testing.T) func() {
	before := tcpAborts()
	return func() {
		if !t.Failed() {
			return
		}
		after := tcpAborts()
		for _, k := range []string{"TCPAbortOnClose", "TCPAbortOnData", "TCPAbortOnMemory", "TCPAbortOnTimeout", "TCPAbortOnLinger"} {
			t.Logf("kernel %s +%d", k, after[k]-before[k])
		}
	}
}

// tcpAborts reads the TcpExt counters of /proc/net/netstat (nil when it
// cannot).
func tcpAborts() map[string]int64 {
	b, err := os.ReadFile("/proc/net/netstat")
	if err != nil {
		return nil
	}
	m := map[string]int64{}
	lines := strings.Split(string(b), "\n")
	for i := 0; i+1 < len(lines); i += 2 {
		k, v := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if len(k) == 0 || k[0] != "TcpExt:" {
			continue
		}
		for j := 1; j < len(k) && j < len(v); j++ {
			m[k[j]], _ = strconv.ParseInt(v[j], 10, 64)
		}
	}
	return m
}

// TestAttackBigSmallAlternate: connections that alternate big and small
// messages enter and leave stream mode again and again; every echo is
// whole and every buffer comes back.
func TestAttackBigSmallAlternate(t *testing.T) {
	eachAttack(t, attackHandlers(), func(t *testing.T, h Handler, cfg Config) {
		cfg.Loops = 1
		rt := newRT(t, cfg)
		needBufRing(t, rt)
		ln := serveCB(t, rt, h)
		const conns = 8
		cs := dialStd(t, ln.Addr().String(), conns)
		inParallel(t, conns, func(i int) error {
			for k := range 12 {
				if err := echoPattern(cs[i], 512<<10, byte(i+k), 64<<10); err != nil {
					return err
				}
				for j := range 2 * streamLeave {
					if err := echoPattern(cs[i], 4<<10, byte(j), 4<<10); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if _, blocking := h.(blockingEcho); !blocking && streamEnters(rt) < conns {
			t.Errorf("StreamEnters %d, want at least %d", streamEnters(rt), conns)
		}
		for _, c := range cs {
			c.Close()
		}
		checkCBIdle(t, rt)
	})
}

// TestAttackManyStreams: more streaming connections than a loop has
// stream buffers, on one loop and on two.
func TestAttackManyStreams(t *testing.T) {
	for _, loops := range []int{1, 2} {
		t.Run(fmt.Sprint("loops", loops), func(t *testing.T) {
			rt := newRT(t, Config{Loops: loops})
			needBufRing(t, rt)
			ln := serveCB(t, rt, EchoHandler{})
			conns := loops*streamMaxBufs + 32
			cs := dialStd(t, ln.Addr().String(), conns)
			inParallel(t, conns, func(i int) error { return echoPattern(cs[i], 1<<20, byte(i), 64<<10) })
			for _, l := range rt.loops {
				var live int
				onLoop(l, func() { live = l.streamLive })
				if live > streamMaxBufs {
					t.Errorf("loop %d: %d stream buffers out, max %d", l.id, live, streamMaxBufs)
				}
			}
			for _, c := range cs {
				c.Close()
			}
			checkCBIdle(t, rt)
		})
	}
}

// TestAttackCloseFromOnDataLent: a handler that lends what it read
// (WriteNoCopy) and closes the connection in the same OnData. Closing
// once it has read all the peer sends, the peer gets the whole echo, then
// EOF; closing part-way through a stream (unread input: the close is a
// reset, as Go's net's), the peer reads a prefix of its bytes, never
// others. Every buffer comes back.
func TestAttackCloseFromOnDataLent(t *testing.T) {
	const total = 2 << 20
	for _, limit := range []int{total, 300 << 10} {
		t.Run(fmt.Sprint("close-at-", limit), func(t *testing.T) {
			rt := newRT(t, Config{Loops: 1})
			needBufRing(t, rt)
			ln := serveCB(t, rt, HandlerFuncs{Data: func(c *CallbackConn, d []byte) {
				n, _ := c.Value().(int)
				c.WriteNoCopy(d)
				if n += len(d); n >= limit {
					c.Close()
				}
				c.SetValue(n)
			}})
			inParallel(t, 16, func(i int) error {
				c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
				if err != nil {
					return err
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(30 * time.Second))
				msg := pattern(total, byte(i))
				go func() {
					for off := 0; off < len(msg); off += 64 << 10 {
						if _, err := c.Write(msg[off : off+64<<10]); err != nil {
							return
						}
					}
				}()
				got, err := io.ReadAll(c)
				if limit == total && (err != nil || len(got) != total) {
					return fmt.Errorf("conn %d: %d bytes of %d echoed, then %v", i, len(got), total, err)
				}
				if err != nil && !errors.Is(err, syscall.ECONNRESET) {
					return err
				}
				if d := firstDiff(got, msg[:len(got)]); d >= 0 {
					return fmt.Errorf("conn %d: echo differs at byte %d", i, d)
				}
				return nil
			})
			checkCBIdle(t, rt)
		})
	}
}

// TestAttackCloseDuringStreams: Runtime.Shutdown and Close while
// connections stream: no panic, Close returns, and the loops gave every
// buffer back.
func TestAttackCloseDuringStreams(t *testing.T) {
	for _, how := range []string{"close", "shutdown", "close-stalled", "shutdown-stalled"} {
		t.Run(how, func(t *testing.T) {
			// -stalled: the peers stop reading (their echoes queue, lent
			// buffers wait in the queues) before the runtime ends.
			stalled := strings.HasSuffix(how, "-stalled")
			rt, err := New(Config{Loops: 2, Backend: BackendUring})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			needBufRing(t, rt)
			ln, err := rt.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go rt.Serve(ln, EchoHandler{})
			const conns = 32
			cs := dialStd(t, ln.Addr().String(), conns)
			var wg sync.WaitGroup
			var echoed atomic.Int64
			for i, c := range cs {
				wg.Add(2)
				c.SetDeadline(time.Now().Add(30 * time.Second))
				msg := pattern(64<<10, byte(i))
				go func() {
					defer wg.Done()
					for range 256 {
						if _, err := c.Write(msg); err != nil {
							return
						}
					}
				}()
				go func() {
					defer wg.Done()
					buf := make([]byte, 64<<10)
					for {
						n, err := c.Read(buf)
						if echoed.Add(int64(n)) >= conns*(256<<10) && stalled {
							return
						}
						if err != nil {
							return
						}
					}
				}()
			}
			for echoed.Load() < conns*(256<<10) {
				time.Sleep(time.Millisecond)
			}
			if stalled {
				time.Sleep(100 * time.Millisecond) // the queues fill
			}
			if strings.HasPrefix(how, "close") {
				rt.Close()
			} else {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				rt.Shutdown(ctx)
				cancel()
				rt.Close()
			}
			for _, c := range cs {
				c.Close()
			}
			wg.Wait()
			for _, l := range rt.loops {
				if l.streamLive != 0 || l.lentBufs != 0 || l.budget.held.Load() != 0 {
					t.Errorf("loop %d after Close: streamLive %d, lentBufs %d, budget held %d", l.id, l.streamLive, l.lentBufs, l.budget.held.Load())
				}
			}
		})
	}
}

// TestAttackAsyncWriteCap: goroutines that keep AsyncWriting to a
// connection whose peer reads slower than they write never get more than
// MaxWriteBuffer queued for it: the bytes a loop moves from posted to queued are counted
// all the way (an AsyncWrite checks the two together).
func TestAttackAsyncWriteCap(t *testing.T) {
	const mwb = 64 << 10
	rt := newRT(t, Config{Loops: 1, MaxWriteBuffer: mwb})
	opened := make(chan *CallbackConn, 1)
	ln := serveCB(t, rt, HandlerFuncs{Open: func(c *CallbackConn) { opened <- c }})
	// The peer reads all the time, through a small receive buffer, so
	// the queue stays near its cap while writes keep being taken.
	for round := range 4 { // a fresh connection each
		peer, c := dialReading(t, ln.Addr().String(), opened)
		l := c.l
		var maxQ atomic.Int64
		sample := func() { // on the loop
			if q := int64(c.outq.n); q > maxQ.Load() {
				maxQ.Store(q)
			}
		}
		// Sample the queue on the loop every 256 writes, and at the end.
		inParallel(t, 4, func(i int) error {
			msg := make([]byte, 512)
			for k := range 20000 {
				if _, err := c.AsyncWrite(msg); err != nil && !errors.Is(err, ErrWriteBufferFull) {
					return err
				}
				if k%256 == 0 {
					onLoop(l, sample)
				}
			}
			return nil
		})
		onLoop(l, sample)
		if m := maxQ.Load(); m > mwb {
			t.Fatalf("round %d: %d bytes queued on a connection, MaxWriteBuffer %d", round, m, mwb)
		}
		peer.Close()
	}
}

// TestAttackIncrementalStreamLend: with an incrementally consumed buffer
// ring, a connection that enters stream mode from the multishot recv
// still gets completions in ring buffers the kernel keeps filling
// (CQE_F_BUF_MORE) until the cancel lands. Their data is not in its
// stream buffer: a WriteNoCopy of it must not lend that buffer (its chunk
// would point at ring memory recycled before the send), and every echoed
// byte arrives in order. Buffers of 256 KiB make nearly every such
// completion one the kernel keeps filling.
func TestAttackIncrementalStreamLend(t *testing.T) {
	rt := newRT(t, Config{Loops: 1, IncrementalBuffers: true, BufferSize: 256 << 10, Buffers: 16})
	needBufRing(t, rt)
	if !rt.loops[0].bufRing.Incremental() {
		t.Skip("no incrementally consumed buffer ring (Linux 6.12+)")
	}
	var bad atomic.Int64
	ln := serveCB(t, rt, HandlerFuncs{Data: func(c *CallbackConn, d []byte) {
		c.WriteNoCopy(d)
		if k := len(c.outq.chunks); k > 0 {
			if ch := c.outq.chunks[k-1]; ch.sbuf != nil && !within(ch.b, ch.sbuf) {
				bad.Add(1)
			}
		}
	}})
	const conns = 4
	cs := dialStd(t, ln.Addr().String(), conns)
	inParallel(t, conns, func(i int) error {
		for k := range 16 {
			// Small messages first (the multishot recv), then a stream.
			for j := range 2 * streamLeave {
				if err := echoPattern(cs[i], 512, byte(j), 512); err != nil {
					return err
				}
			}
			if err := echoPattern(cs[i], 1<<20, byte(i+k), 12<<10+123); err != nil {
				return err
			}
		}
		return nil
	})
	if n := bad.Load(); n > 0 {
		t.Fatalf("%d stream buffers lent for data that lies in the buffer ring", n)
	}
	for _, c := range cs {
		c.Close()
	}
	checkCBIdle(t, rt)
}

// TestAttackMixedWriteCap: an echo that writes in OnData while other
// goroutines AsyncWrite to the same connection, whose peer reads slower
// than both write: the connection's queue never passes MaxWriteBuffer
// (each write path checks what the other queued and posted).
func TestAttackMixedWriteCap(t *testing.T) {
	const mwb = 128 << 10
	rt := newRT(t, Config{Loops: 1, MaxWriteBuffer: mwb})
	var maxQ atomic.Int64
	note := func(c *CallbackConn) { // on the loop
		if q := int64(c.outq.n); q > maxQ.Load() {
			maxQ.Store(q)
		}
	}
	opened := make(chan *CallbackConn, 1)
	ln := serveCB(t, rt, HandlerFuncs{
		Open: func(c *CallbackConn) { opened <- c },
		Data: func(c *CallbackConn, d []byte) {
			c.Write(d)
			note(c)
		},
	})
	// The peer reads all the time, through a small receive buffer, so
	// the queue stays near its cap while writes keep being taken.
	for round := range 4 { // a fresh connection each
		peer, c := dialReading(t, ln.Addr().String(), opened)
		var done atomic.Bool
		go func() {
			defer done.Store(true)
			buf := make([]byte, 16<<10)
			for range 512 {
				peer.SetWriteDeadline(time.Now().Add(10 * time.Second))
				if _, err := peer.Write(buf); err != nil {
					return
				}
			}
		}()
		// Until the peer has written all (its echo is read meanwhile).
		inParallel(t, 2, func(i int) error {
			msg := make([]byte, 1<<10)
			for k := 0; k < 1<<22 && !done.Load(); k++ {
				if _, err := c.AsyncWrite(msg); err != nil && !errors.Is(err, ErrWriteBufferFull) {
					return err
				}
				if k%256 == 0 {
					onLoop(c.l, func() { note(c) })
				}
			}
			return nil
		})
		onLoop(c.l, func() { note(c) })
		if m := maxQ.Load(); m > mwb {
			t.Fatalf("round %d: %d bytes queued on a connection, MaxWriteBuffer %d", round, m, mwb)
		}
		peer.Close()
	}
}

// TestAttackCloseInOnDataTakesNoStreamBuf: a connection that lends its
// stream buffer and closes in the same OnData, with its peer not reading
// (so it stays closing while its queue cannot drain), holds only the lent
// buffer: it takes no fresh one for a recv that will never come.
func TestAttackCloseInOnDataTakesNoStreamBuf(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	needBufRing(t, rt)
	l := rt.loops[0]
	closed := make(chan *CallbackConn, 1)
	ln := serveCB(t, rt, HandlerFuncs{Data: func(c *CallbackConn, d []byte) {
		if c.Value() != nil || c.stream == nil || len(d) < lendMin {
			return
		}
		c.SetValue(true)
		c.Write(make([]byte, 3<<20)) // more than the peer's socket takes
		c.WriteNoCopy(d)
		c.Close()
		closed <- c
	}})
	peer, err := tinyRcvDialer.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	peer.SetWriteDeadline(time.Now().Add(20 * time.Second))
	if _, err := peer.Write(make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	var c *CallbackConn
	select {
	case c = <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("no OnData in stream mode")
	}
	var finalized, hasStream bool
	var live int
	onLoop(l, func() { finalized, hasStream, live = c.finalized, c.stream != nil, l.streamLive })
	if finalized {
		t.Skip("the queue drained: the connection is gone")
	}
	if hasStream || live != 1 {
		t.Fatalf("a closing connection holds a stream buffer: %v; stream buffers out %d, want 1 (the lent one)", hasStream, live)
	}
	peer.Close()
	checkCBIdle(t, rt)
}

// TestAttackBlockingHandlerInputBounded: a MayBlocker handler whose OnData
// blocks while its peer keeps sending: the loop stops reading the
// connection once blockInMax bytes wait for the worker (it read and
// copied everything the peer sent), and reads again once the handler
// catches up, so every byte is handled.
func TestAttackBlockingHandlerInputBounded(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	gate := make(chan struct{})
	var handled atomic.Int64
	ln := serveCB(t, rt, HandlerFuncs{Blocking: true, Data: func(c *CallbackConn, d []byte) {
		<-gate
		handled.Add(int64(len(d)))
	}})
	c := relDialStd(t, ln.Addr().String())
	const total = 16 << 20
	sent := make(chan int, 1)
	go func() {
		buf := make([]byte, 64<<10)
		n := 0
		for n < total {
			c.SetWriteDeadline(time.Now().Add(30 * time.Second))
			m, err := c.Write(buf)
			if n += m; err != nil {
				break
			}
		}
		sent <- n
	}()
	// The peer's writes stop making progress while the handler is held:
	// what the loop read by then is what waits for the worker.
	readBytes := func() (n uint64) {
		for _, l := range rt.Stats().Loops {
			n += l.ReadBytes
		}
		return n
	}
	var rd uint64
	for stable := 0; stable < 20; {
		time.Sleep(10 * time.Millisecond)
		if r := readBytes(); r == rd {
			stable++
		} else {
			rd, stable = r, 0
		}
		if rd > 4*blockInMax {
			break
		}
	}
	if lim := uint64(blockInMax + 2*recvLimit); rd > lim {
		t.Errorf("the loop read %d bytes for a handler blocked in its first OnData, want at most %d", rd, lim)
	}
	close(gate)
	n := <-sent
	if n != total {
		t.Fatalf("the peer sent %d of %d bytes", n, total)
	}
	for end := time.Now().Add(30 * time.Second); handled.Load() < total; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the handler got %d of %d bytes", handled.Load(), total)
		}
	}
}

// TestAttackTimeoutsCloseStalledStreams: peers that stream, then stop
// reading and writing, are closed by IdleTimeout or a write timeout with
// lent stream buffers in their queues and sends stuck in flight: every
// buffer comes back, and no connection is closed sooner than its timeout
// after its last progress.
//
// The peers run in this process, so when it is descheduled (under -race
// on a loaded machine, for half a second at times) they stall with the
// runtime, and a short timeout would rightly close them in the middle of
// the echo. So the echo runs under no short timeout: the write timeout
// (200 ms) is set once the echo is done, and IdleTimeout, a Config that
// holds from the start, is 2 s.
func TestAttackTimeoutsCloseStalledStreams(t *testing.T) {
	for _, how := range []string{"idle", "write-timeout"} {
		t.Run(how, func(t *testing.T) {
			const conns = 8
			cfg := Config{Loops: 1}
			timeout, wantErr := 200*time.Millisecond, ErrWriteTimeout
			if how == "idle" {
				timeout, wantErr = 2*time.Second, ErrIdleTimeout
				cfg.IdleTimeout = timeout
			}
			rt := newRT(t, cfg)
			needBufRing(t, rt)
			opened := make(chan *CallbackConn, conns)
			var mu sync.Mutex
			var closes []error
			var closedAt []time.Time
			ln := serveCB(t, rt, HandlerFuncs{
				Open: func(c *CallbackConn) { opened <- c },
				Data: EchoHandler{}.OnData,
				Close: func(c *CallbackConn, err error) {
					mu.Lock()
					closes, closedAt = append(closes, err), append(closedAt, time.Now())
					mu.Unlock()
				},
			})
			cs := dialStd(t, ln.Addr().String(), conns)
			// A whole echo (stream mode).
			inParallel(t, conns, func(i int) error { return echoPattern(cs[i], 1<<20, byte(i), 64<<10) })
			// Every connection has made progress since now: its
			// first burst bytes below are read, nothing being queued.
			armed := time.Now()
			if how == "write-timeout" {
				for range conns {
					(<-opened).SetWriteTimeout(timeout)
				}
			}
			// A burst not read: the server's queue fills with lent
			// buffers, its sends stall, then its reads pause, and the
			// peer's writes block until the timeout resets the
			// connection (a deadline on them instead could end the
			// burst early on a slow machine, the server's output all
			// in the kernel's buffers: not stalled, never closed).
			inParallel(t, conns, func(i int) error {
				buf := pattern(64<<10, byte(i))
				cs[i].SetWriteDeadline(time.Now().Add(30 * time.Second))
				for range 1024 {
					if _, err := cs[i].Write(buf); err != nil {
						if errors.Is(err, os.ErrDeadlineExceeded) {
							return fmt.Errorf("the peer's writes blocked 30 s: the server did not close its stalled connection")
						}
						return nil // the reset
					}
				}
				return fmt.Errorf("64 MiB sent and the server's queue never stalled")
			})
			checkCBIdle(t, rt) // (the peers stay open: the timeouts close them)
			mu.Lock()
			defer mu.Unlock()
			if len(closes) != conns {
				t.Fatalf("%d of %d conns closed", len(closes), conns)
			}
			for i, err := range closes {
				if err != wantErr {
					t.Errorf("conn closed with %v, want %v", err, wantErr)
				}
				if d := closedAt[i].Sub(armed); d < timeout {
					t.Errorf("conn closed %v after its last progress, before its timeout (%v)", d, timeout)
				}
			}
		})
	}
}

// tinyRcvDialer dials with a 4 KiB receive buffer: a peer whose socket
// takes little, so the server's queue fills while the peer still reads.
var tinyRcvDialer = net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
	return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10) })
}}

// dialReading dials addr with tinyRcvDialer, reads and discards
// everything the server sends, and returns the peer and the server's
// connection, which the handler's OnOpen sends on opened.
func dialReading(t *testing.T, addr string, opened <-chan *CallbackConn) (net.Conn, *CallbackConn) {
	t.Helper()
	peer, err := tinyRcvDialer.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, peer)
	select {
	case c := <-opened:
		return peer, c
	case <-time.After(10 * time.Second):
		t.Fatal("no OnOpen")
		return nil, nil
	}
}

// TestCallbackWriteCapRacesAsyncWrite races, many times over, one write of
// a connection's own callback (writeHeld) with one AsyncWrite's
// reservation, each of which fits the cap alone and not both: at most one
// may be accepted. The callback's write used to read the posted bytes
// before publishing its own as queued while the AsyncWrite posted first
// and then read the queued bytes, so both could pass.
func TestCallbackWriteCapRacesAsyncWrite(t *testing.T) {
	const mwb, pre, w = 4 << 10, 1 << 10, 2 << 10 // pre+w fits, pre+2w does not
	rt := newRT(t, Config{Loops: 1, MaxWriteBuffer: mwb, MaxBufferedBytes: -1})
	opened := make(chan *CallbackConn, 1)
	ln := serveCB(t, rt, HandlerFuncs{Open: func(c *CallbackConn) { opened <- c }})
	peer, c := dialReading(t, ln.Addr().String(), opened)
	defer peer.Close()
	var (
		round, done atomic.Int64 // the round the poster is to run; the last it ran
		postOK      atomic.Bool
		both, races int
	)
	const rounds = 200000
	go func() { // the AsyncWrite's side: post's reservation
		for r := int64(1); r <= rounds; r++ {
			for round.Load() < r {
				if round.Load() < 0 {
					return
				}
				runtime.Gosched()
			}
			postOK.Store(c.reserve(w, false))
			done.Store(r)
		}
	}()
	defer round.Store(-1)
	buf := make([]byte, w)
	deadline := time.Now().Add(5 * time.Second)
	onLoop(c.l, func() { // the loop, holding c's state as its callback would
		for r := int64(1); r <= rounds && time.Now().Before(deadline); r++ {
			c.outq.release(c.l)
			c.queued.Store(0)
			c.wroteInCB = false
			if _, err := c.writeHeld(buf[:pre], false); err != nil {
				t.Errorf("round %d: prefill: %v", r, err)
				return
			}
			round.Store(r)
			for range r % 8 { // stagger the two sides
				runtime.Gosched()
			}
			_, err := c.writeHeld(buf, false)
			for done.Load() < r {
				runtime.Gosched()
			}
			races++
			if err == nil && postOK.Load() {
				both++
			}
			if postOK.Load() {
				c.unpost(w)
			}
		}
		c.outq.release(c.l)
		c.queued.Store(0)
	})
	if both > 0 {
		t.Fatalf("%d of %d rounds: a callback's write and an AsyncWrite both passed MaxWriteBuffer %d (%d queued + %d + %d)", both, races, mwb, pre, w, w)
	}
	t.Logf("%d rounds", races)
}
