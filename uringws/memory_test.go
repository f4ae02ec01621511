package uringws

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/gorilla/websocket"
)

// TestIdleMemory measures the server's RSS per idle websocket (one
// message each) with the clients in a child process. It runs with
// URINGWS_MEM=N (connections); URINGWS_MEM_DEFLATE=1 negotiates
// permessage-deflate.
func TestIdleMemory(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("URINGWS_MEM"))
	if n == 0 {
		t.Skip("uringws: set URINGWS_MEM=connections to measure idle memory")
	}
	deflate := os.Getenv("URINGWS_MEM_DEFLATE") == "1"
	if os.Getenv("URINGWS_MEM_PROFILE") != "" {
		runtime.MemProfileRate = 1
	}
	u := &Upgrader{EnableCompression: deflate}
	var s *server
	if os.Getenv("URINGWS_MEM_GORILLA") == "1" {
		// gorilla/websocket on net/http beside it, a reading goroutine
		// per connection as its examples have.
		gu := websocket.Upgrader{EnableCompression: deflate}
		s = serveOne(t, "net/http", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, err := gu.Upgrade(w, r, nil)
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				for {
					mt, p, err := c.ReadMessage()
					if err != nil || c.WriteMessage(mt, p) != nil {
						return
					}
				}
			}()
		}))
	} else {
		s = serveOne(t, "uringhttp", upgradeHandler(u, echoHandler))
	}
	settle := func() (rss int64, g int) {
		for i := 0; i < 3; i++ {
			runtime.GC()
			debug.FreeOSMemory()
		}
		b, _ := os.ReadFile("/proc/self/statm")
		f := strings.Fields(string(b))
		pages, _ := strconv.ParseInt(f[1], 10, 64)
		return pages * int64(os.Getpagesize()), runtime.NumGoroutine()
	}
	// Warm up with a few connections so pools and loops exist.
	warm := dialRaw(t, s.addr, "")
	warm.send(clientFrame(true, 0, opText, testKey, []byte("hi")))
	warm.frame()
	rss0, g0 := settle()
	cmd := exec.Command(os.Args[0], "-test.run=^TestIdleMemoryClient$")
	cmd.Env = append(os.Environ(), "URINGWS_MEM_CLIENT="+s.addr, "URINGWS_MEM_N="+strconv.Itoa(n))
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	sc := bufio.NewScanner(out)
	for sc.Scan() && !strings.Contains(sc.Text(), "ready") {
	}
	time.Sleep(time.Second)
	rss1, g1 := settle()
	t.Logf("Conn is %d bytes", unsafe.Sizeof(Conn{}))
	if p := os.Getenv("URINGWS_MEM_PROFILE"); p != "" {
		f, _ := os.Create(p)
		pprof.Lookup("heap").WriteTo(f, 0)
		f.Close()
	}
	t.Logf("%s: %d idle websockets (deflate %v): %.2f KiB RSS each, goroutines %d -> %d", s.name,
		n, deflate, float64(rss1-rss0)/float64(n)/1024, g0, g1)
}

// TestIdleMemoryClient is the child of TestIdleMemory: it opens the
// connections, sends one message on each, reads its echo and waits for
// its stdin to close.
func TestIdleMemoryClient(t *testing.T) {
	addr := os.Getenv("URINGWS_MEM_CLIENT")
	if addr == "" {
		t.Skip("uringws: the child of TestIdleMemory")
	}
	n, _ := strconv.Atoi(os.Getenv("URINGWS_MEM_N"))
	ext := ""
	if os.Getenv("URINGWS_MEM_DEFLATE") == "1" {
		ext = "Sec-WebSocket-Extensions: permessage-deflate\r\n"
	}
	conns := make([]net.Conn, 0, n)
	for i := 0; i < n; i++ {
		if os.Getenv("URINGWS_MEM_HTTP") == "1" {
			// The floor: an idle keep-alive HTTP connection of the same
			// server, answered 400 (not an upgrade) but kept open.
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			conns = append(conns, c)
			continue
		}
		rc := dialRaw(t, addr, ext)
		rc.send(clientFrame(true, 0, opText, testKey, []byte("hello idle")))
		if _, _, _, _, err := rc.frame(); err != nil {
			t.Fatal(err)
		}
		rc.c.SetReadDeadline(time.Time{})
		conns = append(conns, rc.c)
	}
	fmt.Println("ready")
	bufio.NewReader(os.Stdin).ReadString('\n')
}
