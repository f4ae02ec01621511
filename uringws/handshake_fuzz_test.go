package uringws

import (
	"bufio"
	"bytes"
	"net/http"
	"strings"
	"testing"
)

// FuzzHandshake parses arbitrary handshake headers: no panic; an accepted
// request has a 16-byte key and an answer that parses as one HTTP 101
// response whose permessage-deflate answer is itself an acceptable offer.
func FuzzHandshake(f *testing.F) {
	f.Add("dGhlIHNhbXBsZSBub25jZQ==", "Upgrade", "websocket", "13", "permessage-deflate; client_max_window_bits", "chat, superchat", "")
	f.Add("AAAA", "keep-alive, Upgrade", "WebSocket", "8", "permessage-deflate; server_max_window_bits=10", "", "http://x")
	f.Add("dGhlIHNhbXBsZSBub25jZQ==", "upgrade", "websocket", "13", "x, permessage-deflate;server_no_context_takeover", "a\r\nb", "http://example.com")
	f.Fuzz(func(t *testing.T, key, conn, upg, ver, ext, proto, origin string) {
		r := &http.Request{Method: "GET", Host: "example.com", Header: http.Header{
			"Sec-Websocket-Key":        {key},
			"Connection":               {conn},
			"Upgrade":                  {upg},
			"Sec-Websocket-Version":    {ver},
			"Sec-Websocket-Extensions": {ext},
			"Sec-Websocket-Protocol":   {proto},
		}}
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		u := &Upgrader{EnableCompression: true, Subprotocols: []string{"chat", "superchat", "a\r\nb"}}
		hs, herr := u.checkRequest(r)
		if herr != nil {
			if herr.Status < 400 || herr.Status > 426 {
				t.Fatalf("status %d", herr.Status)
			}
			return
		}
		if len(hs.accept) != 28 {
			t.Fatalf("accept %q", hs.accept)
		}
		head := hs.response101(http.Header{"X-Evil": {"a\r\nInjected: 1"}})
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(head)), nil)
		if err != nil || resp.StatusCode != 101 || resp.Header.Get("Injected") != "" {
			t.Fatalf("answer %q: %v", head, err)
		}
		if hs.ext != "" {
			if ans, ok := deflateAnswer(strings.Split(hs.ext, ";")[1:]); !ok || ans != hs.ext {
				t.Fatalf("answer %q not an acceptable offer (%q)", hs.ext, ans)
			}
		}
	})
}
