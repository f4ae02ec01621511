package uringhttp

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestFailInFlightSurvivesFIN: a malformed request pipelined behind a
// valid one is answered from the serving goroutine once the valid one is
// done (failInFlight). The client's FIN, handled on the loop in between,
// closed the connection (the callback saw it idle and dead and let the
// runtime close it), so the 400 was written to a closed connection and
// lost. The hook holds the serving goroutine in that window until the FIN
// was handled.
func TestFailInFlightSurvivesFIN(t *testing.T) {
	s := &Server{OffLoopHandlers: true, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "ok")
	})}
	s.testHookFailInFlight = func(h *hconn) {
		for t0 := time.Now(); time.Since(t0) < 5*time.Second; time.Sleep(time.Millisecond) {
			h.mu.Lock()
			eof := h.rdErr != nil
			h.mu.Unlock()
			if eof {
				return
			}
		}
		t.Errorf("the client's FIN did not reach the connection in 5 s")
	}
	addr := serve(t, s)
	for _, bad := range []string{"BOGUS\r\n\r\n", "GET / HTTP/1.1\r\n\r\n", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n"} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"+bad)
		c.(*net.TCPConn).CloseWrite()
		out, err := io.ReadAll(c)
		c.Close()
		if err != nil {
			t.Fatalf("%q: %v after %q", bad, err, out)
		}
		if n := strings.Count(string(out), "HTTP/1.1 "); n != 2 || !strings.Contains(string(out), "HTTP/1.1 200 OK") {
			t.Errorf("%q: want the 200 and the error answer, got %q", bad, out)
		}
	}
}
