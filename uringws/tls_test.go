package uringws

import (
	"bytes"
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/uringrt/uringrt/internal/testcert"
	uringrt "github.com/uringrt/uringrt/runtime"
	"github.com/uringrt/uringrt/uringhttp"
)

// TestEchoWSS: wss:// — a gorilla client echoes through uringws on
// uringhttp's ServeTLS, the websocket taken over onto the loop under TLS,
// on both backends.
func TestEchoWSS(t *testing.T) {
	cert, _ := testcert.New(t)
	for _, backend := range []uringrt.Backend{uringrt.BackendUring, uringrt.BackendStd} {
		rt, err := uringrt.New(uringrt.Config{Loops: 1, Backend: backend})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := rt.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s := &uringhttp.Server{Handler: upgradeHandler(&Upgrader{}, echoHandler), Runtime: rt,
			TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
		done := make(chan error, 1)
		go func() { done <- s.ServeTLS(ln, "", "") }()
		d := &websocket.Dialer{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
		c, resp, err := d.Dial("wss://"+ln.Addr().String()+"/", nil)
		if err != nil {
			t.Fatalf("backend %v: dial: %v %v", backend, err, resp)
		}
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		for _, m := range [][]byte{[]byte("hello"), bytes.Repeat([]byte("w"), 100000)} {
			if err := c.WriteMessage(websocket.BinaryMessage, m); err != nil {
				t.Fatal(err)
			}
			_, got, err := c.ReadMessage()
			if err != nil || !bytes.Equal(got, m) {
				t.Fatalf("backend %v: echo of %d bytes: %d, %v", backend, len(m), len(got), err)
			}
		}
		c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s.Shutdown(ctx)
		cancel()
		<-done
		rt.Close()
	}
}
