package uringrt_test

import (
	"crypto/tls"
	"log"
	"time"

	uringrt "github.com/uringrt/uringrt/runtime"
)

// A TLS echo server on the callback API: StartTLS in OnOpen, plaintext in
// OnData, writes sealed on the loop.
func ExampleCallbackConn_StartTLS() {
	cert, err := tls.LoadX509KeyPair("cert.pem", "key.pem")
	if err != nil {
		log.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}}
	rt, err := uringrt.New(uringrt.Config{})
	if err != nil {
		log.Fatal(err)
	}
	ln, err := rt.Listen("tcp", "127.0.0.1:8443")
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(rt.Serve(ln, uringrt.HandlerFuncs{
		Open: func(c *uringrt.CallbackConn) { c.StartTLS(cfg, 10*time.Second) },
		Data: func(c *uringrt.CallbackConn, data []byte) { c.Write(data) },
		TLSHandshake: func(c *uringrt.CallbackConn, err error) {
			if err != nil {
				log.Printf("TLS handshake from %s: %v", c.RemoteAddr(), err)
			}
		},
	}))
}
