package uringws

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	uringrt "github.com/uringrt/uringrt/runtime"
	"github.com/uringrt/uringrt/uringhttp"
)

// TestEchoServerProcess serves an echo for scripts/ws-echo-ab.sh until
// its stdin closes: URINGWS_ECHO_SERVER=uringws|gorilla, on
// URINGWS_ECHO_ADDR.
func TestEchoServerProcess(t *testing.T) {
	kind := os.Getenv("URINGWS_ECHO_SERVER")
	if kind == "" {
		t.Skip("uringws: a server for scripts/ws-echo-ab.sh")
	}
	addr := os.Getenv("URINGWS_ECHO_ADDR")
	switch kind {
	case "uringws":
		rt, err := uringrt.New(uringrt.Config{})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := rt.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		s := &uringhttp.Server{Runtime: rt, Handler: upgradeHandler(&Upgrader{}, echoHandler)}
		go s.Serve(ln)
	case "gorilla":
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		gu := websocket.Upgrader{}
		go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, err := gu.Upgrade(w, r, nil)
			if err != nil {
				return
			}
			defer c.Close()
			for {
				mt, p, err := c.ReadMessage()
				if err != nil || c.WriteMessage(mt, p) != nil {
					return
				}
			}
		}))
	}
	if p := os.Getenv("URINGWS_ECHO_CPUPROFILE"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		pprof.StartCPUProfile(f)
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
}

// TestEchoClientProcess is the load: URINGWS_ECHO_CLIENT=addr,
// URINGWS_ECHO_CONNS connections in closed loop, 1 KiB binary messages
// for URINGWS_ECHO_SECS; it prints messages/s.
func TestEchoClientProcess(t *testing.T) {
	addr := os.Getenv("URINGWS_ECHO_CLIENT")
	if addr == "" {
		t.Skip("uringws: the load of scripts/ws-echo-ab.sh")
	}
	n, _ := strconv.Atoi(os.Getenv("URINGWS_ECHO_CONNS"))
	secs, _ := strconv.Atoi(os.Getenv("URINGWS_ECHO_SECS"))
	frame := clientFrame(true, 0, opBinary, testKey, make([]byte, 1024))
	var count atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		rc := dialRaw(t, addr, "")
		rc.c.SetReadDeadline(time.Time{})
		wg.Add(1)
		go func(c net.Conn, br *bufio.Reader) {
			defer wg.Done()
			buf := make([]byte, 4+1024)
			<-start
			for !stop.Load() {
				if _, err := c.Write(frame); err != nil {
					return
				}
				if _, err := io.ReadFull(br, buf); err != nil {
					return
				}
				count.Add(1)
			}
		}(rc.c, rc.br)
	}
	close(start)
	time.Sleep(time.Second) // warm-up
	c0, t0 := count.Load(), time.Now()
	time.Sleep(time.Duration(secs) * time.Second)
	c1, t1 := count.Load(), time.Now()
	stop.Store(true)
	fmt.Printf("msgs/s %.0f\n", float64(c1-c0)/t1.Sub(t0).Seconds())
}
