package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

// TestBatchOutputBound: a few bytes of pipelined GETs of a big value, or
// one MGET of it many times, not read, do not make the server hold their
// replies (here 200 MB): the replies of one read go out as they are made, and once the connection's
// queued output passes Config.MaxWriteBuffer the client is disconnected,
// as when it passes it over several reads.
func TestBatchOutputBound(t *testing.T) {
	const gets = 200
	for _, req := range []string{
		strings.Repeat(cmd("GET", "big"), gets),
		cmd(append([]string{"MGET"}, strings.Split(strings.Repeat("big ", gets-1)+"big", " ")...)...),
	} {
		batchOutput(t, req, gets)
	}
}

// batchOutput sends req, gets GETs of a big value, without reading.
func batchOutput(t *testing.T, req string, gets int) {
	_, addr := startServer(t, 1, testLimits)
	c := dial(t, addr)
	val := strings.Repeat("v", testLimits.maxBulk)
	c.Write([]byte(cmd("SET", "big", val)))
	ok := make([]byte, 5)
	if _, err := io.ReadFull(c, ok); err != nil || string(ok) != "+OK\r\n" {
		t.Fatalf("SET: %q %v", ok, err)
	}
	c.Write([]byte(req))
	time.Sleep(100 * time.Millisecond) // let the server run them (not reading)
	c.SetReadDeadline(time.Now().Add(60 * time.Second))
	n, err := io.Copy(io.Discard, c)
	if err != nil && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("after %d bytes: %v", n, err)
	}
	// The cap, a reply over it, and what the kernel's socket buffers
	// held (a few MB on loopback) are all well under the replies' total.
	all := int64(gets * (len(val) + 14))
	if n >= all/2 {
		t.Fatalf("%.40q: got %d bytes of %d: the server queued the whole batch", req, n, all)
	}
}
