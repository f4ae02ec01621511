package interop

// chi's middleware stack as users mount it (Logger, Recoverer, Compress,
// GetHead, StripSlashes, Timeout, Throttle) in front of a file server,
// streaming and a gorilla/websocket upgrade, served by net/http on Go's
// net and by uringhttp side by side: the answers are compared.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/gorilla/websocket"
)

// serveNetHTTP serves h with net/http on Go's net; it returns the base URL.
func serveNetHTTP(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return "http://" + ln.Addr().String()
}

func chiStack(t *testing.T, dir string) http.Handler {
	r := chi.NewRouter()
	r.Use(middleware.RequestLogger(&middleware.DefaultLogFormatter{Logger: log.New(io.Discard, "", 0), NoColor: true}))
	r.Use(middleware.Recoverer)
	r.Use(middleware.StripSlashes)
	r.Use(middleware.GetHead)
	r.Use(middleware.Compress(5, "text/plain", "text/html", "application/octet-stream"))
	r.Get("/hello", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, strings.Repeat("Hello, World! ", 200))
	})
	r.Get("/panic", func(w http.ResponseWriter, r *http.Request) { panic("chi boom") })
	r.Get("/stream", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		for i := range 3 {
			fmt.Fprintf(w, "part %d\n", i)
			w.(http.Flusher).Flush()
		}
	})
	r.With(middleware.Timeout(50*time.Millisecond)).Get("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(2 * time.Second):
		}
		io.WriteString(w, "late")
	})
	r.With(middleware.Throttle(2)).Get("/throttled", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "through")
	})
	r.Handle("/files/*", http.StripPrefix("/files", http.FileServer(http.Dir(dir))))
	up := websocket.Upgrader{}
	r.Get("/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			mt, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			c.WriteMessage(mt, append([]byte("echo "), msg...))
		}
	})
	return r
}

// answer is a response as compared: status, headers without Date, body.
func answer(t *testing.T, cl *http.Client, method, u string, hdr ...string) string {
	t.Helper()
	req, _ := http.NewRequest(method, u, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, u, err)
	}
	var keys []string
	for k := range resp.Header {
		if k != "Date" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s chunked=%v len=%d\n", resp.Status, len(resp.TransferEncoding) > 0, resp.ContentLength)
	for _, k := range keys {
		fmt.Fprintf(&sb, "%s: %q\n", k, resp.Header[k])
	}
	fmt.Fprintf(&sb, "body %q", b)
	return sb.String()
}

func TestUringhttpChiMiddlewareVsNetHTTP(t *testing.T) {
	dir := t.TempDir()
	mod := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for name, data := range map[string][]byte{
		"a.txt":   bytes.Repeat([]byte("text file line\n"), 300),
		"b.bin":   bytes.Repeat([]byte{1, 2, 3, 4, 5, 6, 7, 8}, 100000),
		"c.html":  []byte("<html><body>c</body></html>"),
		"d/x.txt": []byte("x"),
	} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, data, 0o644)
		os.Chtimes(p, mod, mod)
	}
	os.Chtimes(filepath.Join(dir, "d"), mod, mod)
	h := chiStack(t, dir)
	std, ur := serveNetHTTP(t, h), serveUring(t, h)
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableCompression: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	gz := []string{"Accept-Encoding", "gzip"}
	cases := []struct {
		method, path string
		hdr          []string
	}{
		{"GET", "/hello", nil},
		{"GET", "/hello", gz},
		{"HEAD", "/hello", gz},
		{"GET", "/hello/", nil},
		{"GET", "/panic", nil},
		{"GET", "/stream", nil},
		{"GET", "/stream", gz},
		{"GET", "/slow", nil},
		{"GET", "/throttled", nil},
		{"GET", "/files/a.txt", nil},
		{"GET", "/files/a.txt", gz},
		{"GET", "/files/b.bin", gz},
		{"GET", "/files/b.bin", []string{"Range", "bytes=10-19"}},
		{"GET", "/files/b.bin", []string{"Accept-Encoding", "gzip", "Range", "bytes=10-19"}},
		{"GET", "/files/c.html", []string{"If-Modified-Since", mod.Format(http.TimeFormat)}},
		{"HEAD", "/files/b.bin", nil},
		{"GET", "/files/d/", nil},
		{"GET", "/files/nope", nil},
	}
	for _, c := range cases {
		t.Run(c.method+c.path+strings.Join(c.hdr, ","), func(t *testing.T) {
			a, b := answer(t, cl, c.method, std+c.path, c.hdr...), answer(t, cl, c.method, ur+c.path, c.hdr...)
			if a != b {
				t.Errorf("net/http:\n%s\nuringhttp:\n%s", a, b)
			}
		})
	}
	t.Run("websocket-behind-middleware", func(t *testing.T) {
		var got [2]string
		for i, base := range []string{std, ur} {
			d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
			c, resp, err := d.Dial("ws"+strings.TrimPrefix(base, "http")+"/ws", nil)
			if err != nil {
				t.Fatalf("server %d: dial: %v (%v)", i, err, resp)
			}
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			c.WriteMessage(websocket.TextMessage, []byte("hi"))
			_, m, err := c.ReadMessage()
			c.Close()
			got[i] = fmt.Sprintf("%d %q %v", resp.StatusCode, m, err)
		}
		if got[0] != got[1] {
			t.Errorf("net/http %s, uringhttp %s", got[0], got[1])
		}
	})
	t.Run("raw-chunked-gzip-stream", func(t *testing.T) {
		// The framing of a compressed stream, byte for byte.
		var outs [2]string
		for i, base := range []string{std, ur} {
			c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(c, "GET /stream HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n")
			b, _ := io.ReadAll(bufio.NewReader(c))
			c.Close()
			lines := strings.Split(string(b), "\r\n")
			for j, l := range lines {
				if strings.HasPrefix(l, "Date: ") {
					lines[j] = "Date: <date>"
				}
			}
			outs[i] = strings.Join(lines, "\r\n")
		}
		if outs[0] != outs[1] {
			t.Errorf("net/http:\n%q\nuringhttp:\n%q", outs[0], outs[1])
		}
	})
}
