package uringhttp

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestCloseUnreadBodyNoReset: a handler that answers a large upload
// without reading it gets its connection closed after the response (the
// body is past what the server drains); the client, still sending the body
// and reading the response late, gets the whole response, not a reset
// (the close waits for the client instead of resetting with the body
// unread and the response not yet acknowledged).
func TestCloseUnreadBodyNoReset(t *testing.T) {
	const respSize = 1 << 20
	resp := make([]byte, respSize)
	for i := range resp {
		resp[i] = byte('a' + i%26)
	}
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(respSize))
		w.Write(resp)
	})})
	for round := 0; round < 3; round++ {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(20 * time.Second))
		const bodySize = 8 << 20
		go func() {
			fmt.Fprintf(c, "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", bodySize)
			chunk := make([]byte, 16<<10)
			for sent := 0; sent < bodySize; sent += len(chunk) {
				if _, err := c.Write(chunk); err != nil {
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
		time.Sleep(100 * time.Millisecond) // read late: the response waits in the server's socket
		br := bufio.NewReader(c)
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		n, err := io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if err != nil || n != respSize {
			t.Fatalf("round %d: read %d of %d response bytes: %v", round, n, respSize, err)
		}
		if !res.Close {
			t.Fatalf("round %d: the response does not close the connection", round)
		}
		c.Close()
	}
}
