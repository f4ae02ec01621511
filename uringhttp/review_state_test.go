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
	var log stateLog
	clients := map[string]net.Conn{}
	s := &Server{OffLoopHandlers: true, ConnState: func(c net.Conn, st http.ConnState) {
		log.add(c, st)
		mu.Lock()
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
	log.checkClosedLast(t, "pipelined bad request after a reset")
}
