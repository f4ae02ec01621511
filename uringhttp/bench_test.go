package uringhttp

import (
	"bytes"
	"net"
	"net/http"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkHello13 measures one keep-alive connection's request/response
// round trips of a 13-byte response; allocs/op counts the whole process
// (the raw client allocates nothing).
func BenchmarkHello13(b *testing.B) {
	addr := serve(b, &Server{Handler: hello13()})
	benchRaw(b, addr)
}

// BenchmarkHello13Std is the same against net/http on Go's net.
func BenchmarkHello13Std(b *testing.B) {
	benchRaw(b, serveStd(b, hello13()))
}

// hello13 answers every request with the 13-byte text/plain body
// "Hello, World!".
func hello13() http.Handler {
	body := []byte("Hello, World!")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write(body)
	})
}

// serveStd serves h with net/http on Go's net on a loopback port until
// the benchmark ends and returns its address.
func serveStd(b *testing.B, h http.Handler) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hs := &http.Server{Handler: h}
	go hs.Serve(ln)
	b.Cleanup(func() { hs.Close() })
	return ln.Addr().String()
}

func benchRaw(b *testing.B, addr string) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req := []byte("GET / HTTP/1.1\r\nHost: localhost\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n")
	buf := make([]byte, 4096)
	end := []byte("Hello, World!")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			m, err := c.Read(buf[n:])
			if err != nil {
				b.Fatal(err)
			}
			n += m
			if bytes.HasSuffix(buf[:n], end) {
				break
			}
		}
	}
}

// BenchmarkClose13 measures a connection per request (Connection: close):
// connect, one request, the answer read to the server's FIN, close; the
// client is raw system calls (no allocations of its own), so allocs/op is
// the server's cost of a connection.
func BenchmarkClose13(b *testing.B) {
	addr := serve(b, &Server{Handler: hello13()})
	benchCloseRaw(b, addr)
}

// BenchmarkClose13Std is the same against net/http on Go's net.
func BenchmarkClose13Std(b *testing.B) {
	benchCloseRaw(b, serveStd(b, hello13()))
}

func benchCloseRaw(b *testing.B, addr string) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		b.Fatal(err)
	}
	sa := &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	req := []byte("GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
	buf := make([]byte, 4096)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			b.Fatal(err)
		}
		if err := unix.Connect(fd, sa); err != nil {
			b.Fatal(err)
		}
		if _, err := unix.Write(fd, req); err != nil {
			b.Fatal(err)
		}
		for {
			n, err := unix.Read(fd, buf)
			if err != nil {
				b.Fatal(err)
			}
			if n == 0 {
				break
			}
		}
		unix.Close(fd)
	}
}
