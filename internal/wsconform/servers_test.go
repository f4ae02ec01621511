package wsconform

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	uringrt "github.com/uringrt/uringrt/runtime"
	"github.com/uringrt/uringrt/uringhttp"
	"github.com/uringrt/uringrt/uringws"
)

// utf8Stream validates UTF-8 as it arrives, so that an echo server fails a
// message at its first bad byte rather than at its end.
type utf8Stream struct{ tail []byte }

func (v *utf8Stream) write(p []byte) bool {
	b := append(v.tail, p...)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			if !utf8.FullRune(b) {
				break
			}
			return false
		}
		b = b[n:]
	}
	v.tail = append(v.tail[:0], b...)
	return true
}

// gorillaEcho is gorilla/websocket's echo server as its own conformance
// example writes it: compression on, text validated as it is read (fail
// fast, 1007), every message written back whole.
func gorillaEcho(validate bool) http.Handler {
	up := websocket.Upgrader{EnableCompression: true, ReadBufferSize: 4096, WriteBufferSize: 4096}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 32<<10)
		for {
			mt, rd, err := c.NextReader()
			if err != nil {
				return
			}
			var v utf8Stream
			var msg []byte
			for {
				n, err := rd.Read(buf)
				if validate && mt == websocket.TextMessage && !v.write(buf[:n]) {
					c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseInvalidFramePayloadData, ""), time.Now().Add(time.Second))
					return
				}
				msg = append(msg, buf[:n]...)
				if err == io.EOF {
					break
				}
				if err != nil {
					return
				}
			}
			if validate && mt == websocket.TextMessage && len(v.tail) > 0 {
				c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseInvalidFramePayloadData, ""), time.Now().Add(time.Second))
				return
			}
			if err := c.WriteMessage(mt, msg); err != nil {
				return
			}
		}
	})
}

// serveStd serves h on net/http and returns its address.
func serveStd(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// serveUringhttp serves h on uringhttp (io_uring, or Go's net where io_uring
// is refused) and returns its address.
func serveUringhttp(t *testing.T, h http.Handler) string {
	t.Helper()
	rt, err := uringrt.New(uringrt.Config{Loops: 2})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		rt.Close()
		t.Fatal(err)
	}
	srv := &uringhttp.Server{Handler: h, Runtime: rt, ErrorLog: log.New(io.Discard, "", 0)}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			srv.Close()
		}
		<-done
		rt.Close()
	})
	return ln.Addr().(*net.TCPAddr).String()
}

// uringwsEcho is uringws's echo: every message written back from its
// callback, compression accepted, messages up to 16 MiB.
func uringwsEcho() http.Handler {
	up := &uringws.Upgrader{EnableCompression: true, MaxMessageSize: 16 << 20}
	h := uringws.HandlerFuncs{Message: func(c *uringws.Conn, t uringws.MessageType, data []byte) {
		c.WriteMessage(t, data)
	}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { up.Upgrade(w, r, h) })
}
