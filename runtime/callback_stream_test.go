package uringrt

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// streamStates counts l's callback conns in stream mode and probing.
func streamStates(t *testing.T, l *loop) (stream, probing, conns int) {
	onLoop(l, func() {
		for c := range l.cbConns {
			conns++
			if c.stream != nil {
				stream++
			}
			if c.probing {
				probing++
			}
		}
	})
	return
}

func streamEnters(rt *Runtime) (n uint64) {
	for _, l := range rt.Stats().Loops {
		n += l.StreamEnters
	}
	return n
}

// TestCallbackStreamMode: connections that stream large writes read into
// buffers of their own (stream mode), echo every byte in order through
// WriteNoCopy's lending of those buffers, and leave stream mode, giving
// the buffer back, when the same connections turn to small messages.
func TestCallbackStreamMode(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	if rt.loops[0].bufRing == nil {
		t.Skip("no provided buffer ring: every connection reads into its own buffer")
	}
	ln := serveCB(t, rt, HandlerFuncs{Data: func(c *CallbackConn, d []byte) {
		// Half lent, half copied: the lent part must stay intact
		// while the copy is queued behind it.
		h := len(d) / 2
		c.WriteNoCopy(d[:h])
		c.Write(d[h:])
	}})
	const conns = 4
	cs := dialStd(t, ln.Addr().String(), conns)
	inParallel(t, conns, func(i int) error { return echoPattern(cs[i], 8<<20, byte(i), 64<<10) })
	// Each entered stream mode (one that stalled at the end, its peer's
	// buffer full, may have left it since).
	if e := streamEnters(rt); e < conns {
		t.Fatalf("StreamEnters %d after 8 MiB each way on %d conns, want >= %d", e, conns, conns)
	}
	// The same connections, now small messages: stream mode ends.
	inParallel(t, conns, func(i int) error {
		for k := range 2 * streamLeave {
			if err := echoPattern(cs[i], 100, byte(k), 100); err != nil {
				return err
			}
		}
		return nil
	})
	if stream, _, _ := streamStates(t, rt.loops[0]); stream != 0 {
		t.Fatalf("after small messages %d conns still in stream mode", stream)
	}
}

// TestCallbackSmallMessagesNoStream: request/response traffic of small
// messages never enters stream mode: it stays on the multishot recv after
// its first recv.
func TestCallbackSmallMessagesNoStream(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	if rt.loops[0].bufRing == nil {
		t.Skip("no provided buffer ring")
	}
	ln := serveCB(t, rt, EchoHandler{})
	inParallel(t, 8, func(i int) error {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		for k := range 200 {
			if err := echoPattern(c, 512, byte(i+k), 512); err != nil {
				return err
			}
		}
		return nil
	})
	if e := streamEnters(rt); e != 0 {
		t.Fatalf("StreamEnters %d for 512-byte ping-pong, want 0", e)
	}
}

// TestCallbackStreamModeEntersFromMultishot: a connection that starts with
// small messages (so it is on the multishot recv) and then streams enters
// stream mode through the multishot recv's cancellation, and loses no
// byte on the way.
func TestCallbackStreamModeEntersFromMultishot(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	if rt.loops[0].bufRing == nil {
		t.Skip("no provided buffer ring")
	}
	ln := serveCB(t, rt, HandlerFuncs{Data: func(c *CallbackConn, d []byte) { c.WriteNoCopy(d) }})
	c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for k := range 10 {
		if err := echoPattern(c, 64, byte(k), 64); err != nil {
			t.Fatal(err)
		}
	}
	if stream, probing, _ := streamStates(t, rt.loops[0]); stream != 0 || probing != 0 {
		t.Fatalf("after small messages: stream %d probing %d, want the multishot recv", stream, probing)
	}
	if err := echoPattern(c, 16<<20, 7, 256<<10); err != nil {
		t.Fatal(err)
	}
	if streamEnters(rt) == 0 {
		t.Fatal("a 16 MiB stream did not enter stream mode from the multishot recv")
	}
}

// echoPattern writes n patterned bytes (seed) in writes of at most chunk
// bytes while reading the echo, and checks it byte for byte.
func echoPattern(c net.Conn, n int, seed byte, chunk int) error {
	c.SetDeadline(time.Now().Add(30 * time.Second))
	sent := make([]byte, n)
	for i := range sent {
		sent[i] = seed + byte(i*31) + byte(i>>12)
	}
	var werr atomic.Value
	go func() {
		for off := 0; off < n; off += chunk {
			if _, err := c.Write(sent[off:min(off+chunk, n)]); err != nil {
				werr.Store(err)
				return
			}
		}
	}()
	got := make([]byte, n)
	if _, err := io.ReadFull(c, got); err != nil {
		if e := werr.Load(); e != nil {
			return fmt.Errorf("write: %v; read: %v", e, err)
		}
		return err
	}
	if i := firstDiff(got, sent); i >= 0 {
		return fmt.Errorf("echo byte %d of %d is %d, want %d", i, n, got[i], sent[i])
	}
	return nil
}

