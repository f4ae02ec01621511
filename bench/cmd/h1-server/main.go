// Command h1-server is the HTTP/1.1 server of scripts/bench-uringhttp.sh:
// the same response (a 13-byte or a 4 KiB text body; /sleep answers it
// after 1 s) from one of five servers, chosen by -server:
//
//	uringhttp      uringrt's HTTP/1.1 server on the callback API (ListenAndServe; -defer-accept)
//	nethttp        net/http on Go's net
//	nethttp-uring  net/http on uringrt's listener (the net.Conn path)
//	fasthttp       github.com/valyala/fasthttp
//	nbhttp         github.com/lesismal/nbio's nbhttp (net/http handlers on an event loop)
//
// On SIGUSR1 it collects garbage, returns freed memory to the OS and
// prints "stats rss=BYTES goroutines=N" and the Go runtime's memory
// (heapinuse= heapalloc= stack= mspan= gcsys= othersys=, bytes) on stderr
// (the script reads the RSS of idle connections this way). It exits 0 on SIGINT or SIGTERM.
//
//	h1-server -server uringhttp -addr 127.0.0.1:17630 -size 13 [-loops 1]
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lesismal/nbio/nbhttp"
	"github.com/valyala/fasthttp"

	"github.com/uringrt/uringrt/bench/internal/benchsrv"
	"github.com/uringrt/uringrt/runtime"
	"github.com/uringrt/uringrt/uringhttp"
)

func main() {
	server := flag.String("server", "uringhttp", "uringhttp, nethttp, nethttp-uring, fasthttp or nbhttp")
	addr := flag.String("addr", "127.0.0.1:17630", "listen `address`")
	size := flag.Int("size", 13, "response body `bytes` (13: \"Hello, World!\")")
	loops := flag.Int("loops", 1, "uringrt event loops, nbhttp pollers (0 = the default: uringhttp's runtime Loops 0, GOMAXPROCS for the others)")
	deferAccept := flag.Duration("defer-accept", 0, "uringhttp: Server.DeferAccept (TCP_DEFER_ACCEPT on its listener; 0 = off, the default)")
	offLoop := flag.Bool("off-loop", false, "uringhttp: Server.OffLoopHandlers (every handler on the server's goroutines, none on the loop)")
	useTLS := flag.Bool("tls", false, "serve HTTPS (a self-signed ECDSA P-256 certificate; uringhttp, nethttp, nethttp-uring, nbhttp), HTTP/1.1 only")
	rht := flag.Duration("read-header-timeout", 10*time.Second, "uringhttp and nethttp: Server.ReadHeaderTimeout (0 = none)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile (go tool pprof) to `file` until the server exits")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintf(os.Stderr, "h1-server: %v\n", err)
			os.Exit(1)
		}
		pprof.StartCPUProfile(f)
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	raiseNOFILE()
	body := []byte("Hello, World!")
	if *size != len(body) {
		body = bytes.Repeat([]byte("x"), *size)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/sleep" {
			time.Sleep(time.Second)
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Write(body)
	})
	n := *loops
	if n == 0 {
		n = runtime.GOMAXPROCS(0)
	}
	ctx, stop := benchsrv.SignalContext()
	defer stop()
	go statsOnUSR1()
	tlsCfg, nbCfg, err := tlsConfigs()
	if err != nil {
		fmt.Fprintf(os.Stderr, "h1-server: %v\n", err)
		os.Exit(1)
	}
	switch *server {
	case "uringhttp":
		var rt *uringrt.Runtime
		// -loops 0 leaves Loops at its zero value: the runtime's
		// default, as a user who sets nothing gets it.
		rt, err = uringrt.New(uringrt.Config{Backend: uringrt.BackendUring, Loops: *loops, MaxConns: 1 << 20})
		if err != nil {
			break
		}
		// ListenAndServe, as a user would.
		srv := &uringhttp.Server{Addr: *addr, Handler: h, Runtime: rt, ReadHeaderTimeout: *rht, DeferAccept: *deferAccept, OffLoopHandlers: *offLoop}
		go func() { <-ctx.Done(); srv.Close() }()
		if *useTLS {
			srv.TLSConfig = tlsCfg
			srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){} // HTTP/1.1, as the others
			err = srv.ListenAndServeTLS("", "")
		} else {
			err = srv.ListenAndServe()
		}
		var runs, takeovers, lingers uint64
		for _, l := range rt.Stats().Loops {
			runs += l.InlineRuns
			takeovers += l.InlineTakeovers
			lingers += l.Lingers
		}
		fmt.Fprintf(os.Stderr, "uringhttp: handlers run on the loop %d, loops taken over %d, lingering closes %d\n", runs, takeovers, lingers)
		rt.Close()
	case "nethttp", "nethttp-uring":
		backend := "std"
		if *server == "nethttp-uring" {
			backend = "uring"
		}
		var ln net.Listener
		var closeLn func()
		if ln, closeLn, err = benchsrv.Listen(backend, *addr, n); err != nil {
			break
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: *rht}
		go func() { <-ctx.Done(); srv.Close() }()
		if *useTLS {
			srv.TLSConfig = tlsCfg
			srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
			err = srv.ServeTLS(ln, "", "")
		} else {
			err = srv.Serve(ln)
		}
		closeLn()
	case "fasthttp":
		srv := &fasthttp.Server{Handler: func(c *fasthttp.RequestCtx) {
			if string(c.Path()) == "/sleep" {
				time.Sleep(time.Second)
			}
			c.SetContentType("text/plain")
			c.Write(body)
		}, ReadTimeout: 10 * time.Minute}
		go func() { <-ctx.Done(); srv.Shutdown() }()
		err = srv.ListenAndServe(*addr)
	case "nbhttp":
		conf := nbhttp.Config{Network: "tcp", Addrs: []string{*addr}, Handler: h, NPoller: n, MaxLoad: 1 << 20}
		if *useTLS {
			conf.Addrs, conf.AddrsTLS, conf.TLSConfig = nil, []string{*addr}, nbCfg
		}
		e := nbhttp.NewEngine(conf)
		if err = e.Start(); err != nil {
			break
		}
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		e.Shutdown(sctx)
		cancel()
	default:
		err = fmt.Errorf("-server %q: want uringhttp, nethttp, nethttp-uring, fasthttp or nbhttp", *server)
	}
	if err != nil && err != http.ErrServerClosed {
		fmt.Fprintf(os.Stderr, "h1-server: %v\n", err)
		os.Exit(1)
	}
}

func raiseNOFILE() {
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		lim.Cur = lim.Max
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
}

func statsOnUSR1() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGUSR1)
	for range ch {
		runtime.GC()
		debug.FreeOSMemory()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		fmt.Fprintf(os.Stderr, "stats rss=%d goroutines=%d heapinuse=%d heapalloc=%d stack=%d mspan=%d gcsys=%d othersys=%d\n",
			vmRSS(), runtime.NumGoroutine(), ms.HeapInuse, ms.HeapAlloc, ms.StackInuse, ms.MSpanInuse, ms.GCSys, ms.OtherSys)
	}
}

func vmRSS() int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n << 10
		}
	}
	return -1
}
