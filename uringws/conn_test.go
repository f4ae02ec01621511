package uringws

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

func dialGorilla(t *testing.T, s *server, d *websocket.Dialer) *websocket.Conn {
	t.Helper()
	if d == nil {
		d = &websocket.Dialer{}
	}
	c, resp, err := d.Dial(wsURL(s), nil)
	if err != nil {
		t.Fatalf("%s: dial: %v %v", s.name, err, resp)
	}
	t.Cleanup(func() { c.Close() })
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	return c
}

func TestEchoGorillaClient(t *testing.T) {
	u := &Upgrader{}
	for _, s := range serveAll(t, upgradeHandler(u, echoHandler)) {
		c := dialGorilla(t, s, nil)
		big := bytes.Repeat([]byte("0123456789"), 20000)
		for i, m := range [][]byte{[]byte("hello"), {}, big, []byte("κόσμε")} {
			typ := websocket.BinaryMessage
			if i%2 == 0 {
				typ = websocket.TextMessage
			}
			if err := c.WriteMessage(typ, m); err != nil {
				t.Fatal(err)
			}
			gt, got, err := c.ReadMessage()
			if err != nil || gt != typ || !bytes.Equal(got, m) {
				t.Fatalf("%s: message %d: %v %d bytes %v", s.name, i, gt, len(got), err)
			}
		}
		c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(1000, "bye"))
		_, _, err := c.ReadMessage()
		if ce, ok := err.(*websocket.CloseError); !ok || ce.Code != 1000 {
			t.Fatalf("%s: close answer %v", s.name, err)
		}
	}
}

func TestHandshakeRefusals(t *testing.T) {
	u := &Upgrader{}
	tests := []struct {
		name   string
		mod    func(r *http.Request)
		status int
	}{
		{"POST", func(r *http.Request) { r.Method = "POST" }, 405},
		{"no Connection upgrade", func(r *http.Request) { r.Header.Set("Connection", "keep-alive") }, 400},
		{"no Upgrade websocket", func(r *http.Request) { r.Header.Set("Upgrade", "h2c") }, 400},
		{"version 8", func(r *http.Request) { r.Header.Set("Sec-WebSocket-Version", "8") }, 426},
		{"no key", func(r *http.Request) { r.Header.Del("Sec-WebSocket-Key") }, 400},
		{"short key", func(r *http.Request) { r.Header.Set("Sec-WebSocket-Key", "AAAA") }, 400},
		{"cross origin", func(r *http.Request) { r.Header.Set("Origin", "http://evil.example") }, 403},
	}
	for _, s := range serveAll(t, upgradeHandler(u, echoHandler)) {
		for _, tt := range tests {
			req, _ := http.NewRequest("GET", "http://"+s.addr+"/", nil)
			req.Header.Set("Connection", "Upgrade")
			req.Header.Set("Upgrade", "websocket")
			req.Header.Set("Sec-WebSocket-Version", "13")
			req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
			tt.mod(req)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", s.name, tt.name, err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("%s %s: status %d, want %d", s.name, tt.name, resp.StatusCode, tt.status)
			}
			if tt.status == 426 && resp.Header.Get("Sec-WebSocket-Version") != "13" {
				t.Fatalf("%s: 426 without Sec-WebSocket-Version: 13", s.name)
			}
		}
	}
}

func TestSubprotocolAndOrigin(t *testing.T) {
	u := &Upgrader{Subprotocols: []string{"chat", "superchat"}}
	for _, s := range serveAll(t, upgradeHandler(u, echoHandler)) {
		d := &websocket.Dialer{Subprotocols: []string{"v2", "superchat", "chat"}}
		h := http.Header{"Origin": {"http://" + s.addr}}
		c, _, err := d.Dial(wsURL(s), h)
		if err != nil {
			t.Fatalf("%s: same-origin dial: %v", s.name, err)
		}
		if c.Subprotocol() != "superchat" {
			t.Fatalf("%s: subprotocol %q, want the client's first one the server has", s.name, c.Subprotocol())
		}
		c.Close()
	}
}
