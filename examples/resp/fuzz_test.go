package main

import (
	"bufio"
	"io"
	"net"
	"runtime"
	"testing"
	"time"
)

// FuzzServer sends arbitrary bytes, in writes of a fuzzed size, through a
// live connection: the server answers or closes, never crashes, keeps
// serving other connections, and what it holds stays bounded (its partial
// requests under the server's bound, the heap far under what a declared
// length could ask for).
func FuzzServer(f *testing.F) {
	for _, s := range []string{
		cmd("SET", "k", "v") + cmd("GET", "k") + "PING\r\n",
		cmd("SUBSCRIBE", "a") + cmd("PUBLISH", "a", "x") + cmd("UNSUBSCRIBE"),
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$536870912\r\n",
		"*1000000\r\n$1\r\nx\r\n$1\r\nx\r\n",
		"*2\r\n$4\r\nECHO\r\n$3\r\nab",
		cmd("SET", "n", "1", "PX", "5") + cmd("INCR", "n") + cmd("MGET", "n", "x") + cmd("QUIT"),
		"\x00\xff*-1\r\n:\r\n",
	} {
		f.Add([]byte(s), uint16(7))
		f.Add([]byte(s), uint16(4096))
	}
	srv, addr := startServer(f, 2, testLimits)
	f.Fuzz(func(t *testing.T, data []byte, chunk uint16) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		go func() {
			step := int(chunk%4096) + 1
			for b := data; len(b) > 0; {
				k := min(step, len(b))
				if _, err := c.Write(b[:k]); err != nil {
					return
				}
				b = b[k:]
			}
			c.(*net.TCPConn).CloseWrite()
		}()
		if _, err := io.Copy(io.Discard, c); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("the server neither answered nor closed within 30 s")
			}
		}
		c.Close()
		// Still serving.
		p, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		p.SetDeadline(time.Now().Add(30 * time.Second))
		p.Write([]byte(cmd("PING")))
		if line, err := bufio.NewReader(p).ReadString('\n'); line != "+PONG\r\n" {
			t.Fatalf("PING after the input: %q, %v", line, err)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapInuse > 512<<20 {
			t.Fatalf("heap in use %d MiB", ms.HeapInuse>>20)
		}
		if n := srv.pending.Load(); n > testLimits.maxPending {
			t.Fatalf("%d bytes of partial requests held, over %d", n, testLimits.maxPending)
		}
	})
}
