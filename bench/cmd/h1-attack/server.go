package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	uringrt "github.com/uringrt/uringrt/runtime"
	"github.com/uringrt/uringrt/uringhttp"
)

// handler serves the attacks: / (2 bytes), /big?n=BYTES (n bytes in 32 KiB
// writes; its duration is recorded), /up (reads the body 64 KiB at a time
// with a 1 ms pause after each: a slow handler), /ws (hijacks and writes
// 1 MiB messages until a write fails), /_stats (goroutines and the /big
// handlers' durations), /_gc (collects and returns memory to the OS).
type handler struct {
	bigNs, bigN, bigMax atomic.Int64
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/big":
		n, _ := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
		t0 := time.Now()
		chunk := make([]byte, 32<<10)
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		for n > 0 {
			k := min(n, int64(len(chunk)))
			if _, err := w.Write(chunk[:k]); err != nil {
				break
			}
			n -= k
		}
		d := int64(time.Since(t0))
		h.bigNs.Add(d)
		h.bigN.Add(1)
		for m := h.bigMax.Load(); d > m && !h.bigMax.CompareAndSwap(m, d); m = h.bigMax.Load() {
		}
	case "/up":
		buf := make([]byte, 64<<10)
		var n int64
		for {
			k, err := io.ReadFull(r.Body, buf)
			n += int64(k)
			if err != nil {
				break
			}
			time.Sleep(time.Millisecond)
		}
		fmt.Fprintf(w, "%d", n)
	case "/ws":
		c, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		msg := make([]byte, 1<<20)
		for {
			if _, err := c.Write(msg); err != nil {
				return
			}
		}
	case "/_stats":
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		json.NewEncoder(w).Encode(map[string]int64{"goroutines": int64(runtime.NumGoroutine()),
			"big_n": h.bigN.Load(), "big_ns": h.bigNs.Load(), "big_max_ns": h.bigMax.Load(),
			"heap_inuse": int64(ms.HeapInuse), "heap_unreleased": int64(ms.HeapIdle - ms.HeapReleased),
			"stack": int64(ms.StackInuse), "gosys": int64(ms.Sys)})
	case "/_gc":
		runtime.GC()
		debug.FreeOSMemory()
		io.WriteString(w, "ok")
	default:
		io.WriteString(w, "ok")
	}
}

// serve runs the server process: uringhttp on a uringrt runtime of its
// own (Config's defaults) or net/http on Go's net, the same handler and
// timeouts. On SIGTERM it shuts down (30 s at most) and prints how long
// Shutdown took.
func serve(kind, addr string, rht, idle time.Duration) {
	raiseNOFILE()
	h := &handler{}
	quiet := log.New(io.Discard, "", 0)
	var shutdown func(context.Context) error
	switch kind {
	case "uringhttp":
		rt, err := uringrt.New(uringrt.Config{Backend: uringrt.BackendUring})
		if err != nil {
			fatal(err)
		}
		ln, err := rt.Listen("tcp", addr)
		if err != nil {
			fatal(err)
		}
		s := &uringhttp.Server{Handler: h, Runtime: rt, ReadHeaderTimeout: rht, IdleTimeout: idle, ErrorLog: quiet}
		go s.Serve(ln)
		shutdown = s.Shutdown
	case "nethttp":
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			fatal(err)
		}
		s := &http.Server{Handler: h, ReadHeaderTimeout: rht, IdleTimeout: idle, ErrorLog: quiet}
		go s.Serve(ln)
		shutdown = s.Shutdown
	default:
		fatal(fmt.Errorf("unknown server %q", kind))
	}
	fmt.Println("listening")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t0 := time.Now()
	err := shutdown(ctx)
	fmt.Printf("shutdown %.3f %v\n", time.Since(t0).Seconds(), err)
}

func raiseNOFILE() {
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		lim.Cur = lim.Max
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
}

func fatal(err error) {
	fmt.Fprintf(os.Stderr, "h1-attack: %v\n", err)
	os.Exit(1)
}
