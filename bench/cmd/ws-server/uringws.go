package main

import (
	"net/http"

	uringrt "github.com/uringrt/uringrt/runtime"
	"github.com/uringrt/uringrt/uringhttp"
	"github.com/uringrt/uringrt/uringws"
)

func init() {
	servers["uringws"] = func(addr string, loops int, deflate bool) error {
		rt, err := uringrt.New(uringrt.Config{Loops: loops})
		if err != nil {
			return err
		}
		ln, err := rt.Listen("tcp", addr)
		if err != nil {
			return err
		}
		up := &uringws.Upgrader{EnableCompression: deflate, CheckOrigin: func(*http.Request) bool { return true }}
		bcast := newHub[*uringws.Conn]()
		echo := uringws.HandlerFuncs{Message: func(c *uringws.Conn, t uringws.MessageType, data []byte) {
			c.WriteMessage(t, data)
		}}
		group := uringws.HandlerFuncs{
			Open: func(c *uringws.Conn) {
				bcast.join(c)
				c.WriteMessage(uringws.TextMessage, []byte("j"))
			},
			Close: func(c *uringws.Conn, _ int, _ string) { bcast.leave(c) },
			Message: func(c *uringws.Conn, t uringws.MessageType, data []byte) {
				pm, err := uringws.NewPreparedMessage(t, data)
				if err != nil {
					return
				}
				bcast.each(func(m *uringws.Conn) { m.WritePrepared(pm) })
			},
		}
		srv := &uringhttp.Server{Runtime: rt, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/echo":
				up.Upgrade(w, r, echo)
			case "/bcast":
				up.Upgrade(w, r, group)
			default:
				http.NotFound(w, r)
			}
		})}
		return srv.Serve(ln)
	}
}
