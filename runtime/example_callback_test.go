package uringrt_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"sync"
	"time"

	"github.com/uringrt/uringrt/runtime"
)

// chatRoom is the state of a broadcast chat: the connections, on any loop.
type chatRoom struct {
	mu    sync.Mutex
	conns map[*uringrt.CallbackConn]bool
}

// Example_broadcastChat is a line chat on the callback API: each complete
// line a client sends is written to every client. OnData writes to the
// other connections directly, whatever loop they are on (Write posts to
// their loop); a partial line stays for the next OnData (Peek and Next).
func Example_broadcastChat() {
	rt, err := uringrt.New(uringrt.Config{Loops: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()
	ln, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	room := &chatRoom{conns: map[*uringrt.CallbackConn]bool{}}
	joined := make(chan struct{}, 2)
	go rt.Serve(ln, uringrt.HandlerFuncs{
		Open: func(c *uringrt.CallbackConn) {
			room.mu.Lock()
			room.conns[c] = true
			room.mu.Unlock()
			joined <- struct{}{}
		},
		Data: func(c *uringrt.CallbackConn, _ []byte) {
			for {
				buf, _ := c.Peek(-1)
				i := bytes.IndexByte(buf, '\n')
				if i < 0 {
					return // a partial line: kept, joined with the next bytes
				}
				line, _ := c.Next(i + 1)
				room.mu.Lock()
				for d := range room.conns {
					if _, err := d.Write(line); errors.Is(err, uringrt.ErrWriteBufferFull) {
						d.Close() // a member that does not read is dropped
					}
				}
				room.mu.Unlock()
			}
		},
		Close: func(c *uringrt.CallbackConn, err error) {
			room.mu.Lock()
			delete(room.conns, c)
			room.mu.Unlock()
		},
	})

	alice, _ := net.Dial("tcp", ln.Addr().String())
	defer alice.Close()
	bob, _ := net.Dial("tcp", ln.Addr().String())
	defer bob.Close()
	<-joined
	<-joined
	a, b := bufio.NewReader(alice), bufio.NewReader(bob)
	alice.Write([]byte("alice: hel"))
	alice.Write([]byte("lo\n"))
	line, _ := b.ReadString('\n')
	fmt.Print("bob reads   ", line)
	bob.Write([]byte("bob: hi\n"))
	for range 2 {
		line, _ := a.ReadString('\n')
		fmt.Print("alice reads ", line)
	}
	// Output:
	// bob reads   alice: hello
	// alice reads alice: hello
	// alice reads bob: hi
}

// Example_pubSubSlowSubscriber publishes from a goroutine to subscribers
// with AsyncWrite. The queue of each is bounded (Config.MaxWriteBuffer):
// past it AsyncWrite returns ErrWriteBufferFull and the publisher waits for
// the subscriber's OnDrained; a subscriber that stopped reading is closed
// by its write timeout (OnClose gets ErrWriteTimeout), and the publisher
// goes on with the others.
func Example_pubSubSlowSubscriber() {
	rt, err := uringrt.New(uringrt.Config{Loops: 1, MaxWriteBuffer: 256 << 10})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()
	ln, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	type sub struct{ drained, gone chan struct{} }
	var mu sync.Mutex
	subs := map[*uringrt.CallbackConn]*sub{}
	opened, closed := make(chan struct{}, 2), make(chan error, 2)
	go rt.Serve(ln, uringrt.HandlerFuncs{
		Open: func(c *uringrt.CallbackConn) {
			c.SetWriteTimeout(200 * time.Millisecond)
			mu.Lock()
			subs[c] = &sub{make(chan struct{}, 1), make(chan struct{})}
			mu.Unlock()
			opened <- struct{}{}
		},
		Drained: func(c *uringrt.CallbackConn) {
			mu.Lock()
			s := subs[c]
			mu.Unlock()
			select {
			case s.drained <- struct{}{}:
			default:
			}
		},
		Close: func(c *uringrt.CallbackConn, err error) {
			mu.Lock()
			close(subs[c].gone)
			mu.Unlock()
			closed <- err
		},
	})

	fast, _ := net.Dial("tcp", ln.Addr().String())
	defer fast.Close()
	slow, _ := net.Dial("tcp", ln.Addr().String()) // never reads
	defer slow.Close()
	<-opened
	<-opened
	const msgs = 20000 // 20 MB of 1 KiB messages
	got := make(chan int)
	go func() {
		buf, n := make([]byte, 1024), 0
		for ; n < msgs; n++ {
			if _, err := io.ReadFull(fast, buf); err != nil {
				break
			}
		}
		got <- n
	}()
	msg := make([]byte, 1024)
	for range msgs {
		mu.Lock()
		var to []*uringrt.CallbackConn
		for c := range subs {
			to = append(to, c)
		}
		mu.Unlock()
		for _, c := range to {
			for {
				_, err := c.AsyncWrite(msg)
				if !errors.Is(err, uringrt.ErrWriteBufferFull) {
					break // queued, or the subscriber is gone
				}
				mu.Lock()
				s := subs[c]
				mu.Unlock()
				select { // full: wait until it drains or ends
				case <-s.drained:
				case <-s.gone:
				}
			}
		}
	}
	fmt.Println("fast subscriber got", <-got, "messages")
	fmt.Println("slow subscriber closed:", errors.Is(<-closed, uringrt.ErrWriteTimeout))
	// Output:
	// fast subscriber got 20000 messages
	// slow subscriber closed: true
}

// Example_lengthPrefixed serves a length-prefixed protocol (a 4-byte
// big-endian length, then the payload): OnData takes each whole frame with
// Peek and Next; a frame split across receives stays unconsumed and comes
// back joined with the next bytes, with no copy in the handler.
func Example_lengthPrefixed() {
	rt, err := uringrt.New(uringrt.Config{Loops: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()
	ln, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go rt.Serve(ln, uringrt.HandlerFuncs{
		Data: func(c *uringrt.CallbackConn, _ []byte) {
			for {
				hdr, err := c.Peek(4)
				if err != nil {
					return // io.ErrShortBuffer: wait for the rest
				}
				frame, err := c.Next(4 + int(binary.BigEndian.Uint32(hdr)))
				if err != nil {
					return
				}
				reply := fmt.Appendf(nil, "%d bytes: %s\n", len(frame)-4, frame[4:])
				c.Write(reply)
			}
		},
	})

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	var stream []byte
	for _, p := range []string{"hello", "length-prefixed", "frames"} {
		stream = binary.BigEndian.AppendUint32(stream, uint32(len(p)))
		stream = append(stream, p...)
	}
	r := bufio.NewReader(c)
	c.Write(stream[:7]) // a header and part of the first payload
	time.Sleep(10 * time.Millisecond)
	c.Write(stream[7:20])
	time.Sleep(10 * time.Millisecond)
	c.Write(stream[20:])
	for range 3 {
		line, _ := r.ReadString('\n')
		fmt.Print(line)
	}
	// Output:
	// 5 bytes: hello
	// 15 bytes: length-prefixed
	// 6 bytes: frames
}