func firstDiff(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return len(a)
}

// TestCallbackStreamModeCap: more streaming connections on a loop than
// streamMaxBufs: at most that many hold a stream buffer (the others stay
// on the multishot recv), and every echo is whole.
func TestCallbackStreamModeCap(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	if rt.loops[0].bufRing == nil {
		t.Skip("no provided buffer ring")
	}
	ln := serveCB(t, rt, HandlerFuncs{Data: func(c *CallbackConn, d []byte) { c.WriteNoCopy(d) }})
	const conns = streamMaxBufs + 16
	cs := dialStd(t, ln.Addr().String(), conns)
	inParallel(t, conns, func(i int) error { return echoPattern(cs[i], 1<<20, byte(i), 64<<10) })
	l := rt.loops[0]
	stream, _, n := streamStates(t, l)
	var live int
	onLoop(l, func() { live = l.streamLive })
	if n != conns || stream > streamMaxBufs || live > streamMaxBufs {
		t.Fatalf("%d conns: %d in stream mode, %d stream buffers held, want at most %d", n, stream, live, streamMaxBufs)
	}
	if streamEnters(rt) == 0 {
		t.Fatal("no connection entered stream mode")
	}
}

// TestCallbackProbeWithinWriteBuffer: a probe recv (a new connection's
// first, callback_stream.go) takes no more than the room left under
// MaxWriteBuffer, as every other recv arm does (budget.go, streamRoom): an
// echo whose queue still holds a greeting when its first input arrives
// never gets ErrWriteBufferFull for writing what it read.
func TestCallbackProbeWithinWriteBuffer(t *testing.T) {
	const size = 64 << 10
	rt := newRT(t, Config{Loops: 1, BufferSize: size, Buffers: 64, MaxWriteBuffer: size})
	if rt.loops[0].bufRing == nil {
		t.Skip("no provided buffer ring")
	}
	written := make(chan struct{})
	var full atomic.Int32
	ln := serveCB(t, rt, HandlerFuncs{
		Open: func(c *CallbackConn) {
			// The peer's input is in the socket before the first recv is
			// armed, and the greeting is queued when it completes.
			select {
			case <-written:
			case <-time.After(10 * time.Second):
			}
			c.Write([]byte{'>'})
		},
		Data: func(c *CallbackConn, d []byte) {
			if _, err := c.WriteNoCopy(d); err == ErrWriteBufferFull {
				full.Add(1)
				c.Close()
			}
		},
	})
	c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	msg := make([]byte, size+4<<10)
	for i := range msg {
		msg[i] = byte(i*7) + byte(i>>10)
	}
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	close(written)
	got := make([]byte, 1+len(msg))
	_, err = io.ReadFull(c, got)
	if n := full.Load(); n > 0 {
		t.Fatalf("%d echo writes got ErrWriteBufferFull with MaxWriteBuffer %d", n, size)
	}
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != '>' || !bytes.Equal(got[1:], msg) {
		t.Fatalf("echo differs at byte %d", firstDiff(got[1:], msg))
	}
}

