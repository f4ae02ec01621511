package interop

// The WebSocket server the interop tests drive: uringws on uringhttp (on
// the event loops where io_uring works), an echo on /ws, and on /close a
// server that closes with 4001 "bye" on the first message it gets.

import (
	"net/http"
	"strings"
	"testing"

	"github.com/uringrt/uringrt/uringws"
)

// wsEcho serves the interop server, and extra's handlers on their paths,
// and returns its ws:// base URL.
func wsEcho(t *testing.T, extra map[string]http.HandlerFunc) string {
	return "ws" + strings.TrimPrefix(serveUring(t, wsHandler(extra)), "http")
}

// wsHandler is the interop server's handler.
func wsHandler(extra map[string]http.HandlerFunc) http.Handler {
	up := &uringws.Upgrader{EnableCompression: true, MaxMessageSize: 8 << 20, CheckOrigin: func(*http.Request) bool { return true }}
	echo := uringws.HandlerFuncs{Message: func(c *uringws.Conn, mt uringws.MessageType, data []byte) {
		c.WriteMessage(mt, data)
	}}
	closer := uringws.HandlerFuncs{Message: func(c *uringws.Conn, _ uringws.MessageType, _ []byte) {
		c.Close(4001, "bye")
	}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := extra[r.URL.Path]; h != nil {
			h(w, r)
			return
		}
		h := echo
		if r.URL.Path == "/close" {
			h = closer
		}
		up.Upgrade(w, r, h)
	})
}
