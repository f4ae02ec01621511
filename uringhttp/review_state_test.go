package uringhttp

import (
	"io"
	"math/rand"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestReviewActiveAfterClosed: a pipelined request that fails to parse
// is answered by errorReply from the serving goroutine after busy was
// cleared; a reset whose OnClose lands between the two reports
// StateClosed first, then errorReply reports StateActive.
func TestReviewActiveAfterClosed(t *testing.T) {
	var mu sync.Mutex
	states := map[net.Conn][]http.ConnState{}
	clients := map[string]net.Conn{}
	s := &Server{OffLoopHandlers: true, ConnState: func(c net.Conn, st http.ConnState) {
		mu.Lock()
		states[c] = append(states[c], st)
		cl := clients[c.RemoteAddr().String()]
		mu.Unlock()
		if st == http.StateIdle && cl != nil {
			cl.Close() // RST (linger 0): OnClose runs on the loop meanwhile
			d := time.Duration(rand.Intn(60000)) * time.Nanosecond
			for t0 := time.Now(); time.Since(t0) < d; {
			}
		}
	}, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	})}
	addr := serve(t, s)
	const n = 1500
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.(*net.TCPConn).SetLinger(0)
		mu.Lock()
		clients[c.LocalAddr().String()] = c
		mu.Unlock()
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\nBAD\r\n\r\n")
		buf := make([]byte, 1)
		c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		c.Read(buf)
	}
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	bad := 0
	for _, sts := range states {
		closed, after := 0, false
		for _, st := range sts {
			if st == http.StateClosed {
				closed++
			} else if closed > 0 {
				after = true
			}
		}
		if closed != 1 || after {
			if bad < 3 {
				t.Logf("states %v", sts)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d connections without StateClosed once and last", bad, len(states))
	}
}
