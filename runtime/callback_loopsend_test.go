package uringrt

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func loopSendCounts(rt *Runtime) (sent, rest uint64) {
	for _, l := range rt.loops {
		sent += l.stats.loopSent.Load()
		rest += l.stats.loopRest.Load()
	}
	return sent, rest
}

// seqBytes returns n bytes of a sequence that shows any reordering or loss:
// byte i is the low byte of (i*7 + seed).
func seqBytes(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + seed)
	}
	return b
}

// TestCallbackLoopSendOrder: a client asks, one request at a time (a loop
// woken for one message, which sends the reply from the loop), for replies
// of 1 byte to 3 MiB, written in one to four pieces (a queue of several
// chunks goes out in one sendmsg(2), a longer one in a sendmsg and then
// ring sends); every reply arrives whole and in order, and the loop sent
// most of them itself.
func TestCallbackLoopSendOrder(t *testing.T) {
	rt := newRT(t, Config{Loops: 1, MaxWriteBuffer: 4 << 20})
	addr := serveCB(t, rt, HandlerFuncs{Data: func(c *CallbackConn, d []byte) {
		for len(d) > 0 {
			i := bytes.IndexByte(d, '\n')
			if i < 0 {
				t.Errorf("split request %q", d)
				return
			}
			var n, pieces, seq int
			fmt.Sscanf(string(d[:i]), "%d %d %d", &seq, &n, &pieces)
			d = d[i+1:]
			body := seqBytes(n, seq)
			c.Write([]byte(fmt.Sprintf("%d %d\n", seq, n)))
			for p := 0; p < pieces; p++ {
				lo, hi := p*n/pieces, (p+1)*n/pieces
				c.Write(body[lo:hi])
			}
		}
	}}).Addr().String()
	conn := dialStd(t, addr, 1)[0]
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(conn)
	// 3 MiB: more chunks than one sendmsg(2) covers (maxSendIov), which a
	// warmed-up socket takes whole.
	sizes := []int{1, 12, 512, 4 << 10, 20 << 10, 70 << 10, 200 << 10, 3 << 20}
	rounds := 300
	if raceEnabled {
		rounds = 100
	}
	for seq := 0; seq < rounds; seq++ {
		n, pieces := sizes[seq%len(sizes)], 1+seq%4
		if _, err := fmt.Fprintf(conn, "%d %d %d\n", seq, n, pieces); err != nil {
			t.Fatal(err)
		}
		hdr, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reply %d: %v", seq, err)
		}
		if want := fmt.Sprintf("%d %d\n", seq, n); hdr != want {
			t.Fatalf("reply header %q, want %q", hdr, want)
		}
		got := make([]byte, n)
		if _, err := io.ReadFull(r, got); err != nil {
			t.Fatalf("reply %d body: %v", seq, err)
		}
		if !bytes.Equal(got, seqBytes(n, seq)) {
			t.Fatalf("reply %d (%d bytes in %d pieces): bytes out of order", seq, n, pieces)
		}
	}
	if sent, _ := loopSendCounts(rt); sent < uint64(rounds)/2 {
		t.Fatalf("the loop sent %d of %d replies itself; want most", sent, rounds)
	}
}

// TestCallbackLoopSendOff: with loop sends off, the same replies go out
// through the ring (the path a flush of many connections takes).
func TestCallbackLoopSendOff(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	onLoop(rt.loops[0], func() { rt.loops[0].loopSends = 0 })
	addr := serveCB(t, rt, EchoHandler{}).Addr().String()
	for i := 0; i < 20; i++ {
		echoOnce(t, rt, addr, "hello "+strconv.Itoa(i))
	}
	if sent, rest := loopSendCounts(rt); sent+rest != 0 {
		t.Fatalf("loop sends with loopSends 0: %d sent, %d rests", sent, rest)
	}
}

// TestCallbackLoopSendEAGAIN: OnData fills the connection's socket (raw
// sends of filler until EAGAIN) and then writes a reply: the loop's
// send(2) finds the socket full, and the ring's send takes the reply once
// the client reads. The client gets the filler, then the whole reply.
func TestCallbackLoopSendEAGAIN(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	filled := make(chan int, 1)
	reply := seqBytes(100<<10, 3)
	addr := serveCB(t, rt, HandlerFuncs{Data: func(c *CallbackConn, d []byte) {
		fill := bytes.Repeat([]byte{'f'}, 64<<10)
		n := 0
		for {
			m, _, e := syscall.RawSyscall6(syscall.SYS_SENDTO, uintptr(c.fd.fd), uintptr(unsafe.Pointer(&fill[0])), uintptr(len(fill)), unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, 0, 0)
			if e == syscall.EAGAIN {
				break
			}
			if e != 0 {
				t.Errorf("fill: %v", e)
				break
			}
			n += int(m)
		}
		filled <- n
		c.Write(reply)
	}}).Addr().String()
	conn := dialStd(t, addr, 1)[0]
	conn.(*net.TCPConn).SetReadBuffer(64 << 10)
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := conn.Write([]byte("go")); err != nil {
		t.Fatal(err)
	}
	n := <-filled
	// Once the loop has tried (its flush follows OnData at once), read.
	if !relWaitFor(5*time.Second, func() bool { _, rest := loopSendCounts(rt); return rest > 0 }) {
		t.Fatal("the loop's send did not find the socket full")
	}
	got := make([]byte, n+len(reply))
	if _, err := io.ReadFull(conn, got); err != nil {
		t.Fatalf("read %d filler + reply bytes: %v", n, err)
	}
	if strings.Trim(string(got[:n]), "f") != "" {
		t.Fatal("filler bytes out of place")
	}
	if !bytes.Equal(got[n:], reply) {
		t.Fatal("reply bytes out of order")
	}
}