// TestCallbackStreamLentAtClose: a connection that lends its stream buffer
// (WriteNoCopy) and ends in the same OnData (here a panic, so it is
// finalized before OnData's caller takes the buffer back from the offer)
// gives that buffer back once: during its OnClose, which runs on the loop,
// the loop's free stream buffers hold it once and streamLive is not below
// zero.
func TestCallbackStreamLentAtClose(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	l := rt.loops[0]
	if l.bufRing == nil {
		t.Skip("no provided buffer ring")
	}
	type pool struct {
		live int
		dup  bool
	}
	look := func() (p pool) { // on the loop
		p.live = l.streamLive
		seen := map[*byte]bool{}
		for _, b := range l.streamBufs {
			p.dup = p.dup || seen[&b[0]]
			seen[&b[0]] = true
		}
		return p
	}
	atClose := make(chan pool, 1)
	ln := serveCB(t, rt, HandlerFuncs{
		Data: func(c *CallbackConn, d []byte) {
			if c.stream != nil && len(d) >= lendMin {
				c.WriteNoCopy(d) // lent: nothing else is queued
				panic("test: end the connection in the OnData that lent")
			}
		},
		Close: func(c *CallbackConn, err error) { atClose <- look() },
	})
	c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() {
		c.SetWriteDeadline(time.Now().Add(20 * time.Second))
		buf := make([]byte, 64<<10)
		for range 64 {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	var p pool
	select {
	case p = <-atClose:
	case <-time.After(20 * time.Second):
		t.Fatal("the connection never entered stream mode and closed")
	}
	if p.live < 0 || p.dup {
		t.Fatalf("in OnClose: streamLive %d, a buffer twice in the pool: %v", p.live, p.dup)
	}
	onLoop(l, func() { p = look() })
	if p.live != 0 || p.dup {
		t.Fatalf("after the close: streamLive %d (want 0), a buffer twice in the pool: %v", p.live, p.dup)
	}
}

// TestCallbackStreamCrossLoopWriteNoCopy: two streaming connections on
// different loops forward what they read to each other with WriteNoCopy
// (a proxy across loops). Such a write holds the other connection's state
// only while that connection's own callback runs, so it reads the other
// loop's lending offer only while it is stable (the race detector's
// check), and every byte arrives in order: data from another loop is
// copied, never lent.
func TestCallbackStreamCrossLoopWriteNoCopy(t *testing.T) {
	rt := newRT(t, Config{Loops: 2})
	if rt.loops[0].bufRing == nil {
		t.Skip("no provided buffer ring")
	}
	var peers [2]atomic.Pointer[CallbackConn] // by accept order
	opened := make(chan *CallbackConn, 2)
	ln := serveCB(t, rt, HandlerFuncs{
		Open: func(c *CallbackConn) { opened <- c },
		Data: func(c *CallbackConn, d []byte) {
			other := peers[0].Load()
			if other == c {
				other = peers[1].Load()
			}
			if _, err := other.WriteNoCopy(d); err != nil {
				t.Errorf("forward %d bytes: %v", len(d), err)
			}
		},
	})
	var clients [2]net.Conn
	for i := range clients {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients[i] = c
		select {
		case cc := <-opened:
			peers[i].Store(cc)
		case <-time.After(5 * time.Second):
			t.Fatal("no OnOpen")
		}
	}
	if peers[0].Load().l == peers[1].Load().l {
		t.Skip("both connections landed on one loop")
	}
	// Under MaxWriteBuffer (4 MiB): a write across loops posts a copy,
	// and no peer-queue cap can refuse one (this proxy has no
	// backpressure of its own).
	const n = 2 << 20
	payload := make([]byte, n)
	x := uint32(7)
	for i := range payload {
		x = x*1664525 + 1013904223
		payload[i] = byte(x >> 24)
	}
	errs := make(chan error, 4)
	for i := range clients {
		from, to := clients[i], clients[1-i]
		from.SetDeadline(time.Now().Add(30 * time.Second))
		go func() {
			_, err := from.Write(payload)
			errs <- err
		}()
		go func() {
			got := make([]byte, n)
			to.SetReadDeadline(time.Now().Add(30 * time.Second))
			if _, err := io.ReadFull(to, got); err != nil {
				errs <- err
				return
			}
			if i := firstDiff(got, payload); i >= 0 {
				errs <- fmt.Errorf("byte %d of %d differs", i, n)
				return
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if streamEnters(rt) == 0 {
		t.Fatal("no connection entered stream mode")
	}
}

// TestCallbackSilentConnsLeaveStreamBufs: connections that open and send
// nothing hold the stream buffers of their pending first recvs, but at
// most half of the loop's: a connection that then streams still enters
// stream mode.
func TestCallbackSilentConnsLeaveStreamBufs(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	if rt.loops[0].bufRing == nil {
		t.Skip("no provided buffer ring")
	}
	var opened atomic.Int32
	ln := serveCB(t, rt, HandlerFuncs{
		Open: func(*CallbackConn) { opened.Add(1) },
		Data: func(c *CallbackConn, d []byte) { c.WriteNoCopy(d) },
	})
	dialStd(t, ln.Addr().String(), streamMaxBufs) // closed by the test's cleanup
	deadline := time.Now().Add(20 * time.Second)
	for opened.Load() < streamMaxBufs && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := opened.Load(); n < streamMaxBufs {
		t.Fatalf("%d of %d silent connections opened", n, streamMaxBufs)
	}
	l := rt.loops[0]
	var live int
	onLoop(l, func() { live = l.streamLive })
	if live > streamMaxBufs/2 {
		t.Errorf("%d silent connections hold %d stream buffers, want at most %d", streamMaxBufs, live, streamMaxBufs/2)
	}
	before := streamEnters(rt)
	bulk := dialStd(t, ln.Addr().String(), 1)
	if err := echoPattern(bulk[0], 4<<20, 1, 64<<10); err != nil {
		t.Fatal(err)
	}
	if streamEnters(rt) == before {
		t.Fatal("the streaming connection did not enter stream mode")
	}
}
