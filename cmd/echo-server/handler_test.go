package main

import (
	"bytes"
	"io"
	"net"
	"strconv"
	"testing"
	"time"
)

func TestBufSizeFlagRange(t *testing.T) {
	for _, v := range []int{-1, 0, minBufSize - 1, maxBufSize + 1} {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"-buf-size", strconv.Itoa(v)}, &stdout, &stderr); code != 2 {
			t.Errorf("-buf-size %d: exit %d, want 2", v, code)
		}
		oneLine(t, stderr.String(), "-buf-size")
	}
}

// sizeConn records the largest buffer Read was given.
type sizeConn struct {
	net.Conn
	maxRead int
}

func (c *sizeConn) Read(b []byte) (int, error) {
	if len(b) > c.maxRead {
		c.maxRead = len(b)
	}
	return c.Conn.Read(b)
}

// TestEchoReadsWholeBuffer: the net.Conn handler hands Read its whole
// -buf-size buffer (32 KiB by default, not 4 KiB) and echoes every byte.
func TestEchoReadsWholeBuffer(t *testing.T) {
	for _, size := range []int{minBufSize, defaultBufSize} {
		a, b := net.Pipe()
		sc := &sizeConn{Conn: b}
		done := make(chan struct{})
		go func() { defer close(done); echo(sc, size) }()
		msg := bytes.Repeat([]byte("0123456789abcdef"), 10000) // 160,000 bytes
		a.SetDeadline(time.Now().Add(30 * time.Second))
		go a.Write(msg)
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(a, got); err != nil {
			t.Fatalf("buf %d: read back: %v", size, err)
		}
		if !bytes.Equal(got, msg) {
			t.Fatalf("buf %d: echoed bytes differ", size)
		}
		a.Close()
		<-done
		if sc.maxRead != size {
			t.Errorf("buf %d: Read got buffers of at most %d bytes", size, sc.maxRead)
		}
	}
}