// TestCallbackLoopSendShortThenClose: OnData writes 8 MiB and closes; the
// client reads only once the loop has sent what its send(2) takes (part of
// it: more than a socket or one sendmsg holds), and the ring sends the
// rest. The client reads all 8 MiB in order, then EOF: a graceful close
// waits for a loop send's rest.
func TestCallbackLoopSendShortThenClose(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	body := seqBytes(8<<20, 5)
	closed := make(chan error, 1)
	addr := serveCB(t, rt, HandlerFuncs{
		Data:  func(c *CallbackConn, d []byte) { c.Write(body); c.Close() },
		Close: func(c *CallbackConn, err error) { closed <- err },
	}).Addr().String()
	conn := dialStd(t, addr, 1)[0]
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := conn.Write([]byte("go")); err != nil {
		t.Fatal(err)
	}
	if !relWaitFor(5*time.Second, func() bool { _, rest := loopSendCounts(rt); return rest > 0 }) {
		t.Fatal("the loop's send left no rest for the ring")
	}
	got, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("after %d bytes: %v", len(got), err)
	}
	if !bytes.Equal(got, body) {
		t.Fatalf("got %d bytes, want the %d written, in order", len(got), len(body))
	}
	if err := <-closed; err != nil {
		t.Fatalf("OnClose: %v", err)
	}
}

// TestCallbackLoopSendDrained: a Drainer whose OnData writes past its
// low-water mark, sent whole by the loop's send(2): OnDrained, called from
// that send's completion, writes a tail, which is sent too (a connection
// marked dirty during the flush is flushed).
func TestCallbackLoopSendDrained(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	body := seqBytes(8<<10, 9)
	addr := serveCB(t, rt, HandlerFuncs{
		Open:    func(c *CallbackConn) { c.SetLowWater(1 << 10) },
		Data:    func(c *CallbackConn, d []byte) { c.Write(body) },
		Drained: func(c *CallbackConn) { c.Write([]byte("tail\n")) },
	}).Addr().String()
	conn := dialStd(t, addr, 1)[0]
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	for i := 0; i < 50; i++ {
		if _, err := conn.Write([]byte("go")); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(body)+5)
		if _, err := io.ReadFull(conn, got); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		if !bytes.Equal(got[:len(body)], body) || string(got[len(body):]) != "tail\n" {
			t.Fatalf("round %d: body and tail out of order", i)
		}
	}
	if sent, _ := loopSendCounts(rt); sent == 0 {
		t.Fatal("the loop sent nothing itself")
	}
}

// TestCallbackLoopSendLent: an echo by WriteNoCopy of 4 KiB messages, one
// at a time, queues the provided buffers they arrived in (lent, not
// copied); the loop's send(2) sends them and gives them back to the
// buffer ring. Every echo comes back byte for byte, the buffers were lent
// and the loop sent the echoes itself.
func TestCallbackLoopSendLent(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	addr := serveCB(t, rt, HandlerFuncs{Data: func(c *CallbackConn, d []byte) { c.WriteNoCopy(d) }}).Addr().String()
	conn := dialStd(t, addr, 1)[0]
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	for i := 0; i < 200; i++ {
		msg := seqBytes(4<<10, i)
		if _, err := conn.Write(msg); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(conn, got); err != nil {
			t.Fatalf("echo %d: %v", i, err)
		}
		if !bytes.Equal(got, msg) {
			t.Fatalf("echo %d: bytes differ", i)
		}
	}
	l := rt.loops[0]
	if l.stats.lentBufs.Load() == 0 {
		t.Fatal("no buffer was lent")
	}
	if sent, _ := loopSendCounts(rt); sent < 100 {
		t.Fatalf("the loop sent %d of 200 echoes itself; want most", sent)
	}
	var lent int
	onLoop(l, func() { lent = l.lentBufs })
	if lent != 0 {
		t.Fatalf("%d buffers still lent after every echo came back", lent)
	}
}
