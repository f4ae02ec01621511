package uringrt_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/uringrt/uringrt/runtime"
)

// ExampleDialer dials with options, as with net.Dialer: a timeout, a
// keep-alive period, and a Control hook that sets a socket option before
// the connect.
func ExampleDialer() {
	ln, err := uringrt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c)
	}()

	d := uringrt.Dialer{
		Timeout:   5 * time.Second,
		KeepAlive: 30 * time.Second, // TCP_KEEPIDLE and TCP_KEEPINTVL
		Control: func(network, address string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 256<<10)
			})
			if err != nil {
				return err
			}
			return serr
		},
	}
	c, err := d.DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "dialed with options")
	buf := make([]byte, len("dialed with options"))
	if _, err := io.ReadFull(c, buf); err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(buf))
	// Output: dialed with options
}

// ExampleListenConfig listens with a SO_REUSEPORT socket per loop: each
// of the runtime's two loops accepts on its own socket (a multishot
// accept under Serve) and keeps the connections it accepted.
func ExampleListenConfig() {
	rt, err := uringrt.New(uringrt.Config{Loops: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()
	lc := uringrt.ListenConfig{
		Runtime:   rt,
		ReusePort: true,
		KeepAlive: -1, // no keep-alive probes on accepted connections
	}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go rt.Serve(ln, uringrt.HandlerFuncs{
		Data: func(c *uringrt.CallbackConn, data []byte) { c.Write(data) }, // echo
	})

	for i := range 3 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			log.Fatal(err)
		}
		fmt.Fprintf(c, "conn %d", i)
		buf := make([]byte, len("conn 0"))
		if _, err := io.ReadFull(c, buf); err != nil {
			log.Fatal(err)
		}
		c.Close()
		fmt.Println(string(buf))
	}
	// Output:
	// conn 0
	// conn 1
	// conn 2
}

// ExampleDialContext moves an HTTP client onto io_uring with one line: the
// package-level DialContext has the shape http.Transport (and grpc,
// go-redis, pgx) take for a dialer. The server side is net/http on
// uringrt.Listen.
func ExampleDialContext() {
	ln, err := uringrt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello over io_uring")
	})}
	go srv.Serve(ln)
	defer srv.Close()

	client := &http.Client{Transport: &http.Transport{DialContext: uringrt.DialContext}}
	defer client.CloseIdleConnections()
	resp, err := client.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status, string(body))
	// Output: 200 OK hello over io_uring
}

// ExampleConn_SyscallConn reads a socket option through the connection's
// syscall.RawConn, as with *net.TCPConn: keep-alive is on by default with
// Go's timing.
func ExampleConn_SyscallConn() {
	ln, err := uringrt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			defer c.Close()
			io.Copy(io.Discard, c)
		}
	}()
	c, err := uringrt.Dial("tcp", ln.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		log.Fatal(err)
	}
	var idle int
	rc.Control(func(fd uintptr) {
		idle, _ = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_KEEPIDLE)
	})
	fmt.Printf("keep-alive after %ds idle\n", idle)
	// Output: keep-alive after 15s idle
}

// ExampleCloseDefault releases the default runtime behind uringrt.Listen
// and uringrt.Dial, for example at the end of a test checked with goleak;
// the next use starts a new one.
func ExampleCloseDefault() {
	ln, err := uringrt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	ln.Close()
	if err := uringrt.CloseDefault(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("default runtime released")
	// Output: default runtime released
}
