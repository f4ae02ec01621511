package uringws

import (
	"bytes"
	"sync"
	"testing"

	"github.com/gorilla/websocket"
)

func TestWritePreparedToPlainAndCompressed(t *testing.T) {
	var mu sync.Mutex
	var conns []*Conn
	opened := make(chan struct{}, 8)
	u := &Upgrader{EnableCompression: true}
	h := HandlerFuncs{Open: func(c *Conn) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
		opened <- struct{}{}
	}}
	for _, s := range serveAll(t, upgradeHandler(u, h)) {
		mu.Lock()
		conns = nil
		mu.Unlock()
		plain := dialGorilla(t, s, nil)
		comp := dialGorilla(t, s, &websocket.Dialer{EnableCompression: true})
		<-opened
		<-opened
		msg := bytes.Repeat([]byte("broadcast "), 200)
		pm, err := NewPreparedMessage(TextMessage, msg)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		for _, c := range conns {
			for i := 0; i < 3; i++ {
				if err := c.WritePrepared(pm); err != nil {
					t.Fatal(err)
				}
			}
		}
		mu.Unlock()
		for _, c := range []*websocket.Conn{plain, comp} {
			for i := 0; i < 3; i++ {
				_, got, err := c.ReadMessage()
				if err != nil || !bytes.Equal(got, msg) {
					t.Fatalf("%s: %d bytes %v", s.name, len(got), err)
				}
			}
		}
		if len(pm.compressed) == 0 || len(pm.compressed) >= len(pm.plain) {
			t.Fatalf("compressed frame %d bytes, plain %d", len(pm.compressed), len(pm.plain))
		}
	}
	if _, err := NewPreparedMessage(PingMessage, make([]byte, 126)); err != ErrControlTooLong {
		t.Fatalf("long ping prepared: %v", err)
	}
}
