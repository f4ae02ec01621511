package uringrt

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"
)

func directCounts(rt *Runtime) (sent, rest uint64) {
	for _, l := range rt.loops {
		sent += l.stats.directSent.Load()
		rest += l.stats.directRest.Load()
	}
	return sent, rest
}

// TestCallbackDirectSendOrder: goroutines write numbered records of 0 to
// 1 MB (AsyncWrite, and Write from off the loop) to one connection, whose
// loop is often parked, so that many go out as direct sends, some in part
// (the client reads slowly), while OnData
// answers the client's lines with two writes, "A" then "B\n". Every record
// arrives whole, each writer's in order, and no reply is split.
func TestCallbackDirectSendOrder(t *testing.T) {
	perWriter := 3000
	if raceEnabled {
		perWriter = 1000
	}
	rt := newRT(t, Config{Loops: 1, MaxWriteBuffer: 4 << 20})
	rt.direct = true // (off with GOMAXPROCS=1)
	opened := make(chan *CallbackConn, 1)
	addr := serveCB(t, rt, twoWriteReplies(t, false, opened)).Addr().String()
	conn := dialStd(t, addr, 1)[0]
	cc := <-opened

	const writers = 3
	var wg sync.WaitGroup
	for id := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(id), 7))
			for seq := 0; seq < perWriter; seq++ {
				n := rnd.IntN(200)
				switch rnd.IntN(100) {
				case 0:
					n = rnd.IntN(1 << 20)        // more than the socket takes at once: a rest
					time.Sleep(time.Millisecond) // (once the loop parks)
				case 1, 2, 3, 4:
					n = rnd.IntN(40 << 10)
				}
				rec := []byte(fmt.Sprintf("%d:%d:%d:", id, seq, n))
				rec = append(rec, bytes.Repeat([]byte{byte('a' + id)}, n)...)
				rec = append(rec, '\n')
				for {
					var err error
					if id == 0 {
						_, err = cc.AsyncWrite(rec)
					} else {
						_, err = cc.Write(rec)
					}
					if err == nil {
						break
					}
					if !errors.Is(err, ErrWriteBufferFull) {
						t.Errorf("writer %d: %v", id, err)
						return
					}
					time.Sleep(time.Millisecond)
				}
				if rnd.IntN(8) == 0 {
					time.Sleep(time.Duration(rnd.IntN(200)) * time.Microsecond) // let the loop park
				}
			}
		}()
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() { // requests now and then: replies written on the loop
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(rand.IntN(500)) * time.Microsecond):
			}
			if _, err := conn.Write([]byte("q\nq\n")); err != nil {
				return
			}
		}
	}()

	conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	r := bufio.NewReaderSize(conn, 64<<10)
	next := make([]int, writers)
	done, lines := 0, 0
	for done < writers*perWriter {
		line, err := r.ReadBytes('\n')
		if err != nil {
			st := make(chan string, 1)
			cc.l.post(request{kind: reqFunc, fn: func() {
				st <- fmt.Sprintf("outq.n %d chunks %d head %d inflight %d armed %v dirty %v", cc.outq.n, len(cc.outq.chunks), cc.outq.head, cc.outq.inflight, cc.sending(), cc.dirty)
			}})
			t.Fatalf("after %d records: %v; posted %d queued %d pending %d dsend %d; %s", done, err, cc.posted.Load(), cc.queued.Load(), cc.pendingWrites.Load(), cc.dsend.Load(), <-st)
		}
		if lines++; lines%64 == 0 {
			time.Sleep(time.Millisecond) // a slow reader: the socket fills, sends fall short
		}
		if string(line) == "AB\n" {
			continue
		}
		f := bytes.SplitN(line[:len(line)-1], []byte(":"), 4)
		if len(f) != 4 {
			t.Fatalf("malformed line (a split record or reply?): %.80q", line)
		}
		id, _ := strconv.Atoi(string(f[0]))
		seq, _ := strconv.Atoi(string(f[1]))
		n, _ := strconv.Atoi(string(f[2]))
		if id < 0 || id >= writers || seq != next[id] {
			t.Fatalf("record %d:%d, want %d:%d", id, seq, id, next[id])
		}
		if len(f[3]) != n || bytes.Count(f[3], []byte{byte('a' + id)}) != n {
			t.Fatalf("record %d:%d: payload of %d bytes is not %d of %q: %.80q", id, seq, len(f[3]), n, rune('a'+id), f[3])
		}
		next[id]++
		done++
	}
	wg.Wait()
	sent, rest := directCounts(rt)
	t.Logf("%d records; direct sends: %d whole, %d with a rest posted", done, sent, rest)
	if sent == 0 {
		t.Fatalf("no direct send: the test did not test them")
	}
}

// TestCallbackDirectSendRestThenClose: a 4 MiB Write from a goroutine to a
// connection whose client does not read yet goes out as a direct send
// whose rest is posted; a Close right after it sends all of it before the
// FIN, and a write after the Close fails.
func TestCallbackDirectSendRestThenClose(t *testing.T) {
	rt := newRT(t, Config{Loops: 1, MaxWriteBuffer: 8 << 20})
	rt.direct = true
	opened := make(chan *CallbackConn, 1)
	addr := serveCB(t, rt, HandlerFuncs{Open: func(c *CallbackConn) { opened <- c }}).Addr().String()
	conn := dialStd(t, addr, 1)[0]
	cc := <-opened
	for end := time.Now().Add(10 * time.Second); !cc.l.sleeping.Load(); {
		if time.Now().After(end) {
			t.Fatalf("the loop never parked")
		}
		time.Sleep(time.Millisecond)
	}
	big := make([]byte, 4<<20)
	for i := range big {
		big[i] = byte(i % 251)
	}
	if n, err := cc.Write(big); n != len(big) || err != nil {
		t.Fatalf("Write: %d, %v", n, err)
	}
	if err := cc.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := cc.Write([]byte("late")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write after Close: %v, want net.ErrClosed", err)
	}
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	got, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("read: %v after %d bytes", err, len(got))
	}
	if !bytes.Equal(got, big) {
		t.Fatalf("got %d bytes, want the %d written", len(got), len(big))
	}
	sent, rest := directCounts(rt)
	if rest != 1 {
		t.Fatalf("direct sends: %d whole, %d with a rest; want the write's rest posted", sent, rest)
	}
}
