package uringrt_test

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"strings"

	uringrt "github.com/uringrt/uringrt/runtime"
)

// ExampleListen serves an echo with the package-level Listen, the drop-in
// for net.Listen: the accepted connections are net.Conns driven by
// io_uring (or by Go's net where io_uring is unavailable).
func ExampleListen() {
	ln, err := uringrt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // net.ErrClosed after ln.Close
			}
			go func() {
				defer c.Close()
				io.Copy(c, c) // echo
			}()
		}
	}()

	c, err := uringrt.Dial("tcp", ln.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("hello, io_uring")); err != nil {
		log.Fatal(err)
	}
	buf := make([]byte, len("hello, io_uring"))
	if _, err := io.ReadFull(c, buf); err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(buf))
	// Output: hello, io_uring
}

// ExampleRuntime_Serve runs the callback API: OnData runs on the
// connection's loop with bytes valid only during the call, and Write queues
// them back, sent with one send per connection per loop iteration.
func ExampleRuntime_Serve() {
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
		Data: func(c *uringrt.CallbackConn, data []byte) {
			c.Write([]byte(strings.ToUpper(string(data))))
		},
	})

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("ping"))
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(buf))
	// Output: PING
}

// ExampleNew configures a runtime that counts (Config.Metrics) and reads
// its counters; package runtime/uringprom exports them to Prometheus.
func ExampleNew() {
	rt, err := uringrt.New(uringrt.Config{
		Loops:    2,                      // two rings, each driven by its own loop
		Backend:  uringrt.BackendAuto,    // io_uring, else Go's net with one warning
		Metrics:  true,                   // count bytes and ring events for Stats
		MaxConns: 10000,                  // per listener
		Workers:  uringrt.DefaultWorkers, // for MayBlocker handlers
	})
	if err != nil {
		log.Fatal(err) // only BackendUring fails without io_uring
	}
	defer rt.Close()
	if reason := rt.FallbackReason(); reason != "" {
		log.Printf("serving through Go's net: %s", reason)
	}

	var accepted uint64
	for _, l := range rt.Stats().Loops {
		accepted += l.Accepted
	}
	fmt.Println("accepted", accepted)
	// Output: accepted 0
}

// ExampleProbe checks io_uring before starting anything, as
// `echo-server -version` does: the features on success, or an error that
// names why io_uring is unavailable (old kernel, kernel.io_uring_disabled or
// a seccomp filter) and the fix.
func ExampleProbe() {
	f, err := uringrt.Probe()
	if err != nil {
		fmt.Println("io_uring unavailable:", errors.Is(err, uringrt.ErrNoIOUring))
		return
	}
	fmt.Println("ring setup flags probed:", f.SetupFlags != 0 || f.Kernel != "")
}
