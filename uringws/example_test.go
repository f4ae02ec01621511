package uringws_test

import (
	"log"
	"net/http"

	uringrt "github.com/uringrt/uringrt/runtime"
	"github.com/uringrt/uringrt/uringhttp"
	"github.com/uringrt/uringrt/uringws"
)

// An echo and a broadcast on uringhttp: each upgraded connection lives on
// its event loop.
func Example() {
	u := &uringws.Upgrader{EnableCompression: true}
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		u.Upgrade(w, r, uringws.HandlerFuncs{
			Message: func(c *uringws.Conn, t uringws.MessageType, data []byte) {
				c.WriteMessage(t, data)
			},
		})
	})
	rt, err := uringrt.New(uringrt.Config{})
	if err != nil {
		log.Fatal(err)
	}
	ln, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := &uringhttp.Server{Handler: mux, Runtime: rt}
	go srv.Serve(ln)
	// A broadcast encodes once for every receiver:
	//	pm, _ := uringws.NewPreparedMessage(uringws.TextMessage, news)
	//	for _, c := range subscribers { c.WritePrepared(pm) }
	srv.Close()
	rt.Close()
}
