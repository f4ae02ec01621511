package uringhttp

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	uringrt "github.com/uringrt/uringrt/runtime"
)

// tkEcho is a taken-over handler that echoes and records its events.
type tkEcho struct {
	opened   chan struct{}
	closed   chan error
	shutdown chan struct{}
}

func (e *tkEcho) OnOpen(c *uringrt.CallbackConn)              { close(e.opened) }
func (e *tkEcho) OnData(c *uringrt.CallbackConn, data []byte) { c.Write(data) }
func (e *tkEcho) OnClose(c *uringrt.CallbackConn, err error)  { e.closed <- err }
func (e *tkEcho) OnShutdown(c *uringrt.CallbackConn) {
	close(e.shutdown)
	c.Write([]byte("bye\n"))
	c.Close()
}

func TestTakeOverHandsBytesAndShutdown(t *testing.T) {
	rt, err := uringrt.New(uringrt.Config{Loops: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	e := &tkEcho{opened: make(chan struct{}), closed: make(chan error, 1), shutdown: make(chan struct{})}
	tkErr := make(chan error, 1)
	s := &Server{Runtime: rt, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := TakeOver(w, []byte("HTTP/1.1 101 Switching Protocols\r\n\r\n"), func(*uringrt.CallbackConn) uringrt.Handler { return e })
		tkErr <- err
	})}
	ln, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	// Bytes pipelined after the request are the taken-over handler's.
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\nearly ")
	if err := <-tkErr; err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 101 {
		t.Fatalf("head: %v %v", resp, err)
	}
	<-e.opened
	io.WriteString(c, "late\n")
	line, err := br.ReadString('\n')
	if err != nil || line != "early late\n" {
		t.Fatalf("echo %q %v", line, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	<-e.shutdown
	if line, _ := br.ReadString('\n'); line != "bye\n" {
		t.Fatalf("after Shutdown: %q", line)
	}
	select {
	case <-e.closed:
	default:
		t.Fatal("Shutdown returned before the taken-over connection closed")
	}
	if err := <-done; err != http.ErrServerClosed {
		t.Fatalf("Serve: %v", err)
	}
}

func TestTakeOverRefusedOffUringhttp(t *testing.T) {
	rec := &struct{ http.ResponseWriter }{}
	if _, err := TakeOver(rec, nil, nil); err != ErrNoTakeOver {
		t.Fatalf("TakeOver of a foreign ResponseWriter: %v", err)
	}
}
