package main

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"

	"github.com/tidwall/redcon"

	"github.com/uringrt/uringrt/bench/internal/benchsrv"
)

// TestRESPCommands: what redis-benchmark -t set,get sends (CONFIG GET, SET,
// GET, plus PING, INCR, DEL) gets Redis's replies, on both listeners.
func TestRESPCommands(t *testing.T) {
	for _, backend := range []string{"std", "uring"} {
		t.Run(backend, func(t *testing.T) {
			ln, closeLn, err := benchsrv.Listen(backend, "127.0.0.1:0", 1)
			if err != nil {
				t.Skip("listener:", err) // no io_uring here
			}
			s := &store{m: map[string][]byte{}}
			srv := redcon.NewServer(ln.Addr().String(), s.handle, nil, nil)
			done := make(chan struct{})
			go func() { srv.Serve(ln); close(done) }()
			defer func() { srv.Close(); <-done; closeLn() }()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			r := bufio.NewReader(c)
			for _, tc := range []struct{ req, want string }{
				{"PING\r\n", "+PONG\r\n"},
				{"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nhello\r\n", "+OK\r\n"},
				{"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n", "$5\r\nhello\r\n"},
				{"*2\r\n$3\r\nGET\r\n$4\r\nnone\r\n", "$-1\r\n"},
				{"*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n", ":1\r\n"},
				{"*2\r\n$3\r\nDEL\r\n$3\r\nkey\r\n", ":1\r\n"},
				{"*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$4\r\nsave\r\n", "*2\r\n$4\r\nsave\r\n$0\r\n\r\n"},
			} {
				if _, err := io.WriteString(c, tc.req); err != nil {
					t.Fatal(err)
				}
				got := make([]byte, len(tc.want))
				if _, err := io.ReadFull(r, got); err != nil {
					t.Fatalf("%q: %v", tc.req, err)
				}
				if string(got) != tc.want {
					t.Fatalf("%q: reply %q, want %q", tc.req, got, tc.want)
				}
			}
		})
	}
}
