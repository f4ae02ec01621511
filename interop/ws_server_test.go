package interop

// The WebSocket server the interop tests drive, served by uringhttp: an echo
// on /ws, and on /close a server that closes with 4001 "bye" on the first
// message it gets.

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
)

// wsEcho serves the interop server, and extra's handlers on their paths,
// and returns its ws:// base URL.
func wsEcho(t *testing.T, extra map[string]http.HandlerFunc) string {
	up := websocket.Upgrader{EnableCompression: true, CheckOrigin: func(*http.Request) bool { return true }}
	base := serveUring(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := extra[r.URL.Path]; h != nil {
			h(w, r)
			return
		}
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		c.SetReadLimit(8 << 20)
		for {
			mt, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			if r.URL.Path == "/close" {
				c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(4001, "bye"))
				c.ReadMessage()
				return
			}
			if err := c.WriteMessage(mt, msg); err != nil {
				return
			}
		}
	}))
	return "ws" + strings.TrimPrefix(base, "http")
}
