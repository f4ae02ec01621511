package main

import (
	"flag"
	"net/http"

	"github.com/lesismal/nbio/nbhttp"
	"github.com/lesismal/nbio/nbhttp/websocket"
)

var nbioInline = flag.Bool("nbio-inline", false, "nbio: run handlers on the poller (ServerExecutor) instead of its task pool")

func init() {
	servers["nbio"] = func(addr string, loops int, deflate bool) error {
		bcast := newHub[*websocket.Conn]()
		mk := func(path string) *websocket.Upgrader {
			u := websocket.NewUpgrader()
			u.EnableCompression(deflate)
			u.KeepaliveTime = 0
			u.OnMessage(func(c *websocket.Conn, mt websocket.MessageType, data []byte) {
				if path == "/echo" {
					c.WriteMessage(mt, data)
					return
				}
				bcast.each(func(m *websocket.Conn) { m.WriteMessage(mt, data) })
			})
			u.OnOpen(func(c *websocket.Conn) {
				// nbio's accepted sockets keep Nagle on; a frame's header
				// and payload may leave in two writes, the second held
				// for the peer's delayed ACK. Go's net turns it off.
				if nd, ok := c.Conn.(interface{ SetNoDelay(bool) error }); ok {
					nd.SetNoDelay(true)
				}
				if path == "/bcast" {
					bcast.join(c)
					c.WriteMessage(websocket.TextMessage, []byte("j"))
				}
			})
			if path == "/bcast" {
				u.OnClose(func(c *websocket.Conn, _ error) { bcast.leave(c) })
			}
			return u
		}
		ups := map[string]*websocket.Upgrader{"/echo": mk("/echo"), "/bcast": mk("/bcast")}
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u := ups[r.URL.Path]
			if u == nil {
				http.NotFound(w, r)
				return
			}
			u.Upgrade(w, r, nil)
		})
		conf := nbhttp.Config{Network: "tcp", Addrs: []string{addr}, Handler: h, NPoller: loops, MaxLoad: 1 << 20}
		if *nbioInline {
			// Messages handled on the poller that read them, not in the task pool.
			conf.ServerExecutor = func(f func()) { f() }
		}
		e := nbhttp.NewEngine(conf)
		if err := e.Start(); err != nil {
			return err
		}
		select {}
	}
}
