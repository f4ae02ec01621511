package uringhttp

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"net/url"
	"reflect"
	"testing"
)

// FuzzParse feeds raw bytes to the head parser: it must not panic, and a
// head it accepts must be one net/http's ReadRequest accepts, taken apart
// the same way (method, URI, protocol, header, Host, body framing).
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST /x?y HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc",
		"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTrailer: X\r\n\r\n0\r\n\r\n",
		"GET / HTTP/1.0\nConnection: keep-alive\n\n",
		"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n",
		"CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n",
		"GET http://h/p HTTP/1.1\r\nHost: x\r\nPragma: no-cache\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 8192 {
			return
		}
		n := headEnd(b, 0)
		if n < 0 {
			return
		}
		var p parsed
		err := parseHead(context.Background(), string(b[:n]), &p, new(url.URL))
		if err != nil {
			return
		}
		req, rerr := http.ReadRequest(bufio.NewReader(bytes.NewReader(b)))
		if rerr != nil {
			t.Fatalf("accepted %q, net/http: %v", b[:n], rerr)
		}
		got := p.req
		if got.Method != req.Method || got.RequestURI != req.RequestURI || got.Proto != req.Proto ||
			got.Host != req.Host || got.ContentLength != req.ContentLength || got.Close != req.Close ||
			got.URL.String() != req.URL.String() || !reflect.DeepEqual(got.TransferEncoding, req.TransferEncoding) {
			t.Fatalf("%q:\n got %s %s %s host=%q cl=%d close=%v url=%s\nwant %s %s %s host=%q cl=%d close=%v url=%s", b[:n],
				got.Method, got.RequestURI, got.Proto, got.Host, got.ContentLength, got.Close, got.URL,
				req.Method, req.RequestURI, req.Proto, req.Host, req.ContentLength, req.Close, req.URL)
		}
		delete(req.Header, "Host")
		if !reflect.DeepEqual(map[string][]string(got.Header), map[string][]string(req.Header)) {
			t.Fatalf("%q: header\n got %q\nwant %q", b[:n], got.Header, req.Header)
		}
	})
}
