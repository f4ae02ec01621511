package runtime

import (
	"context"
	"net"
	"strconv"
	"testing"
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
