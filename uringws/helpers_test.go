package uringws

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	uringrt "github.com/uringrt/uringrt/runtime"
	"github.com/uringrt/uringrt/uringhttp"
)

// server is one way of serving a handler under test.
type server struct {
	name string
	addr string
	srv  *uringhttp.Server // nil for net/http
	rt   *uringrt.Runtime
}

// serveAll serves h three ways: uringhttp on io_uring (the loop path),
// uringhttp on BackendStd and net/http (the goroutine path).
func serveAll(t *testing.T, h http.Handler) []*server {
	t.Helper()
	var out []*server
	for _, name := range []string{"uringhttp", "uringhttp-std", "net/http"} {
		out = append(out, serveOne(t, name, h))
	}
	return out
}

func serveOne(t *testing.T, name string, h http.Handler) *server {
	t.Helper()
	switch name {
	case "net/http":
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		hs := &http.Server{Handler: h}
		go hs.Serve(ln)
		t.Cleanup(func() { hs.Close() })
		return &server{name: name, addr: ln.Addr().String()}
	}
	cfg := uringrt.Config{Loops: 1}
	if name == "uringhttp-std" {
		cfg.Backend = uringrt.BackendStd
	}
	rt, err := uringrt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &uringhttp.Server{Handler: h, Runtime: rt}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Shutdown(ctx)
		<-done
		rt.Close()
	})
	return &server{name: name, addr: ln.Addr().String(), srv: s, rt: rt}
}

// upgradeHandler upgrades every request with u and h.
func upgradeHandler(u *Upgrader, h Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.Upgrade(w, r, h)
	})
}

// echoHandler sends every message back.
var echoHandler = HandlerFuncs{Message: func(c *Conn, t MessageType, data []byte) { c.WriteMessage(t, data) }}

// rawConn is a test client that writes frames byte by byte as it likes.
type rawConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

// dialRaw opens a connection and completes a handshake with extra
// request headers.
func dialRaw(t *testing.T, addr string, extra string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n%s\r\n", addr, extra)
	rc := &rawConn{t: t, c: c, br: bufio.NewReader(c)}
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 101 || resp.Header.Get("Sec-Websocket-Accept") != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" {
		t.Fatalf("handshake: %v %v", resp.Status, resp.Header)
	}
	return rc
}

func (rc *rawConn) send(frames ...[]byte) {
	for _, f := range frames {
		if _, err := rc.c.Write(f); err != nil {
			rc.t.Fatal(err)
		}
	}
}

// frame reads one server frame (which must be unmasked).
func (rc *rawConn) frame() (op byte, fin bool, rsv byte, payload []byte, err error) {
	var h [2]byte
	if _, err = io.ReadFull(rc.br, h[:]); err != nil {
		return
	}
	if h[1]&maskBit != 0 {
		rc.t.Fatalf("server frame masked")
	}
	n := int64(h[1] & 0x7f)
	switch n {
	case 126:
		var l [2]byte
		io.ReadFull(rc.br, l[:])
		n = int64(binary.BigEndian.Uint16(l[:]))
	case 127:
		var l [8]byte
		io.ReadFull(rc.br, l[:])
		n = int64(binary.BigEndian.Uint64(l[:]))
	}
	payload = make([]byte, n)
	_, err = io.ReadFull(rc.br, payload)
	return h[0] & 0x0f, h[0]&finBit != 0, h[0] & rsvBits, payload, err
}

// expectClose reads frames until a close frame, returns its code, and
// checks that the server then closes the TCP connection.
func (rc *rawConn) expectClose() int { return rc.readClose(false) }

// answerClose is expectClose for a close the server began: the client
// answers it, then the server closes the TCP connection.
func (rc *rawConn) answerClose() int { return rc.readClose(true) }

func (rc *rawConn) readClose(answer bool) int {
	rc.t.Helper()
	for {
		op, _, _, p, err := rc.frame()
		if err != nil {
			rc.t.Fatalf("reading for a close frame: %v", err)
		}
		if op != opClose {
			continue
		}
		code := CloseNoStatusReceived
		if len(p) >= 2 {
			code = int(binary.BigEndian.Uint16(p))
		}
		if answer {
			rc.send(clientFrame(true, 0, opClose, testKey, p[:min(len(p), 2)]))
		}
		if _, err := rc.br.ReadByte(); err == nil {
			rc.t.Fatalf("bytes after the close frame")
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			rc.t.Fatalf("server did not close the TCP connection after its close frame")
		}
		rc.c.Close() // as a client does at the server's FIN
		return code
	}
}

var testKey = [4]byte{0x37, 0xfa, 0x21, 0x3d}

func closePayload(code int, reason string) []byte {
	return append(binary.BigEndian.AppendUint16(nil, uint16(code)), reason...)
}

func wsURL(s *server) string { return "ws://" + s.addr + "/" }

func contains(s, sub string) bool { return strings.Contains(s, sub) }
