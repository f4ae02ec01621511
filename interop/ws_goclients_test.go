package interop

// Go WebSocket clients against the interop server: gorilla/websocket,
// coder/websocket and gobwas/ws, each with and without permessage-deflate:
// text, binary, a fragmented message, 1 MiB, a ping, a close code each way.

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	cws "github.com/coder/websocket"
	"github.com/gorilla/websocket"
)

// wsPayloads are the messages each client echoes: text, binary, 1 MiB.
func wsPayloads() (text, bin, large []byte) {
	text = []byte("hello, uringws \u00b5\u00df\u4e16\u754c")
	bin = []byte{0, 1, 2, 0xfe, 0xff, 0x80}
	large = bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	return
}

func TestWSGorillaClient(t *testing.T) {
	base := wsEcho(t, nil)
	for _, deflate := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "deflate"}[deflate], func(t *testing.T) {
			d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, EnableCompression: deflate, WriteBufferSize: 1024}
			c, resp, err := d.Dial(base+"/ws", nil)
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer c.Close()
			if got := strings.Contains(resp.Header.Get("Sec-WebSocket-Extensions"), "permessage-deflate"); got != deflate {
				t.Fatalf("permessage-deflate negotiated %v, want %v", got, deflate)
			}
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			text, bin, large := wsPayloads()
			echo := func(name string, mt int, p []byte) {
				if err := c.WriteMessage(mt, p); err != nil {
					t.Fatalf("%s: write: %v", name, err)
				}
				gt, got, err := c.ReadMessage()
				if err != nil || gt != mt || !bytes.Equal(got, p) {
					t.Fatalf("%s: got type %d, %d bytes, %v", name, gt, len(got), err)
				}
			}
			echo("text", websocket.TextMessage, text)
			echo("binary", websocket.BinaryMessage, bin)
			// A 1 MiB message leaves a 1 KiB write buffer in many frames.
			echo("fragmented 1 MiB", websocket.BinaryMessage, large)
			pong := make(chan string, 1)
			c.SetPongHandler(func(s string) error { pong <- s; return nil })
			c.WriteControl(websocket.PingMessage, []byte("ping!"), time.Now().Add(5*time.Second))
			echo("after ping", websocket.TextMessage, text)
			if p := <-pong; p != "ping!" {
				t.Fatalf("pong %q", p)
			}
			c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(4000, "done"))
			if _, _, err := c.ReadMessage(); !websocket.IsCloseError(err, 4000) {
				t.Fatalf("close 4000 came back as %v", err)
			}
			// The server closes with 4001.
			c2, _, err := d.Dial(base+"/close", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c2.Close()
			c2.SetReadDeadline(time.Now().Add(10 * time.Second))
			c2.WriteMessage(websocket.TextMessage, text)
			if _, _, err := c2.ReadMessage(); !websocket.IsCloseError(err, 4001) {
				t.Fatalf("server close: %v, want 4001", err)
			}
		})
	}
}

func TestWSCoderClient(t *testing.T) {
	base := wsEcho(t, nil)
	for _, deflate := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "deflate"}[deflate], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			mode := cws.CompressionDisabled
			if deflate {
				mode = cws.CompressionContextTakeover
			}
			opts := &cws.DialOptions{CompressionMode: mode}
			c, resp, err := cws.Dial(ctx, base+"/ws", opts)
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer c.CloseNow()
			c.SetReadLimit(8 << 20)
			if got := strings.Contains(resp.Header.Get("Sec-WebSocket-Extensions"), "permessage-deflate"); got != deflate {
				t.Fatalf("permessage-deflate negotiated %v, want %v", got, deflate)
			}
			text, bin, large := wsPayloads()
			echo := func(name string, mt cws.MessageType, p []byte) {
				if err := c.Write(ctx, mt, p); err != nil {
					t.Fatalf("%s: write: %v", name, err)
				}
				gt, got, err := c.Read(ctx)
				if err != nil || gt != mt || !bytes.Equal(got, p) {
					t.Fatalf("%s: got type %v, %d bytes, %v", name, gt, len(got), err)
				}
			}
			echo("text", cws.MessageText, text)
			echo("binary", cws.MessageBinary, bin)
			echo("1 MiB", cws.MessageBinary, large)
			// Each Write of a message writer is a frame of its own.
			w, err := c.Writer(ctx, cws.MessageText)
			if err != nil {
				t.Fatal(err)
			}
			w.Write(text[:5])
			w.Write(text[5:])
			w.Close()
			if _, got, err := c.Read(ctx); err != nil || !bytes.Equal(got, text) {
				t.Fatalf("fragmented: %q %v", got, err)
			}
			// A ping needs a reader running to see its pong.
			read := make(chan error, 1)
			rctx, rcancel := context.WithCancel(ctx)
			go func() { _, _, err := c.Read(rctx); read <- err }()
			if err := c.Ping(ctx); err != nil {
				t.Fatalf("ping: %v", err)
			}
			rcancel()
			<-read
			c2, _, err := cws.Dial(ctx, base+"/ws", opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := c2.Close(4000, "done"); err != nil {
				t.Fatalf("close 4000: %v", err)
			}
			c3, _, err := cws.Dial(ctx, base+"/close", opts)
			if err != nil {
				t.Fatal(err)
			}
			defer c3.CloseNow()
			c3.Write(ctx, cws.MessageText, text)
			_, _, err = c3.Read(ctx)
			if cws.CloseStatus(err) != 4001 {
				var ce cws.CloseError
				errors.As(err, &ce)
				t.Fatalf("server close: %v (%d), want 4001", err, ce.Code)
			}
		})
	}
}
