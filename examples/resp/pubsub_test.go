package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestSubscribeCommands(t *testing.T) {
	_, addr := startServer(t, 1, testLimits)
	sub := dial(t, addr)
	sr := bufio.NewReader(sub)
	pub := dial(t, addr)
	pr := bufio.NewReader(pub)
	steps := []struct {
		c     net.Conn
		r     *bufio.Reader
		req   string
		reply string
	}{
		{sub, sr, cmd("SUBSCRIBE", "a", "b"), "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n"},
		{sub, sr, cmd("SUBSCRIBE", "a"), "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:2\r\n"},
		{sub, sr, cmd("GET", "k"), "-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n"},
		{sub, sr, cmd("PING"), "*2\r\n$4\r\npong\r\n$0\r\n\r\n"},
		{pub, pr, cmd("PUBLISH", "a", "hello"), ":1\r\n"},
		{sub, sr, "", "*3\r\n$7\r\nmessage\r\n$1\r\na\r\n$5\r\nhello\r\n"},
		{pub, pr, cmd("PUBLISH", "nobody", "x"), ":0\r\n"},
		{sub, sr, cmd("UNSUBSCRIBE", "a"), "*3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:1\r\n"},
		{pub, pr, cmd("PUBLISH", "a", "gone"), ":0\r\n"},
		{sub, sr, cmd("UNSUBSCRIBE"), "*3\r\n$11\r\nunsubscribe\r\n$1\r\nb\r\n:0\r\n"},
		{sub, sr, cmd("GET", "k"), "$-1\r\n"}, // out of subscribed mode
	}
	for i, st := range steps {
		if st.req != "" {
			st.c.Write([]byte(st.req))
		}
		if got := readReplies(t, st.r, strings.Count(st.reply, "*3\r\n$")+boolInt(!strings.HasPrefix(st.reply, "*3\r\n$"))); got != st.reply {
			t.Fatalf("step %d %q: %q, want %q", i, st.req, got, st.reply)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// subscriber reads messages of channel ch from c and checks that each
// publisher's messages ("<publisher> <seq> <padding>") come in order,
// without a gap, until it has want of each publisher. It counts the
// messages it got in got (when not nil).
func subscriber(c net.Conn, ch string, publishers, want int, got *atomic.Int64) error {
	r := bufio.NewReaderSize(c, 64<<10)
	next := make([]int, publishers)
	var b strings.Builder
	for done := 0; done < publishers; {
		b.Reset()
		if err := readValue(r, &b); err != nil {
			return fmt.Errorf("after %v messages: %w", next, err)
		}
		parts := strings.Split(b.String(), "\r\n")
		if len(parts) < 7 || parts[2] != "message" || parts[4] != ch {
			return fmt.Errorf("not a message of %s: %q", ch, b.String())
		}
		var p, seq int
		if _, err := fmt.Sscanf(parts[6], "%d %d", &p, &seq); err != nil || p >= publishers {
			return fmt.Errorf("bad payload %q", parts[6])
		}
		if seq != next[p] {
			return fmt.Errorf("publisher %d: message %d, want %d", p, seq, next[p])
		}
		if next[p]++; next[p] == want {
			done++
		}
		if got != nil {
			got.Add(1)
		}
	}
	return nil
}

// TestFanOutAcrossLoops: publishers and subscribers spread over 2 loops;
// every subscriber gets every message of every publisher, in that
// publisher's order (run it with -race: the writes cross loops).
func TestFanOutAcrossLoops(t *testing.T) {
	const subs, pubs, msgs = 12, 3, 300
	_, addr := startServer(t, 2, testLimits)
	var wg sync.WaitGroup
	errs := make(chan error, subs+pubs)
	for i := 0; i < subs; i++ {
		c := dial(t, addr)
		c.Write([]byte(cmd("SUBSCRIBE", "news")))
		want := "*3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:1\r\n"
		if got := readReplies(t, bufio.NewReader(io.LimitReader(c, int64(len(want)))), 1); got != want {
			t.Fatalf("subscribe: %q", got)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := subscriber(c, "news", pubs, msgs, nil); err != nil {
				errs <- err
			}
		}()
	}
	for p := 0; p < pubs; p++ {
		c := dial(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := bufio.NewReader(c)
			for m := 0; m < msgs; m += 10 { // pipelined in tens
				var req strings.Builder
				for k := m; k < m+10; k++ {
					req.WriteString(cmd("PUBLISH", "news", fmt.Sprintf("%d %d %s", p, k, strings.Repeat("x", k%50))))
				}
				c.Write([]byte(req.String()))
				var b strings.Builder
				for k := 0; k < 10; k++ {
					b.Reset()
					if err := readValue(r, &b); err != nil || b.String() != ":"+strconv.Itoa(subs)+"\r\n" {
						errs <- fmt.Errorf("publisher %d: reply %q, %v", p, b.String(), err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestSlowSubscriber: one subscriber never reads. Its queued output never
// passes the pubsub limit: it is disconnected once it would, and the other
// subscribers keep getting every message in order.
func TestSlowSubscriber(t *testing.T) {
	const readers, msgs, size = 3, 20000, 1024 // 20 MB: past the kernel's socket buffers
	srv, addr := startServer(t, 1, testLimits)
	slow := dial(t, addr)
	slow.Write([]byte(cmd("SUBSCRIBE", "ch")))
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	got := make([]atomic.Int64, readers)
	for i := 0; i < readers; i++ {
		c := dial(t, addr)
		c.Write([]byte(cmd("SUBSCRIBE", "ch")))
		want := "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n"
		if got := readReplies(t, bufio.NewReader(io.LimitReader(c, int64(len(want)))), 1); got != want {
			t.Fatalf("subscribe: %q", got)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := subscriber(c, "ch", 1, msgs, &got[i]); err != nil {
				errs <- err
			}
		}()
	}
	// The slow subscriber's client, to watch its queue.
	var slowCl *client
	for slowCl == nil {
		srv.mu.Lock()
		for cl := range srv.conns {
			if cl.c.RemoteAddr().String() == slow.LocalAddr().String() {
				slowCl = cl
			}
		}
		srv.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	pub := dial(t, addr)
	r := bufio.NewReader(pub)
	pad := strings.Repeat("x", size)
	maxQueued, counts := 0, map[string]int{}
	for m := 0; m < msgs; m += 20 {
		// Stay within 100 messages (100 KiB, under the limit) of the
		// slowest reader however slowly the machine runs it.
		for i := range got {
			for int64(m)-got[i].Load() > 100 {
				if len(errs) > 0 {
					t.Fatal(<-errs)
				}
				time.Sleep(time.Millisecond)
			}
		}
		var req strings.Builder
		for k := m; k < m+20; k++ {
			req.WriteString(cmd("PUBLISH", "ch", fmt.Sprintf("0 %d %s", k, pad)))
		}
		pub.Write([]byte(req.String()))
		for k := 0; k < 20; k++ {
			var b strings.Builder
			if err := readValue(r, &b); err != nil {
				t.Fatal(err)
			}
			counts[b.String()]++
		}
		maxQueued = max(maxQueued, slowCl.c.OutboundBuffered())
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if !slowCl.dropped.Load() {
		t.Fatalf("the slow subscriber was not disconnected (replies %v)", counts)
	}
	if maxQueued > testLimits.pubsubLimit {
		t.Fatalf("the slow subscriber's queue reached %d bytes, over the limit %d", maxQueued, testLimits.pubsubLimit)
	}
	if counts[":3\r\n"] == 0 || counts[":4\r\n"] == 0 || len(counts) != 2 {
		t.Fatalf("PUBLISH replies %v: want 4 receivers, then 3", counts)
	}
	// Unread, the dropped connection ends once its output stalled for the
	// grace (runtime's write timeout): it does not hold its queue for ever.
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		srv.mu.Lock()
		_, open := srv.conns[slowCl]
		srv.mu.Unlock()
		if !open {
			break
		}
		if time.Now().After(end) { // a hang, not a timing bound
			t.Fatalf("the dropped subscriber, not reading, is still open 20 s later (%d bytes queued)", slowCl.c.OutboundBuffered())
		}
	}
	// Its client sees EOF or a reset.
	slow.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.Copy(io.Discard, slow); err != nil && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("slow subscriber: %v", err)
	}
}

// TestMessagesAcrossChannelsAndSegments: a subscriber of two channels
// gets, in publishing order, messages that alternate between them (runs
// of different segments in one batch), one bigger than a segment's share
// (a segment of its own), and enough of them to fill several segments.
//
// The subscriber gets about 260 KB, and the server may read the whole
// pipeline before the subscriber's first write (a batch is written once
// per loop iteration), so the limit here is the server's default, not
// testLimits' 256 KiB: this test is about order, TestSlowSubscriber about
// the limit.
func TestMessagesAcrossChannelsAndSegments(t *testing.T) {
	lim := testLimits
	lim.pubsubLimit = 8 << 20
	for _, loops := range []int{1, 2} {
		_, addr := startServer(t, loops, lim)
		sub := dial(t, addr)
		sr := bufio.NewReader(sub)
		sub.Write([]byte(cmd("SUBSCRIBE", "a", "b")))
		readReplies(t, sr, 2)
		pub := dial(t, addr)
		var req, want strings.Builder
		n := 0
		for i := 0; i < 3*segmentSize/100; i++ {
			ch := "a"
			if i%3 == 1 {
				ch = "b"
			}
			msg := fmt.Sprintf("%d %s", i, strings.Repeat("x", 90))
			if i == 7 {
				msg = strings.Repeat("y", segmentSize/4+1)
			}
			req.WriteString(cmd("PUBLISH", ch, msg))
			want.WriteString("*3\r\n$7\r\nmessage\r\n" + "$1\r\n" + ch + "\r\n$" + strconv.Itoa(len(msg)) + "\r\n" + msg + "\r\n")
			n++
		}
		go pub.Write([]byte(req.String()))
		if got := readReplies(t, sr, n); got != want.String() {
			t.Fatalf("loops %d: the subscriber got other messages or another order (%d bytes, want %d)", loops, len(got), want.Len())
		}
	}
}
