package main

import (
	"net/http"
	"sync"

	"github.com/gorilla/websocket"
)

// gorillaConn serialises writers: gorilla allows one at a time.
type gorillaConn struct {
	mu sync.Mutex
	c  *websocket.Conn
}

func init() {
	servers["gorilla"] = func(addr string, _ int, deflate bool) error {
		up := websocket.Upgrader{EnableCompression: deflate}
		bcast := newHub[*gorillaConn]()
		return http.ListenAndServe(addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, err := up.Upgrade(w, r, nil)
			if err != nil {
				return
			}
			defer c.Close()
			gc := &gorillaConn{c: c}
			if r.URL.Path == "/bcast" {
				gc.mu.Lock()
				bcast.join(gc)
				err := c.WriteMessage(websocket.TextMessage, []byte("j"))
				gc.mu.Unlock()
				defer bcast.leave(gc)
				if err != nil {
					return
				}
			}
			for {
				mt, msg, err := c.ReadMessage()
				if err != nil {
					return
				}
				if r.URL.Path != "/bcast" {
					if c.WriteMessage(mt, msg) != nil {
						return
					}
					continue
				}
				pm, err := websocket.NewPreparedMessage(mt, msg)
				if err != nil {
					return
				}
				bcast.each(func(m *gorillaConn) {
					m.mu.Lock()
					m.c.WritePreparedMessage(pm)
					m.mu.Unlock()
				})
			}
		}))
	}
}
