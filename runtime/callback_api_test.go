package uringrt

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// chatServer is a line chat on the callback API: every complete line a
// client sends is written to every client (itself included) with Write,
// from the sender's OnData, whatever loop each client is on.
type chatServer struct {
	mu    sync.Mutex
	conns []*CallbackConn
	open  chan struct{}
	errs  atomic.Int64
}

func (s *chatServer) handler() Handler {
	return HandlerFuncs{
		Open: func(c *CallbackConn) {
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.open <- struct{}{}
		},
		Data: func(c *CallbackConn, _ []byte) {
			buf, _ := c.Peek(-1)
			for {
				i := bytes.IndexByte(buf, '\n')
				if i < 0 {
					return // a partial line stays for the next OnData
				}
				line, _ := c.Next(i + 1)
				s.mu.Lock()
				to := append([]*CallbackConn(nil), s.conns...)
				s.mu.Unlock()
				for _, d := range to {
					if _, err := d.Write(line); err != nil {
						s.errs.Add(1)
					}
				}
				buf = buf[i+1:]
			}
		},
	}
}

// TestCallbackChatFanOut: 12 clients on 2 loops each send 200 lines, each
// broadcast by Write from the sender's OnData to all 12: every client
// gets every line, each sender's in order (run under -race: no race
// between a Write from another connection's callback and the loop).
func TestCallbackChatFanOut(t *testing.T) {
	const clients, lines = 12, 200
	rt := newRT(t, Config{Loops: 2})
	s := &chatServer{open: make(chan struct{}, clients)}
	addr := serveCB(t, rt, s.handler()).Addr().String()
	cs := dialStd(t, addr, clients)
	for range clients {
		select {
		case <-s.open:
		case <-time.After(10 * time.Second):
			t.Fatal("clients not all opened")
		}
	}
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(2)
		go func() {
			defer wg.Done()
			w := bufio.NewWriter(c)
			for j := range lines {
				fmt.Fprintf(w, "c%02d l%03d\n", i, j)
				if j%7 == 0 {
					w.Flush() // lines split across segments too
				}
			}
			w.Flush()
		}()
		go func() {
			defer wg.Done()
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			next := make([]int, clients)
			sc := bufio.NewScanner(c)
			for got := 0; got < clients*lines; got++ {
				if !sc.Scan() {
					t.Errorf("client %d: %d of %d lines, then %v", i, got, clients*lines, sc.Err())
					return
				}
				var from, n int
				if _, err := fmt.Sscanf(sc.Text(), "c%02d l%03d", &from, &n); err != nil || from >= clients {
					t.Errorf("client %d: bad line %q", i, sc.Text())
					return
				}
				if n != next[from] {
					t.Errorf("client %d: line %d of sender %d, want %d", i, n, from, next[from])
					return
				}
				next[from]++
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		dumpCB(rt)
	}
	if n := s.errs.Load(); n != 0 {
		t.Fatalf("%d broadcast writes failed", n)
	}
}

// TestCallbackWriteFromGoroutineDuringOnData: a goroutine writes to a
// connection while its OnData writes to it too: both writers' lines
// arrive whole and in each writer's order (run under -race). OnData echoes
// whole lines only (a read may end inside one: the framing keeps the rest
// for the next OnData), since a line echoed in two Writes could have the
// goroutine's line between its halves.
func TestCallbackWriteFromGoroutineDuringOnData(t *testing.T) {
	const n = 2000
	rt := newRT(t, Config{Loops: 1})
	opened := make(chan *CallbackConn, 1)
	addr := serveCB(t, rt, HandlerFuncs{
		Open: func(c *CallbackConn) { opened <- c },
		Data: func(c *CallbackConn, data []byte) {
			if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
				whole, _ := c.Next(i + 1)
				c.Write(whole)
			} else {
				c.Peek(-1) // all of it stays for the next OnData
			}
		},
	}).Addr().String()
	c := dialStd(t, addr, 1)[0]
	cc := <-opened
	go func() {
		for i := range n {
			cc.Write(fmt.Appendf(nil, "G%05d\n", i))
		}
	}()
	go func() {
		for i := range n {
			fmt.Fprintf(c, "E%05d\n", i)
		}
	}()
	c.SetReadDeadline(time.Now().Add(60 * time.Second))
	sc := bufio.NewScanner(c)
	next := map[byte]int{}
	for got := 0; got < 2*n; got++ {
		if !sc.Scan() {
			t.Fatalf("%d of %d lines, then %v", got, 2*n, sc.Err())
		}
		var k int
		line := sc.Text()
		if len(line) != 6 || (line[0] != 'E' && line[0] != 'G') {
			t.Fatalf("torn line %q", line)
		}
		fmt.Sscanf(line[1:], "%05d", &k)
		if k != next[line[0]] {
			t.Fatalf("writer %c: line %d, want %d", line[0], k, next[line[0]])
		}
		next[line[0]]++
	}
}

