package uringrt

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"
)

// BenchmarkAcceptChurn measures connection churn: each op is one
// connection dialed (Go's net), accepted by the runtime's Serve (2 loops),
// closed by the server in OnOpen, and seen closed by the client. With
// reuseport=true each loop accepts on its own SO_REUSEPORT socket and
// keeps the connection; with false loop 0 accepts everything and posts
// every other connection to loop 1.
//
//	go test -run '^$' -bench AcceptChurn -count 6 ./runtime/
func BenchmarkAcceptChurn(b *testing.B) {
	for _, reuse := range []bool{false, true} {
		b.Run("reuseport="+strconv.FormatBool(reuse), func(b *testing.B) {
			rt := newRT(b, Config{Loops: 2, Backend: BackendUring})
			ln, err := (&ListenConfig{Runtime: rt, ReusePort: reuse}).Listen(context.Background(), "tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			go rt.Serve(ln, HandlerFuncs{Open: func(c *CallbackConn) { c.Close() }})
			addr := ln.Addr().String()
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				buf := make([]byte, 1)
				for pb.Next() {
					c, err := net.Dial("tcp", addr)
					if err != nil {
						b.Error(err)
						return
					}
					c.Read(buf) // EOF once the server closed it
					c.Close()
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "conns/s")
		})
	}
}

// BenchmarkConnCloseToEOF measures the close path of the net.Conn API, the
// part of connection churn that a server pays once per connection: each op
// is a connection dialed and accepted, one byte exchanged, then the server
// end's Close; us/close is the time from Close until the client reads EOF.
// Go's net (std) is the reference.
//
//	go test -run '^$' -bench ConnCloseToEOF -benchtime 2000x -count 3 ./runtime/
func BenchmarkConnCloseToEOF(b *testing.B) {
	for _, backend := range []string{"uringrt", "std"} {
		b.Run(backend, func(b *testing.B) {
			var ln net.Listener
			var err error
			if backend == "std" {
				ln, err = net.Listen("tcp", "127.0.0.1:0")
			} else {
				ln, err = newRT(b, Config{Loops: 1}).Listen("tcp", "127.0.0.1:0")
			}
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			buf := make([]byte, 16)
			var closing time.Duration
			for i := 0; i < b.N; i++ {
				c, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					b.Fatal(err)
				}
				s, err := ln.Accept()
				if err != nil {
					b.Fatal(err)
				}
				c.Write([]byte("x"))
				s.Read(buf)
				t0 := time.Now()
				s.Close()
				if n, err := c.Read(buf); n != 0 || err == nil {
					b.Fatalf("read after the server's Close: %d, %v; want EOF", n, err)
				}
				closing += time.Since(t0)
				c.Close()
			}
			b.ReportMetric(float64(closing.Microseconds())/float64(b.N), "us/close")
		})
	}
}
