package uringws

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// gorillaEcho is gorilla/websocket's server doing what echoHandler does,
// with the same message size limit.
func gorillaEcho(limit int64) http.Handler {
	gu := websocket.Upgrader{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := gu.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		c.SetReadLimit(limit)
		for {
			mt, p, err := c.ReadMessage()
			if err != nil {
				return
			}
			c.WriteMessage(mt, p)
		}
	})
}

// transcript is what a raw client sees: the frames, then the close code.
func transcript(t *testing.T, addr string, in []byte) string {
	rc := dialRaw(t, addr, "")
	rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	rc.send(in)
	var b bytes.Buffer
	for {
		op, fin, _, p, err := rc.frame()
		if err != nil {
			fmt.Fprintf(&b, "end")
			return b.String()
		}
		if op == opClose {
			code := CloseNoStatusReceived
			if len(p) >= 2 {
				code = int(p[0])<<8 | int(p[1])
			}
			fmt.Fprintf(&b, "close %d", code)
			return b.String()
		}
		fmt.Fprintf(&b, "%d/%v/%q ", op, fin, p)
		if op == opPong && string(p) == "last" {
			return b.String() // a sequence ending in the ping "last" ends with its pong
		}
	}
}

// TestDifferentialAgainstGorilla sends the same bytes to uringws and to
// gorilla/websocket's server and compares what comes back: the echoed
// frames, the pongs and the close code.
func TestDifferentialAgainstGorilla(t *testing.T) {
	k := testKey
	cat := func(fs ...[]byte) []byte { return bytes.Join(fs, nil) }
	last := clientFrame(true, 0, opPing, k, []byte("last"))
	cases := map[string][]byte{
		"text":              cat(clientFrame(true, 0, opText, k, []byte("hello")), last),
		"fragments":         cat(clientFrame(false, 0, opText, k, []byte("a")), clientFrame(true, 0, opPing, k, []byte("mid")), clientFrame(true, 0, opContinuation, k, []byte("b")), last),
		"empty fragments":   cat(clientFrame(false, 0, opBinary, k, nil), clientFrame(false, 0, opContinuation, k, nil), clientFrame(true, 0, opContinuation, k, nil), last),
		"close 1000":        clientFrame(true, 0, opClose, k, closePayload(1000, "bye")),
		"close 3000":        clientFrame(true, 0, opClose, k, closePayload(3000, "")),
		"close empty":       clientFrame(true, 0, opClose, k, nil),
		"close 1004":        clientFrame(true, 0, opClose, k, closePayload(1004, "")),
		"close 2999":        clientFrame(true, 0, opClose, k, closePayload(2999, "")),
		"close 5000":        clientFrame(true, 0, opClose, k, closePayload(5000, "")),
		"unmasked":          []byte{finBit | opText, 1, 'a'},
		"rsv3":              clientFrame(true, 0x10, opBinary, k, nil),
		"opcode 7":          clientFrame(true, 0, 7, k, nil),
		"opcode 15":         clientFrame(true, 0, 15, k, nil),
		"fragmented close":  clientFrame(false, 0, opClose, k, nil),
		"long pong":         clientFrame(true, 0, opPong, k, make([]byte, 126)),
		"lone continuation": clientFrame(true, 0, opContinuation, k, []byte("x")),
		"nested text":       cat(clientFrame(false, 0, opText, k, []byte("a")), clientFrame(true, 0, opText, k, []byte("b"))),
		"too big":           clientFrame(true, 0, opBinary, k, make([]byte, 5000)),
		"echo then bad":     cat(clientFrame(true, 0, opText, k, []byte("first")), clientFrame(true, 0x20, opText, k, []byte("x"))),
	}
	ours := serveOne(t, "uringhttp", upgradeHandler(&Upgrader{MaxMessageSize: 4096}, echoHandler))
	theirs := serveOne(t, "net/http", gorillaEcho(4096))
	for name, in := range cases {
		a, b := transcript(t, ours.addr, in), transcript(t, theirs.addr, in)
		if a != b {
			t.Errorf("%s:\n uringws: %s\n gorilla: %s", name, a, b)
		}
	}
}
