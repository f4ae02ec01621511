// Command proxy is a TCP proxy on uringrt's callback API: every connection
// it accepts is forwarded to an upstream address over a second callback
// connection, both ways. It shows read pause and resume: when the side it
// writes to has more than -high-water bytes queued, it stops reading the
// other side until that queue drains, so a slow client behind a fast
// upstream holds about -high-water bytes in the proxy and TCP flow control
// slows the upstream.
//
//	go build ./examples/proxy && ./proxy -listen 127.0.0.1:7000 -upstream 127.0.0.1:6379
//
// It exits 0 on SIGINT or SIGTERM after closing every connection.
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/uringrt/uringrt/runtime"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:7000", "listen `address`")
	upstream := flag.String("upstream", "127.0.0.1:6379", "upstream `address` each connection is forwarded to")
	loops := flag.Int("loops", 1, "event loops (io_uring rings)")
	backend := flag.String("backend", "auto", "auto (io_uring, else Go's net), uring or std")
	high := flag.Int("high-water", 256<<10, "`bytes` queued for one side past which the other side stops being read")
	low := flag.Int("low-water", 64<<10, "`bytes` under which reading resumes")
	flag.Parse()
	b, err := uringrt.ParseBackend(*backend)
	if err != nil {
		log.Fatal("proxy: ", err)
	}
	rt, err := uringrt.New(uringrt.Config{Loops: *loops, Backend: b})
	if err != nil {
		log.Fatal("proxy: ", err)
	}
	ln, err := rt.Listen("tcp", *listen)
	if err != nil {
		log.Fatal("proxy: ", err)
	}
	p := &Proxy{Runtime: rt, Upstream: *upstream, HighWater: *high, LowWater: *low, DialWait: 10 * time.Second}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
		<-sig
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		rt.Shutdown(ctx)
		ln.Close()
	}()
	log.Printf("proxy: %s -> %s", ln.Addr(), *upstream)
	if err := rt.Serve(ln, p.Handler()); err != nil {
		log.Fatal("proxy: ", err)
	}
	rt.Close()
}