// lenPrefixHandler answers every frame (4-byte big-endian length, then the
// payload) with the same frame, using Peek and Next; it reports each
// OnData on calls.
func lenPrefixHandler(calls chan<- int, blocking bool) Handler {
	return HandlerFuncs{Blocking: blocking, Data: func(c *CallbackConn, _ []byte) {
		for {
			hdr, err := c.Peek(4)
			if err != nil {
				break
			}
			frame, err := c.Next(4 + int(binary.BigEndian.Uint32(hdr)))
			if err != nil {
				break
			}
			c.Write(frame)
		}
		if calls != nil {
			calls <- c.InboundBuffered()
		}
	}}
}

func frames(payloads ...string) []byte {
	var b []byte
	for _, p := range payloads {
		b = binary.BigEndian.AppendUint32(b, uint32(len(p)))
		b = append(b, p...)
	}
	return b
}

// TestCallbackFrameSplitEveryOffset sends two length-prefixed frames in
// two writes split at every byte offset, the second write only once the
// server has seen the first part: the server answers each frame whole and
// once.
func TestCallbackFrameSplitEveryOffset(t *testing.T) {
	for _, tier := range relCbTiers {
		t.Run(tier.name, func(t *testing.T) {
			cfg := tier.cfg
			cfg.Loops = 1
			rt := newRT(t, cfg)
			calls := make(chan int, 4)
			addr := serveCB(t, rt, lenPrefixHandler(calls, tier.blocking)).Addr().String()
			c := dialStd(t, addr, 1)[0]
			msg := frames("hello", "uringrt framing")
			got := make([]byte, len(msg))
			for k := 1; k < len(msg); k++ {
				c.Write(msg[:k])
				kept := <-calls // the server took the first part
				if want := k; k >= 9 {
					want = k - 9 // the first frame was answered
					if want != kept {
						t.Fatalf("split at %d: %d bytes kept, want %d", k, kept, want)
					}
				} else if kept != want {
					t.Fatalf("split at %d: %d bytes kept, want %d", k, kept, want)
				}
				c.Write(msg[k:])
				<-calls
				c.SetReadDeadline(time.Now().Add(10 * time.Second))
				if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
					t.Fatalf("split at %d: got %q, %v", k, got, err)
				}
			}
		})
	}
}

// TestCallbackFramingOutsideOnData: Peek, Next and Discard refuse calls
// from elsewhere than the connection's OnData.
func TestCallbackFramingOutsideOnData(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	res := make(chan error, 3)
	opened := make(chan *CallbackConn, 1)
	addr := serveCB(t, rt, HandlerFuncs{
		Open: func(c *CallbackConn) {
			_, err := c.Peek(1)
			res <- err
			opened <- c
		},
	}).Addr().String()
	dialStd(t, addr, 1)
	c := <-opened
	_, err := c.Next(1)
	res <- err
	_, err = c.Discard(1)
	res <- err
	for range 3 {
		if err := <-res; !errors.Is(err, ErrNotInCallback) {
			t.Fatalf("got %v, want ErrNotInCallback", err)
		}
	}
	if n := c.InboundBuffered(); n != 0 {
		t.Fatalf("InboundBuffered outside OnData = %d", n)
	}
}

