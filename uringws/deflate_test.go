package uringws

import (
	"bytes"
	"compress/flate"
	"context"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

func TestDeflateNegotiation(t *testing.T) {
	tests := []struct {
		offer, want string
	}{
		{"permessage-deflate", "permessage-deflate; server_no_context_takeover; client_no_context_takeover"},
		{"permessage-deflate; client_max_window_bits", "permessage-deflate; server_no_context_takeover; client_no_context_takeover"},
		{"permessage-deflate; client_max_window_bits=10; server_no_context_takeover", "permessage-deflate; server_no_context_takeover; client_no_context_takeover"},
		{"permessage-deflate; server_max_window_bits=15", "permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=15"},
		{"permessage-deflate; server_max_window_bits=10", ""},
		{"permessage-deflate; server_max_window_bits=10, permessage-deflate", "permessage-deflate; server_no_context_takeover; client_no_context_takeover"},
		{"permessage-deflate; client_max_window_bits=7", ""},
		{"permessage-deflate; client_max_window_bits=08", ""},
		{"permessage-deflate; server_no_context_takeover; server_no_context_takeover", ""},
		{"permessage-deflate; server_no_context_takeover=1", ""},
		{"permessage-deflate; mystery", ""},
		{"x-webkit-deflate-frame", ""},
	}
	for _, tt := range tests {
		if got := negotiateDeflate(http.Header{"Sec-Websocket-Extensions": {tt.offer}}); got != tt.want {
			t.Errorf("%q: answer %q, want %q", tt.offer, got, tt.want)
		}
	}
}

func TestDeflateEchoGorilla(t *testing.T) {
	u := &Upgrader{EnableCompression: true}
	for _, s := range serveAll(t, upgradeHandler(u, echoHandler)) {
		c := dialGorilla(t, s, &websocket.Dialer{EnableCompression: true})
		for _, m := range []string{"", "hello hello hello hello", strings.Repeat("compressible ", 50000)} {
			if err := c.WriteMessage(websocket.TextMessage, []byte(m)); err != nil {
				t.Fatal(err)
			}
			_, got, err := c.ReadMessage()
			if err != nil || string(got) != m {
				t.Fatalf("%s: echo of %d bytes: %d bytes, %v", s.name, len(m), len(got), err)
			}
		}
	}
}

// deflateRaw compresses p as a permessage-deflate payload (the sync
// flush's tail stripped).
func deflateRaw(p []byte) []byte {
	var b bytes.Buffer
	w, _ := flate.NewWriter(&b, flate.BestCompression)
	w.Write(p)
	w.Flush()
	return b.Bytes()[:b.Len()-4]
}

func TestDeflateRawFramesAndBomb(t *testing.T) {
	log := newCloseLog()
	u := &Upgrader{EnableCompression: true, MaxMessageSize: 1 << 20}
	const offer = "Sec-WebSocket-Extensions: permessage-deflate\r\n"
	for _, s := range serveAll(t, upgradeHandler(u, log.handler())) {
		rc := dialRaw(t, s.addr, offer)
		// A compressed message in two fragments: RSV1 on the first only.
		z := deflateRaw([]byte("fragmented and compressed"))
		rc.send(clientFrame(false, rsv1Bit, opText, testKey, z[:3]), clientFrame(true, 0, opContinuation, testKey, z[3:]))
		op, _, rsv, p, err := rc.frame()
		if err != nil || op != opText || rsv != rsv1Bit {
			t.Fatalf("%s: echo frame %d rsv %x %v", s.name, op, rsv, err)
		}
		if got, _ := inflate(p, 1<<20); string(*got) != "fragmented and compressed" {
			t.Fatalf("%s: echo inflates to %q", s.name, *got)
		}
		// 1 KiB that inflates to 8 MiB: refused with 1009, without
		// inflating it all.
		bomb := deflateRaw(make([]byte, 8<<20))
		if len(bomb) > 16<<10 {
			t.Fatalf("bomb is %d bytes", len(bomb))
		}
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		rc.send(clientFrame(true, rsv1Bit, opBinary, testKey, bomb))
		if code := rc.expectClose(); code != CloseMessageTooBig {
			t.Fatalf("%s: bomb answered %d", s.name, code)
		}
		log.wait(t, s.name)
		runtime.ReadMemStats(&m1)
		if grew := m1.TotalAlloc - m0.TotalAlloc; grew > 6<<20 {
			t.Fatalf("%s: inflating the bomb allocated %d bytes", s.name, grew)
		}
	}
}

func TestShutdownSendsGoingAway(t *testing.T) {
	log := newCloseLog()
	u := &Upgrader{}
	s := serveOne(t, "uringhttp", upgradeHandler(u, log.handler()))
	var rcs []*rawConn
	for i := 0; i < 5; i++ {
		rcs = append(rcs, dialRaw(t, s.addr, ""))
	}
	rcs[0].send(clientFrame(true, 0, opText, testKey, []byte("x")))
	rcs[0].frame()
	res := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res <- s.srv.Shutdown(ctx)
	}()
	for _, rc := range rcs {
		if code := rc.answerClose(); code != CloseGoingAway {
			t.Fatalf("Shutdown sent %d", code)
		}
	}
	if err := <-res; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	for range rcs {
		if code := log.wait(t, "shutdown"); code != CloseGoingAway {
			t.Fatalf("OnClose %d", code)
		}
	}
}

func TestShutdownBoundedByContext(t *testing.T) {
	u := &Upgrader{}
	s := serveOne(t, "uringhttp", upgradeHandler(u, echoHandler))
	rc := dialRaw(t, s.addr, "") // reads the close but never answers
	_ = rc
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := s.srv.Shutdown(ctx); err != context.DeadlineExceeded {
		t.Fatalf("Shutdown: %v, want the context's error", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Shutdown took %v", d)
	}
}

// Without a size limit a compressed message still inflates (the limit's
// arithmetic does not overflow).
func TestDeflateWithoutLimit(t *testing.T) {
	u := &Upgrader{EnableCompression: true, MaxMessageSize: -1}
	s := serveOne(t, "uringhttp", upgradeHandler(u, echoHandler))
	c := dialGorilla(t, s, &websocket.Dialer{EnableCompression: true})
	msg := strings.Repeat("no limit ", 1000)
	if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		t.Fatal(err)
	}
	if _, got, err := c.ReadMessage(); err != nil || string(got) != msg {
		t.Fatalf("echo: %d bytes, %v", len(got), err)
	}
}
