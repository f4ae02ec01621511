package interop

// gobwas/ws, frame by frame, against the interop server: its own masked
// frames, fragments written one by one, and permessage-deflate through
// wsflate (no context takeover either way, which wsflate's frame helpers
// need).

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/gobwas/httphead"
	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsflate"
)

// gobwasConn is a client connection that reads whole messages.
type gobwasConn struct {
	t       *testing.T
	c       net.Conn
	br      *bufio.Reader
	deflate bool
}

func (g *gobwasConn) send(f ws.Frame) {
	g.t.Helper()
	if g.deflate && (f.Header.OpCode == ws.OpText || f.Header.OpCode == ws.OpBinary) {
		var err error
		if f, err = wsflate.CompressFrame(f); err != nil {
			g.t.Fatal(err)
		}
	}
	if err := ws.WriteFrame(g.c, ws.MaskFrameInPlace(f)); err != nil {
		g.t.Fatal(err)
	}
}

// next returns the next message or control frame other than a ping (which
// it answers), joining fragments and inflating.
func (g *gobwasConn) next() ws.Frame {
	g.t.Helper()
	var msg ws.Frame
	for {
		f, err := ws.ReadFrame(g.br)
		if err != nil {
			g.t.Fatalf("read: %v", err)
		}
		if f.Header.Masked {
			g.t.Fatal("masked frame from the server")
		}
		switch f.Header.OpCode {
		case ws.OpPing:
			g.send(ws.NewPongFrame(f.Payload))
			continue
		case ws.OpPong, ws.OpClose:
			return f
		case ws.OpContinuation:
			msg.Payload = append(msg.Payload, f.Payload...)
		default:
			msg = f
		}
		if f.Header.Fin {
			msg.Header.Fin, msg.Header.Length = true, int64(len(msg.Payload))
			if c, _ := wsflate.IsCompressed(msg.Header); c {
				if msg, err = wsflate.DecompressFrame(msg); err != nil {
					g.t.Fatalf("inflate: %v", err)
				}
			}
			return msg
		}
	}
}

func dialGobwas(t *testing.T, url string, deflate bool) *gobwasConn {
	d := ws.Dialer{Timeout: 10 * time.Second}
	if deflate {
		d.Extensions = []httphead.Option{wsflate.DefaultParameters.Option()}
	}
	c, br, hs, err := d.Dial(context.Background(), url)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	got := false
	for _, e := range hs.Extensions {
		got = got || string(e.Name) == wsflate.ExtensionName
	}
	if got != deflate {
		t.Fatalf("permessage-deflate negotiated %v, want %v", got, deflate)
	}
	if br == nil {
		br = bufio.NewReader(c)
	} else {
		br = bufio.NewReader(io.MultiReader(br, c))
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	return &gobwasConn{t: t, c: c, br: br, deflate: deflate}
}

func TestWSGobwasClient(t *testing.T) {
	base := wsEcho(t, nil)
	for _, deflate := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "deflate"}[deflate], func(t *testing.T) {
			g := dialGobwas(t, base+"/ws", deflate)
			text, bin, large := wsPayloads()
			echo := func(name string, op ws.OpCode, p []byte) {
				g.send(ws.NewFrame(op, true, bytes.Clone(p)))
				f := g.next()
				if f.Header.OpCode != op || !bytes.Equal(f.Payload, p) {
					t.Fatalf("%s: got op %v, %d bytes", name, f.Header.OpCode, len(f.Payload))
				}
			}
			echo("text", ws.OpText, text)
			echo("binary", ws.OpBinary, bin)
			echo("1 MiB", ws.OpBinary, large)
			if !deflate {
				// Three fragments with a ping between: the pong comes first.
				ws.WriteFrame(g.c, ws.MaskFrameInPlace(ws.NewFrame(ws.OpText, false, bytes.Clone(text[:3]))))
				ws.WriteFrame(g.c, ws.MaskFrameInPlace(ws.NewPingFrame([]byte("mid"))))
				ws.WriteFrame(g.c, ws.MaskFrameInPlace(ws.NewFrame(ws.OpContinuation, false, bytes.Clone(text[3:7]))))
				ws.WriteFrame(g.c, ws.MaskFrameInPlace(ws.NewFrame(ws.OpContinuation, true, bytes.Clone(text[7:]))))
				if f := g.next(); f.Header.OpCode != ws.OpPong || string(f.Payload) != "mid" {
					t.Fatalf("ping between fragments: op %v %q", f.Header.OpCode, f.Payload)
				}
				if f := g.next(); !bytes.Equal(f.Payload, text) {
					t.Fatalf("fragmented: %q", f.Payload)
				}
			}
			g.send(ws.NewPingFrame([]byte("ping!")))
			if f := g.next(); f.Header.OpCode != ws.OpPong || string(f.Payload) != "ping!" {
				t.Fatalf("ping: op %v %q", f.Header.OpCode, f.Payload)
			}
			g.send(ws.NewCloseFrame(ws.NewCloseFrameBody(4000, "done")))
			f := g.next()
			if code, _ := ws.ParseCloseFrameData(f.Payload); f.Header.OpCode != ws.OpClose || code != 4000 {
				t.Fatalf("close 4000 came back as op %v code %d", f.Header.OpCode, code)
			}
			g2 := dialGobwas(t, base+"/close", deflate)
			g2.send(ws.NewTextFrame(bytes.Clone(text)))
			f = g2.next()
			if code, reason := ws.ParseCloseFrameData(f.Payload); f.Header.OpCode != ws.OpClose || code != 4001 || reason != "bye" {
				t.Fatalf("server close: op %v code %d %q", f.Header.OpCode, code, reason)
			}
		})
	}
}