// TestCallbackInboundFull: a handler that keeps more than MaxWriteBuffer
// of input gets its connection closed with ErrInboundFull.
func TestCallbackInboundFull(t *testing.T) {
	rt := newRT(t, Config{Loops: 1, MaxWriteBuffer: 64 << 10})
	closed := make(chan error, 1)
	addr := serveCB(t, rt, HandlerFuncs{
		Data:  func(c *CallbackConn, _ []byte) { c.Peek(-1) }, // never consumes
		Close: func(c *CallbackConn, err error) { closed <- err },
	}).Addr().String()
	c := dialStd(t, addr, 1)[0]
	go c.Write(make([]byte, 256<<10))
	select {
	case err := <-closed:
		if !errors.Is(err, ErrInboundFull) {
			t.Fatalf("OnClose err = %v, want ErrInboundFull", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("not closed")
	}
}

// TestCallbackWriteBufferFullAndDrained: a goroutine writes to a peer that
// does not read until AsyncWrite refuses with ErrWriteBufferFull; the
// queue stays within MaxWriteBuffer; once the peer reads, OnDrained comes
// and every accepted byte arrives.
func TestCallbackWriteBufferFullAndDrained(t *testing.T) {
	const maxWB = 256 << 10
	rt := newRT(t, Config{Loops: 1, MaxWriteBuffer: maxWB})
	opened := make(chan *CallbackConn, 1)
	drained := make(chan struct{}, 1)
	addr := serveCB(t, rt, HandlerFuncs{
		Open: func(c *CallbackConn) { opened <- c },
		Drained: func(c *CallbackConn) {
			select {
			case drained <- struct{}{}:
			default:
			}
		},
	}).Addr().String()
	c, err := relSmallBufDialer.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cc := <-opened
	msg := make([]byte, 16<<10)
	var sent int64
	for i := 0; ; i++ {
		relFillPattern(msg, sent)
		_, err := cc.AsyncWrite(msg)
		if errors.Is(err, ErrWriteBufferFull) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		sent += int64(len(msg))
		if q := cc.OutboundBuffered(); q > maxWB {
			t.Fatalf("OutboundBuffered %d over MaxWriteBuffer %d", q, maxWB)
		}
		if i > 100000 {
			t.Fatal("AsyncWrite never refused")
		}
	}
	if _, err := cc.Write(msg); !errors.Is(err, ErrWriteBufferFull) {
		t.Fatalf("Write from a goroutine on a full queue: %v", err)
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, sent)
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatal(err)
	}
	if err := relCheckPattern(buf, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case <-drained:
	case <-time.After(10 * time.Second):
		t.Fatal("OnDrained not called")
	}
}

// TestCallbackTimers: AfterFunc runs on the loop and may write; a stopped
// timer does not run; Every repeats until stopped; timers end when the
// connection closes.
func TestCallbackTimers(t *testing.T) {
	for _, locked := range []bool{false, true} {
		t.Run(fmt.Sprint("locked=", locked), func(t *testing.T) { testCallbackTimers(t, locked) })
	}
}

func testCallbackTimers(t *testing.T, locked bool) {
	rt := newRT(t, Config{Loops: 1, LockedLoops: locked})
	var ticks atomic.Int32
	every := make(chan *LoopTimer, 1)
	closed := make(chan *CallbackConn, 1)
	addr := serveCB(t, rt, HandlerFuncs{
		Open: func(c *CallbackConn) {
			stopped := c.AfterFunc(20*time.Millisecond, func(c *CallbackConn) { c.Write([]byte("stopped ran\n")) })
			if !stopped.Stop() {
				c.Write([]byte("stop failed\n"))
			}
			c.AfterFunc(40*time.Millisecond, func(c *CallbackConn) { c.Write([]byte("after\n")) })
			every <- c.Every(time.Millisecond, func(c *CallbackConn) {
				if ticks.Add(1) == 3 {
					c.Write([]byte("tick3\n"))
				}
			})
		},
		Close: func(c *CallbackConn, err error) { closed <- c },
	}).Addr().String()
	c := dialStd(t, addr, 1)[0]
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	r := bufio.NewReader(c)
	got := map[string]bool{}
	for len(got) < 2 {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		got[line] = true
	}
	if !got["after\n"] || !got["tick3\n"] {
		t.Fatalf("lines %v", got)
	}
	c.Close()
	<-closed
	if (<-every).Stop() {
		t.Fatal("Every still pending after its connection closed")
	}
}

// TestCallbackReadWriteTimeout: a silent peer is closed with
// ErrReadTimeout; a peer that does not read its queued output with
// ErrWriteTimeout; both wrap os.ErrDeadlineExceeded.
func TestCallbackReadWriteTimeout(t *testing.T) {
	rt := newRT(t, Config{Loops: 1, MaxWriteBuffer: 1 << 20})
	closed := make(chan error, 2)
	addr := serveCB(t, rt, HandlerFuncs{
		Open: func(c *CallbackConn) {
			c.SetReadTimeout(50 * time.Millisecond)
		},
		Close: func(c *CallbackConn, err error) { closed <- err },
	}).Addr().String()
	dialStd(t, addr, 1)
	if err := <-closed; !errors.Is(err, ErrReadTimeout) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("OnClose err = %v, want ErrReadTimeout", err)
	}

	addr = serveCB(t, rt, HandlerFuncs{
		Open: func(c *CallbackConn) {
			c.SetWriteTimeout(50 * time.Millisecond)
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
	c, err := relSmallBufDialer.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := <-closed; !errors.Is(err, ErrWriteTimeout) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("OnClose err = %v, want ErrWriteTimeout", err)
	}
}

// dumpCB prints the callback state of every connection of rt (a failing
// test's diagnosis), from each loop.
func dumpCB(rt *Runtime) {
	for _, l := range rt.loops {
		done := make(chan struct{})
		l.post(request{kind: reqFunc, fn: func() {
			for c := range l.cbConns {
				fmt.Printf("loop %d conn %p outq %d posted %d pend %d dirty %v armed %v paused %v cb %d kept %d recvArmed %v\n", l.id, c, c.outq.n, c.posted.Load(), c.pendingWrites.Load(), c.dirty, c.sending(), c.paused, c.cb.Load(), len(c.frame.kept), c.recvOp.armed)
			}
			close(done)
		}})
		<-done
	}
}

// pubsub is a publisher goroutine's view of its subscribers: it writes
// each message to every subscriber with AsyncWrite; on ErrWriteBufferFull
// it waits for that subscriber's OnDrained, or for its end (its write
// timeout closes a subscriber that stopped reading).
type pubsub struct {
	mu   sync.Mutex
	subs map[*CallbackConn]*subscriber
	open chan *CallbackConn
	ends chan error
}

type subscriber struct {
	drained chan struct{}
	gone    chan struct{}
}

func newPubSub(writeTimeout time.Duration) (*pubsub, Handler) {
	ps := &pubsub{subs: map[*CallbackConn]*subscriber{}, open: make(chan *CallbackConn, 16), ends: make(chan error, 16)}
	return ps, HandlerFuncs{
		Open: func(c *CallbackConn) {
			c.SetWriteTimeout(writeTimeout)
			ps.mu.Lock()
			ps.subs[c] = &subscriber{drained: make(chan struct{}, 1), gone: make(chan struct{})}
			ps.mu.Unlock()
			ps.open <- c
		},
		Drained: func(c *CallbackConn) {
			ps.mu.Lock()
			s := ps.subs[c]
			ps.mu.Unlock()
			select {
			case s.drained <- struct{}{}:
			default:
			}
		},
		Close: func(c *CallbackConn, err error) {
			ps.mu.Lock()
			close(ps.subs[c].gone)
			delete(ps.subs, c)
			ps.mu.Unlock()
			ps.ends <- err
		},
	}
}

// publish writes msg to every subscriber, waiting for the full ones to
// drain or end.
func (ps *pubsub) publish(msg []byte) {
	ps.mu.Lock()
	subs := make(map[*CallbackConn]*subscriber, len(ps.subs))
	for c, s := range ps.subs {
		subs[c] = s
	}
	ps.mu.Unlock()
	for c, s := range subs {
		for {
			_, err := c.AsyncWrite(msg)
			if !errors.Is(err, ErrWriteBufferFull) {
				break // sent, or the subscriber is gone
			}
			select {
			case <-s.drained:
			case <-s.gone:
			}
		}
	}
}

// TestCallbackPubSubSlowSubscriber publishes 200 MB in 1 KiB messages (20
// MB under -race) to 4 subscribers, one of which never reads: the three
// readers get every message in order, the slow one is closed by its write
// timeout, and the server's RSS grows by less than 256 MiB (checked
// without -race).
func TestCallbackPubSubSlowSubscriber(t *testing.T) {
	total := 200 << 20
	if raceBuild() {
		total = 20 << 20
	}
	const msgSize, subs = 1 << 10, 4
	rt := newRT(t, Config{Loops: 2})
	ps, h := newPubSub(time.Second)
	addr := serveCB(t, rt, h).Addr().String()
	debug.FreeOSMemory()
	before := relRssBytes(t)
	cs := dialStd(t, addr, subs)
	for range subs {
		<-ps.open
	}
	var peak atomic.Int64
	stop := make(chan struct{})
	go func() { // sample RSS while the messages flow
		for {
			if r := relRssBytes(t); r > peak.Load() {
				peak.Store(r)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	var wg sync.WaitGroup
	for i, c := range cs[1:] { // cs[0] never reads
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetReadDeadline(time.Now().Add(5 * time.Minute))
			buf := make([]byte, msgSize)
			for m := 0; m < total/msgSize; m++ {
				if _, err := io.ReadFull(c, buf); err != nil {
					t.Errorf("reader %d: message %d: %v", i, m, err)
					return
				}
				if got := binary.BigEndian.Uint64(buf); got != uint64(m) {
					t.Errorf("reader %d: message %d is %d", i, m, got)
					return
				}
			}
		}()
	}
	msg := make([]byte, msgSize)
	for m := 0; m < total/msgSize; m++ {
		binary.BigEndian.PutUint64(msg, uint64(m))
		ps.publish(msg)
	}
	wg.Wait()
	close(stop)
	select {
	case err := <-ps.ends:
		if !errors.Is(err, ErrWriteTimeout) {
			t.Fatalf("slow subscriber closed with %v, want ErrWriteTimeout", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the slow subscriber was never closed")
	}
	growth := peak.Load() - before
	t.Logf("%d MiB to %d subscribers: RSS %d MiB -> peak %d MiB (growth %d MiB)", total>>20, subs, before>>20, peak.Load()>>20, growth>>20)
	if raceBuild() {
		return // the race detector's shadow memory inflates RSS
	}
	if growth > 256<<20 {
		t.Fatalf("RSS grew by %d MiB, want < 256 MiB", growth>>20)
	}
}
