package uringrt

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/uringrt/uringrt/runtime/experiment"
)

// lentNow reads loop l's count of lent buffers on the loop.
func lentNow(l *loop) (lent, cap int) {
	onLoop(l, func() { lent, cap = l.lentBufs, l.lendCap })
	return
}

// TestCallbackLendEcho streams through an echo handler with buffer lending
// on and off: the echo is byte-exact, lending happened only when on, and
// every lent buffer is back in the ring once the connections are gone.
func TestCallbackLendEcho(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(map[bool]string{false: "lend", true: "copy"}[off], func(t *testing.T) {
			rt := newRT(t, Config{Loops: 1, Switches: experiment.Switches{DisableBufferLending: off}})
			ln := serveCB(t, rt, EchoHandler{})
			streamEchoAll(t, ln.Addr().String(), 8, 1<<20)
			l := rt.loops[0]
			if l.bufRing == nil {
				t.Skip("no provided buffer ring: nothing to lend")
			}
			lent := l.stats.lentBufs.Load()
			switch {
			case !off && lent == 0:
				t.Fatal("8 MiB echoed in runs of 2 KiB or more and no buffer was lent")
			case off && lent != 0:
				t.Fatalf("%d buffers lent with DisableBufferLending", lent)
			}
			if !relWaitFor(5*time.Second, func() bool { n, _ := lentNow(l); return n == 0 }) {
				n, _ := lentNow(l)
				t.Fatalf("%d buffers still lent after every connection closed", n)
			}
		})
	}
}

// TestCallbackWriteCopiesThenModify: Write always copies, so a handler
// may overwrite its data after writing it (as OnData's contract allows);
// the peer gets what was written, and nothing is lent.
func TestCallbackWriteCopiesThenModify(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	ln := serveCB(t, rt, HandlerFuncs{Data: func(c *CallbackConn, d []byte) {
		c.Write(d)
		clear(d)
	}})
	if err := streamEcho(ln.Addr().String(), 1<<20, 3); err != nil {
		t.Fatal(err)
	}
	if n := rt.loops[0].stats.lentBufs.Load(); n != 0 {
		t.Fatalf("Write lent %d buffers", n)
	}
}

// TestCallbackLendWritesTwice: a handler that writes part of its data and
// then all of it (overlapping Writes of one run, the first lent, the
// second copied) sends both, in order.
func TestCallbackLendWritesTwice(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	ln := serveCB(t, rt, HandlerFuncs{Data: func(c *CallbackConn, d []byte) {
		c.WriteNoCopy(d[:len(d)/2])
		c.WriteNoCopy(d)
	}})
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	// 8 KiB that repeat nowhere, so that splitHalves has few splits to
	// try.
	msg := make([]byte, 8<<10)
	x := uint32(1)
	for i := range msg {
		x = x*1664525 + 1013904223
		msg[i] = byte(x >> 24)
	}
	var want []byte
	for i := 0; i < 20; i++ {
		msg[0] = byte(i)
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		// One message at a time, so each arrives as one OnData (or a
		// few: the reply is then the halves of each piece).
		var got []byte
		for len(got) < len(msg)*3/2 {
			b := make([]byte, 64<<10)
			n, err := c.Read(b)
			if err != nil {
				t.Fatalf("message %d: %v after %d bytes", i, err, len(got))
			}
			got = append(got, b[:n]...)
			if rebuilt, ok := splitHalves(got, msg); ok {
				want = append(want, rebuilt...)
				break
			}
		}
	}
	if len(want) != 20*len(msg) {
		t.Fatalf("rebuilt %d bytes, want %d", len(want), 20*len(msg))
	}
}

// splitHalves checks that out is, for some split of msg into pieces
// p1, p2, ..., the concatenation of p[:len/2], p for each piece, and returns
// msg when it is. It tries every split, each (msg offset, out offset) pair
// once: a piece taken one byte too long still matches (the next piece's
// half continues msg) and fails only later.
func splitHalves(out, msg []byte) ([]byte, bool) {
	seen := map[[2]int]bool{}
	var from func(i, j int) bool
	from = func(i, j int) bool {
		if i == len(msg) || j == len(out) {
			return i == len(msg) && j == len(out)
		}
		if seen[[2]int{i, j}] {
			return false
		}
		seen[[2]int{i, j}] = true
		o := out[j:]
		for k := len(msg) - i; k > 0; k-- {
			p := msg[i : i+k]
			h := p[:k/2]
			if len(o) >= len(h)+k && o[len(h)] == p[0] && bytes.Equal(o[:len(h)], h) &&
				bytes.Equal(o[len(h):len(h)+k], p) && from(i+k, j+len(h)+k) {
				return true
			}
		}
		return false
	}
	if !from(0, 0) {
		return nil, false
	}
	return msg, true
}

// TestCallbackLendCapSlowReaders: peers that send and never read keep
// their echoes queued; the buffers lent to those queues stay within the
// loop's cap (a quarter of the ring), so another connection still echoes,
// and they all go back to the ring when the peers reset.
func TestCallbackLendCapSlowReaders(t *testing.T) {
	rt := newRT(t, Config{Loops: 1, MaxWriteBuffer: 1 << 20})
	ln := serveCB(t, rt, EchoHandler{})
	l := rt.loops[0]
	if l.bufRing == nil {
		t.Skip("no provided buffer ring: nothing to lend")
	}
	var peers []net.Conn
	chunk := bytes.Repeat([]byte{0xab}, 64<<10)
	for i := 0; i < 16; i++ {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.(*net.TCPConn).SetReadBuffer(4 << 10)
		peers = append(peers, c)
		go func() {
			c.SetWriteDeadline(time.Now().Add(3 * time.Second))
			for k := 0; k < 64; k++ { // up to 4 MiB each, until backpressure stops it
				if _, err := c.Write(chunk); err != nil {
					return
				}
			}
		}()
	}
	peak := 0
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		n, limit := lentNow(l)
		if n > limit {
			t.Fatalf("%d buffers lent, over the cap of %d", n, limit)
		}
		peak = max(peak, n)
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("peak lent buffers %d", peak)
	if err := streamEcho(ln.Addr().String(), 256<<10, 7); err != nil {
		t.Fatalf("a reading peer beside %d stalled ones: %v", len(peers), err)
	}
	for _, c := range peers {
		setLinger0(t, c)
		c.Close()
	}
	if !relWaitFor(10*time.Second, func() bool { n, _ := lentNow(l); return n == 0 }) {
		n, _ := lentNow(l)
		t.Fatalf("%d buffers still lent after the peers reset", n)
	}
}
