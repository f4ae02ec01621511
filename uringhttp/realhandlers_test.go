package uringhttp_test

// Handlers users mount, from the standard library, served by net/http on
// Go's net and by uringhttp side by side and driven by raw bytes, Go's
// http.Client, curl and ab: http.FileServer, http.ServeContent and
// http.ServeFile on real files, httputil.ReverseProxy to a backend,
// http.TimeoutHandler, http.StripPrefix, net/http/pprof, expvar, a
// server-sent-events stream, panics and ErrorLog lines, writes after
// Hijack, Request.Body read after the response was sent.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"expvar"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/http/pprof"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const realBigSize = 6 << 20 // a file of several MiB

// realEnv is the files and the proxy backend the real handlers serve.
type realEnv struct {
	dir     string
	backend string // the proxy backend's address (net/http on Go's net)
	gates   sync.Map
}

// realBigByte is byte i of the large file: not one repeated byte, so that
// a range served from the wrong offset shows.
func realBigByte(i int) byte { return byte(i*7 + i/251) }

func newRealEnv(t *testing.T) *realEnv {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, data []byte) {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, diffModTime, diffModTime); err != nil {
			t.Fatal(err)
		}
	}
	big := make([]byte, realBigSize)
	for i := range big {
		big[i] = realBigByte(i)
	}
	write("big.bin", big)
	write("small.txt", []byte(diffFileContent))
	write("mid.txt", bytes.Repeat([]byte("0123456789abcdefghijklmnopqrstuvwxyz\n"), 27)) // 999 bytes: past the sniff, under the 2 KiB buffer
	write("page.html", []byte("<!doctype html><title>x</title>"))
	write("sub/index.html", []byte("<html>sub index</html>"))
	write("sub/other.css", []byte("body{}"))
	os.Chtimes(filepath.Join(dir, "sub"), diffModTime, diffModTime)
	e := &realEnv{dir: dir}

	// The backend the reverse proxy forwards to.
	bln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	bs := &http.Server{Handler: http.HandlerFunc(e.backendServe), ErrorLog: log.New(io.Discard, "", 0)}
	go bs.Serve(bln)
	t.Cleanup(func() { bs.Close() })
	e.backend = bln.Addr().String()
	return e
}

// gate returns the channel a backend stream waits on, by id.
func (e *realEnv) gate(id string) chan struct{} {
	g, _ := e.gates.LoadOrStore(id, make(chan struct{}))
	return g.(chan struct{})
}

func (e *realEnv) backendServe(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/headers":
		// What the proxy forwarded (the client's port aside).
		h := r.Header.Clone()
		fmt.Fprintf(w, "%s %s %s host=%s\n", r.Method, r.URL.RequestURI(), r.Proto, r.Host)
		writeSorted(w, "h", h)
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "body %q\n", b)
	case "/sha":
		h := sha256.New()
		n, err := io.Copy(h, r.Body)
		fmt.Fprintf(w, "%d %x %v cl=%d te=%q", n, h.Sum(nil), err, r.ContentLength, r.TransferEncoding)
	case "/chunked":
		for i := range 5 {
			fmt.Fprintf(w, "piece %d;", i)
			w.(http.Flusher).Flush()
		}
	case "/length":
		w.Header().Set("Content-Length", "11")
		io.WriteString(w, "hello world")
	case "/trailers":
		w.Header().Set("Trailer", "X-Checksum")
		io.WriteString(w, "trailer body")
		w.(http.Flusher).Flush()
		w.Header().Set("X-Checksum", "abc123")
		w.Header().Set(http.TrailerPrefix+"X-Late", "late")
	case "/stream":
		// First piece, then wait for the test to release the rest.
		io.WriteString(w, "first;")
		w.(http.Flusher).Flush()
		select {
		case <-e.gate(r.URL.Query().Get("id")):
		case <-time.After(10 * time.Second):
		}
		io.WriteString(w, "second")
	case "/big":
		http.ServeFile(w, r, filepath.Join(e.dir, "big.bin"))
	case "/status":
		code, _ := strconv.Atoi(r.URL.Query().Get("code"))
		w.Header().Set("X-Backend", "yes")
		w.WriteHeader(code)
		io.WriteString(w, "status body")
	case "/upgrade":
		if r.Header.Get("Upgrade") != "echo" {
			http.Error(w, "want Upgrade: echo", 400)
			return
		}
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
		brw.Flush()
		for {
			line, err := brw.ReadString('\n')
			if err != nil {
				return
			}
			brw.WriteString("echo: " + line)
			brw.Flush()
		}
	default:
		http.NotFound(w, r)
	}
}

// handler is the one handler both servers serve.
func (e *realEnv) handler(t *testing.T) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/files/", http.StripPrefix("/files", http.FileServer(http.Dir(e.dir))))
	mux.HandleFunc("/servefile", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, filepath.Join(e.dir, r.URL.Query().Get("f")))
	})
	mux.HandleFunc("/content", func(w http.ResponseWriter, r *http.Request) {
		f, err := os.Open(filepath.Join(e.dir, "big.bin"))
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		defer f.Close()
		w.Header().Set("ETag", `"big-v1"`)
		http.ServeContent(w, r, "big.bin", diffModTime, f)
	})
	mux.HandleFunc("/content-strings", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `W/"s1"`)
		http.ServeContent(w, r, "x.txt", diffModTime, strings.NewReader(diffFileContent))
	})
	mux.HandleFunc("/copy", func(w http.ResponseWriter, r *http.Request) {
		// A handler copying a file without Content-Length: framed as
		// net/http's ReadFrom frames it.
		f, err := os.Open(filepath.Join(e.dir, r.URL.Query().Get("f")))
		if err != nil {
			http.Error(w, "no file", 404)
			return
		}
		defer f.Close()
		if n, _ := strconv.Atoi(r.URL.Query().Get("n")); n > 0 {
			io.CopyN(w, f, int64(n))
			return
		}
		io.Copy(w, f)
	})
	mux.HandleFunc("/readerfrom", func(w http.ResponseWriter, r *http.Request) {
		_, rf := w.(io.ReaderFrom)
		_, sw := w.(io.StringWriter)
		fmt.Fprintf(w, "ReaderFrom=%v StringWriter=%v", rf, sw)
	})
	target, _ := url.Parse("http://" + e.backend)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ErrorLog = log.New(io.Discard, "", 0)
	mux.Handle("/proxy/", http.StripPrefix("/proxy", proxy))
	streaming := httputil.NewSingleHostReverseProxy(target)
	streaming.FlushInterval = -1
	streaming.ErrorLog = log.New(io.Discard, "", 0)
	mux.Handle("/sproxy/", http.StripPrefix("/sproxy", streaming))
	down := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: "127.0.0.1:1"})
	down.ErrorLog = log.New(io.Discard, "", 0)
	mux.Handle("/downproxy/", down)

	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, _ := time.ParseDuration(r.URL.Query().Get("d"))
		w.Header().Set("X-Inner", "1")
		select {
		case <-time.After(d):
		case <-r.Context().Done():
		}
		_, err := io.WriteString(w, "inner done")
		if err != nil && r.URL.Query().Get("report") != "" {
			e.gates.Store("timeout-err", err.Error())
		}
	})
	mux.Handle("/timeout", http.TimeoutHandler(slow, time.Second, "handler timed out"))
	mux.Handle("/strip/", http.StripPrefix("/strip/a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "path=%q raw=%q uri=%q", r.URL.Path, r.URL.RawPath, r.RequestURI)
	})))
	mux.Handle("/maxbytes", http.MaxBytesHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			http.Error(w, fmt.Sprintf("too large: %d after %d bytes", mbe.Limit, len(b)), http.StatusRequestEntityTooLarge)
			return
		}
		fmt.Fprintf(w, "got %d", len(b))
	}), 16))
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.Handle("/debug/vars", expvar.Handler())
	return mux
}

// realDiffCase is a raw exchange whose answers are compared after norm
// (nil: Date set aside only).
type realDiffCase struct {
	name  string
	steps []rawStep
	norm  func([]byte) []byte
}

// multipartBoundary is a boundary of mime/multipart's Writer (random).
var multipartBoundary = regexp.MustCompile(`[0-9a-f]{60}`)

// semanticOnly compares parsed responses: for answers whose chunk sizes
// depend on timing.
func semanticOnly(b []byte) []byte { return []byte(semantic(b)) }

func normBoundary(b []byte) []byte { return multipartBoundary.ReplaceAll(b, []byte("<boundary>")) }

func rawReq(method, target string, lines ...string) string {
	return method + " " + target + " HTTP/1.1\r\n" + hostH + strings.Join(lines, "") + "\r\n"
}

func realCases(e *realEnv) []realDiffCase {
	lm := diffModTime.Format(http.TimeFormat)
	before := diffModTime.Add(-time.Hour).Format(http.TimeFormat)
	one := func(name, req string) realDiffCase { return realDiffCase{name: name, steps: []rawStep{{send: req}}} }
	cs := []realDiffCase{
		one("fs-small", get("/files/small.txt")),
		one("fs-html-sniff", get("/files/page.html")),
		one("fs-head", head("/files/small.txt")),
		one("fs-dir-listing", get("/files/sub/")),
		one("fs-dir-redirect", get("/files/sub")),
		one("fs-index-redirect", get("/files/sub/index.html")),
		one("fs-404", get("/files/nope.txt")),
		one("fs-dotdot", get("/files/../../etc/passwd")),
		one("fs-big", get("/files/big.bin")),
		one("fs-big-head", head("/files/big.bin")),
		one("fs-range", rawReq("GET", "/files/big.bin", "Range: bytes=1000-1999\r\n")),
		one("fs-range-suffix", rawReq("GET", "/files/big.bin", "Range: bytes=-100\r\n")),
		one("fs-range-open", rawReq("GET", "/files/big.bin", "Range: bytes=6291000-\r\n")),
		one("fs-range-big", rawReq("GET", "/files/big.bin", "Range: bytes=100-3000099\r\n")),
		{name: "fs-multirange", steps: []rawStep{{send: rawReq("GET", "/files/big.bin", "Range: bytes=0-9,100-109,-5\r\n")}}, norm: normBoundary},
		{name: "fs-multirange-big", steps: []rawStep{{send: rawReq("GET", "/files/big.bin", "Range: bytes=0-999999,2000000-3999999\r\n")}}, norm: normBoundary},
		one("fs-range-unsatisfiable", rawReq("GET", "/files/big.bin", "Range: bytes=99999999-\r\n")),
		one("fs-range-bad", rawReq("GET", "/files/small.txt", "Range: bytes=z-3\r\n")),
		one("fs-ims-304", rawReq("GET", "/files/small.txt", "If-Modified-Since: "+lm+"\r\n")),
		one("fs-ims-200", rawReq("GET", "/files/small.txt", "If-Modified-Since: "+before+"\r\n")),
		one("fs-ius-412", rawReq("GET", "/files/small.txt", "If-Unmodified-Since: "+before+"\r\n")),
		one("fs-ims-head-304", rawReq("HEAD", "/files/big.bin", "If-Modified-Since: "+lm+"\r\n")),
		one("fs-post", post("/files/small.txt", "ignored")),
		one("servefile", get("/servefile?f=small.txt")),
		one("servefile-range", rawReq("GET", "/servefile?f=big.bin", "Range: bytes=5-14\r\n")),
		one("servefile-dir", get("/servefile?f=sub")),
		one("content-big", get("/content")),
		one("content-inm-304", rawReq("GET", "/content", "If-None-Match: \"big-v1\"\r\n")),
		one("content-inm-star", rawReq("GET", "/content", "If-None-Match: *\r\n")),
		one("content-inm-other", rawReq("GET", "/content", "If-None-Match: \"v0\"\r\n", "Range: bytes=0-3\r\n")),
		one("content-if-match-412", rawReq("GET", "/content", "If-Match: \"v0\"\r\n")),
		one("content-if-range-match", rawReq("GET", "/content", "Range: bytes=10-19\r\n", "If-Range: \"big-v1\"\r\n")),
		one("content-if-range-stale", rawReq("GET", "/content?n=1", "Range: bytes=10-19\r\n", "If-Range: \"big-v0\"\r\n")),
		one("content-if-range-date", rawReq("GET", "/content", "Range: bytes=10-19\r\n", "If-Range: "+lm+"\r\n")),
		one("content-head", head("/content")),
		one("content-weak-inm", rawReq("GET", "/content-strings", "If-None-Match: W/\"s1\"\r\n")),
		one("content-strings", get("/content-strings")),
		{name: "content-keepalive-ranges", steps: []rawStep{
			{send: rawReq("GET", "/content", "Range: bytes=0-9\r\n") + rawReq("HEAD", "/content") + rawReq("GET", "/content", "Range: bytes=-10\r\n")},
		}},
		one("readerfrom", get("/readerfrom")),
		one("copy-small", get("/copy?f=small.txt")),
		one("copy-mid", get("/copy?f=mid.txt")),
		one("copy-mid-head", head("/copy?f=mid.txt")),
		one("copy-html", get("/copy?f=page.html")),
		one("copy-big", get("/copy?f=big.bin")),
		one("copyn-700", get("/copy?f=big.bin&n=700")),
		one("copyn-5000", get("/copy?f=big.bin&n=5000")),
		one("http10-file", "GET /files/small.txt HTTP/1.0\r\n\r\n"),
		one("http10-file-keepalive", "GET /files/small.txt HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"+"HEAD /files/big.bin HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"),
		one("http10-range", "GET /files/big.bin HTTP/1.0\r\nRange: bytes=5-9\r\n\r\n"),
		one("http10-copy-mid", "GET /copy?f=mid.txt HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"),
		one("http10-proxy-chunked", "GET /proxy/chunked HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"),
		one("http10-proxy-trailers", "GET /proxy/trailers HTTP/1.0\r\n\r\n"),
		one("http10-timeout", "GET /timeout?d=1ms HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"),
		one("proxy-headers", rawReq("GET", "/proxy/headers?q=1", "X-Custom: a\r\n", "Connection: x-hop\r\n", "X-Hop: drop me\r\n", "Te: trailers\r\n")),
		one("proxy-post", post("/proxy/headers", "posted body")),
		one("proxy-post-chunked", postChunked("/proxy/headers", "abc", "defgh")),
		// The proxy's chunks are the pieces it happened to read together.
		{name: "proxy-chunked", steps: []rawStep{{send: get("/proxy/chunked")}}, norm: semanticOnly},
		one("proxy-length", get("/proxy/length")),
		one("proxy-trailers", get("/proxy/trailers")),
		one("sproxy-trailers", get("/sproxy/trailers")),
		one("proxy-status-204", get("/proxy/status?code=204")),
		one("proxy-status-304", get("/proxy/status?code=304")),
		one("proxy-status-500", get("/proxy/status?code=500")),
		one("proxy-head", head("/proxy/length")),
		one("proxy-big", get("/proxy/big")),
		{name: "proxy-big-range", steps: []rawStep{{send: rawReq("GET", "/proxy/big", "Range: bytes=0-9,50-59\r\n")}}, norm: normBoundary},
		one("proxy-down-502", get("/downproxy/x")),
		{name: "proxy-upgrade", steps: []rawStep{
			{send: rawReq("GET", "/proxy/upgrade", "Connection: Upgrade\r\n", "Upgrade: echo\r\n")},
			{waitFor: "\r\n\r\n"},
			{send: "ping\n"},
			{waitFor: "echo: ping\n"},
			{send: "pong\n"},
			{waitFor: "echo: pong\n"},
		}},
		one("proxy-upgrade-refused", rawReq("GET", "/proxy/upgrade", "Connection: Upgrade\r\n", "Upgrade: other\r\n")),
		one("timeout-fast", get("/timeout?d=1ms")),
		one("timeout-slow", get("/timeout?d=5s")),
		one("timeout-head", head("/timeout?d=1ms")),
		one("strip", get("/strip/a/b/c")),
		one("strip-escaped", get("/strip/a/b%2Fc")),
		one("strip-miss", get("/strip/x")),
		one("maxbytes-under", post("/maxbytes", "short")),
		one("maxbytes-handler-413", post("/maxbytes", strings.Repeat("x", 100))),
		one("pprof-cmdline", get("/debug/pprof/cmdline")),
		one("pprof-symbol-get", get("/debug/pprof/symbol")),
		one("pprof-unknown", get("/debug/pprof/nosuch")),
	}
	return cs
}

// TestRealHandlersDifferential: each case's raw request to both servers,
// the answers compared byte for byte (Date set aside, multipart
// boundaries too where the case says so), and how the connection ended.
func TestRealHandlersDifferential(t *testing.T) {
	e := newRealEnv(t)
	var logs [2]logLines
	var mu sync.Mutex
	states := [2]map[net.Conn][]string{{}, {}} // by connection (client ports get reused)
	s := startDiffServersOpts(t, e.handler(t), diffOpts{
		stdLog: log.New(&logs[0], "", 0),
		urLog:  log.New(&logs[1], "", 0),
		connState: func(uring bool, c net.Conn, st http.ConnState) {
			i := 0
			if uring {
				i = 1
			}
			mu.Lock()
			states[i][c] = append(states[i][c], st.String())
			mu.Unlock()
		},
	})
	defer s.stop()
	cases := realCases(e)
	type outcome struct {
		std, ur rawResult
		err     error
	}
	results := make([]outcome, len(cases))
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i, c := range cases {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r := &results[i]
			r.std, r.ur, r.err = exchangeBoth(s, diffCase{name: c.name, steps: c.steps})
		}()
	}
	wg.Wait()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := results[i]
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.std.waited || r.ur.waited {
				t.Errorf("a wait step timed out: net/http %v, uringhttp %v", r.std.waited, r.ur.waited)
			}
			if c.norm != nil {
				r.std.out, r.ur.out = c.norm(r.std.out), c.norm(r.ur.out)
			}
			if os.Getenv("URINGHTTP_DIFF_DUMP") != "" {
				t.Logf("net/http %s:\n%s", r.std.end, clip(normalize(r.std.out)))
			}
			checkCase(t, c.name, r.std, r.ur)
		})
	}
	// Every connection's ConnState sequence, as multisets (the cases ran
	// a few at a time), and the ErrorLog lines.
	seqs := func() (out [2][]string) {
		mu.Lock()
		defer mu.Unlock()
		for i := range 2 {
			for _, q := range states[i] {
				out[i] = append(out[i], strings.Join(q, " "))
			}
			slices.Sort(out[i])
		}
		return out
	}
	relWait(5*time.Second, func() bool {
		q := seqs()
		for i := range 2 {
			for _, one := range q[i] {
				if !strings.HasSuffix(one, "closed") && !strings.HasSuffix(one, "hijacked") {
					return false
				}
			}
		}
		return true
	})
	q := seqs()
	// The documented difference of maxbytes-handler-413: net/http closes
	// that connection after the answer, uringhttp keeps it (then the
	// client closes it idle).
	if i := slices.Index(q[0], "new active closed"); i >= 0 {
		q[0][i] = "new active idle closed"
		slices.Sort(q[0])
	}
	if !slices.Equal(q[0], q[1]) {
		t.Errorf("ConnState sequences:\n net/http:  %q\n uringhttp: %q", q[0], q[1])
	}
	if a, b := normLog(logs[0].take()), normLog(logs[1].take()); a != b {
		t.Errorf("ErrorLog:\n net/http:  %q\n uringhttp: %q", a, b)
	}
}

// realGet is an http.Client GET; it returns status, headers without Date
// and the body.
func realGet(c *http.Client, u string, hdr ...string) (string, error) {
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		return "", err
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	resp.Header.Del("Date")
	b = normBoundary(b)
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s\n", resp.Status)
	writeSorted(&sb, "h", resp.Header)
	fmt.Fprintf(&sb, "body %d %x\n", len(b), sha256.Sum256(b))
	writeSorted(&sb, "t", resp.Trailer)
	return sb.String(), nil
}

// TestRealHandlersHTTPClient drives both servers with Go's http.Client,
// many goroutines at once over keep-alive connections (and without
// keep-alive), and compares every answer with net/http's; with
// keep-alive, uringhttp must not need more connections than the
// transport's MaxConnsPerHost, and without it one per request.
func TestRealHandlersHTTPClient(t *testing.T) {
	e := newRealEnv(t)
	var conns [2]atomic.Int64
	s := startDiffServersOpts(t, e.handler(t), diffOpts{connState: func(uring bool, c net.Conn, st http.ConnState) {
		if st == http.StateNew {
			i := 0
			if uring {
				i = 1
			}
			conns[i].Add(1)
		}
	}})
	defer s.stop()
	type req struct {
		path string
		hdr  []string
	}
	reqs := []req{
		{"/files/small.txt", nil},
		{"/files/big.bin", []string{"Range", "bytes=100-200099"}},
		{"/files/big.bin", []string{"Range", "bytes=0-9,20-29"}},
		{"/files/small.txt", []string{"If-Modified-Since", diffModTime.Format(http.TimeFormat)}},
		{"/content", []string{"If-None-Match", `"big-v1"`}},
		{"/proxy/chunked", nil},
		{"/proxy/trailers", nil},
		{"/sproxy/length", nil},
		{"/strip/a/zz", nil},
		{"/timeout?d=1ms", nil},
		{"/files/sub/", nil},
	}
	norm := func(s string) string { return string(normBoundary([]byte(s))) }
	for _, keep := range []bool{true, false} {
		t.Run(fmt.Sprintf("keepalive=%v", keep), func(t *testing.T) {
			const maxConns, workers, rounds = 8, 32, 6
			results := [2]map[string]string{{}, {}}
			for i, addr := range []string{s.std, s.uring} {
				conns[i].Store(0)
				tr := &http.Transport{MaxConnsPerHost: maxConns, MaxIdleConnsPerHost: maxConns, DisableKeepAlives: !keep, DisableCompression: true}
				c := &http.Client{Transport: tr, Timeout: 20 * time.Second}
				var mu sync.Mutex
				var wg sync.WaitGroup
				errs := make(chan error, workers)
				for w := range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for r := range rounds {
							q := reqs[(w+r)%len(reqs)]
							got, err := realGet(c, "http://"+addr+q.path, q.hdr...)
							if err != nil {
								errs <- err
								return
							}
							key := q.path + " " + strings.Join(q.hdr, " ")
							mu.Lock()
							if prev, ok := results[i][key]; ok && norm(prev) != norm(got) {
								errs <- fmt.Errorf("%s: two answers differ:\n%s\n%s", key, prev, got)
							}
							results[i][key] = got
							mu.Unlock()
						}
					}()
				}
				wg.Wait()
				tr.CloseIdleConnections()
				close(errs)
				for err := range errs {
					t.Errorf("server %d: %v", i, err)
				}
			}
			for k, std := range results[0] {
				if ur := results[1][k]; norm(ur) != norm(std) {
					t.Errorf("%s:\n net/http:  %s\n uringhttp: %s", k, std, ur)
				}
			}
			n := int64(workers * rounds)
			t.Logf("connections: net/http %d, uringhttp %d (requests %d)", conns[0].Load(), conns[1].Load(), n)
			if keep && conns[1].Load() > maxConns {
				t.Errorf("uringhttp got %d connections, the transport allows %d", conns[1].Load(), maxConns)
			}
			if !keep && conns[1].Load() != n {
				t.Errorf("uringhttp got %d connections for %d requests without keep-alive", conns[1].Load(), n)
			}
		})
	}
}

// realSend dials addr, sends req and returns the connection and a reader.
func realSend(t *testing.T, addr, req string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	return c, bufio.NewReader(c)
}

// readUntil reads from br until the bytes read end with want.
func readUntil(br *bufio.Reader, want string) (string, error) {
	var sb strings.Builder
	for !strings.HasSuffix(sb.String(), want) {
		b, err := br.ReadByte()
		if err != nil {
			return sb.String(), err
		}
		sb.WriteByte(b)
	}
	return sb.String(), nil
}

// TestRealHandlersStreamingProxy: through httputil.ReverseProxy (its
// FlushInterval -1, and the default, which streams a response of unknown
// length), the backend's first piece reaches the client while the backend
// still holds the rest, and the whole answer matches net/http's.
func TestRealHandlersStreamingProxy(t *testing.T) {
	e := newRealEnv(t)
	s := startDiffServers(t, e.handler(t), 0)
	defer s.stop()
	for _, prefix := range []string{"/sproxy", "/proxy"} {
		t.Run(strings.TrimPrefix(prefix, "/"), func(t *testing.T) {
			var outs [2]string
			for i, addr := range []string{s.std, s.uring} {
				id := fmt.Sprintf("%s-%d-%d", prefix, i, time.Now().UnixNano())
				c, br := realSend(t, addr, get(prefix+"/stream?id="+id))
				first, err := readUntil(br, "first;\r\n")
				if err != nil {
					c.Close()
					t.Fatalf("server %d: the first piece did not come while the backend waited: %q %v", i, first, err)
				}
				close(e.gate(id))
				rest, err := readUntil(br, "0\r\n\r\n")
				c.Close()
				if err != nil {
					t.Fatalf("server %d: %q %v", i, rest, err)
				}
				outs[i] = string(normalize([]byte(first + rest)))
			}
			if outs[0] != outs[1] {
				t.Errorf("net/http:\n%q\nuringhttp:\n%q", outs[0], outs[1])
			}
		})
	}
}

// TestRealHandlersSSE: a server-sent-events handler flushing an event
// every 20 ms until its request's context ends; the client reads three
// events and goes away. The events are framed alike, and both servers
// cancel the context soon after the client left.
func TestRealHandlersSSE(t *testing.T) {
	type done struct {
		uring bool
		err   error
		werr  error
	}
	ended := make(chan done, 2)
	var which connServers // the handler's server, by the client's address
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		fl := w.(http.Flusher)
		var werr error
		for i := 0; ; i++ {
			select {
			case <-r.Context().Done():
				u := which.uring(r)
				ended <- done{u, r.Context().Err(), werr}
				return
			case <-time.After(20 * time.Millisecond):
			}
			if _, err := fmt.Fprintf(w, "id: %d\ndata: tick %d\n\n", i, i); err != nil && werr == nil {
				werr = err
			}
			fl.Flush()
		}
	})
	s := startDiffServersOpts(t, h, diffOpts{connState: which.note})
	defer s.stop()
	var outs [2]string
	for i, addr := range []string{s.std, s.uring} {
		c, br := realSend(t, addr, get("/events"))
		got, err := readUntil(br, "data: tick 2\n\n\r\n")
		c.Close()
		if err != nil {
			t.Fatalf("server %d: %q %v", i, got, err)
		}
		outs[i] = string(normalize([]byte(got)))
		left := time.Now()
		select {
		case d := <-ended:
			t.Logf("uring=%v: context %v %v after the client left (write error %v)", d.uring, d.err, time.Since(left).Round(time.Millisecond), d.werr)
			if d.uring != (i == 1) || d.err != context.Canceled {
				t.Errorf("server %d: handler ended with %+v", i, d)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("server %d: the handler's context was not cancelled 5 s after the client left", i)
		}
	}
	if outs[0] != outs[1] {
		t.Errorf("net/http:\n%q\nuringhttp:\n%q", outs[0], outs[1])
	}
}

// logLines collects an ErrorLog's lines.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.lines = append(l.lines, string(p))
	l.mu.Unlock()
	return len(p), nil
}

func (l *logLines) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.lines
	l.lines = nil
	return out
}

var (
	portRE      = regexp.MustCompile(`127\.0\.0\.1:\d+`)
	goroutineRE = regexp.MustCompile(`(?s)\ngoroutine \d+ .*`)
)

// normLog keeps what a log line says: its first line with the client's
// port set aside (a panic's stack trace differs between the servers).
func normLog(lines []string) string {
	var out []string
	for _, l := range lines {
		l = goroutineRE.ReplaceAllString(l, "\n<stack>")
		out = append(out, portRE.ReplaceAllString(l, "127.0.0.1:<port>"))
	}
	return strings.Join(out, "")
}

// misbehave is a handler doing what handlers should not: panics, writes
// after Hijack, a second WriteHeader, a bad Content-Length, reading the
// body after the response was sent.
func misbehave(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/panic":
		panic("boom")
	case "/panic-error":
		panic(fmt.Errorf("wrapped: %w", io.ErrUnexpectedEOF))
	case "/abort":
		io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	case "/abort-before":
		panic(http.ErrAbortHandler)
	case "/panic-after-flush":
		io.WriteString(w, "sent")
		w.(http.Flusher).Flush()
		panic("late boom")
	case "/hijack-then-write":
		c, brw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		_, werr := w.Write([]byte("lost"))
		w.WriteHeader(500)
		_, ferr := fmt.Fprint(w, "")
		_, _, herr := w.(http.Hijacker).Hijack()
		_, rerr := io.ReadAll(r.Body)
		body := fmt.Sprintf("write=%v hijack=%v empty=%v body=%v", werr, herr, ferr, rerr)
		fmt.Fprintf(brw, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
		brw.Flush()
		c.Close()
	case "/panic-after-hijack":
		c, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n")
		c.Close()
		panic("after hijack")
	case "/twice":
		w.WriteHeader(201)
		w.WriteHeader(202)
	case "/bad-cl":
		w.Header().Set("Content-Length", "x1")
		io.WriteString(w, "body")
	case "/body-after":
		// Read the body after the response's head was sent.
		if r.URL.Query().Get("duplex") != "" {
			if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
				fmt.Fprintf(w, "duplex: %v;", err)
			}
		}
		io.WriteString(w, "head sent;")
		w.(http.Flusher).Flush()
		b, err := io.ReadAll(r.Body)
		fmt.Fprintf(w, "read %d err=%v", len(b), err)
	case "/replaced-unread":
		// The body replaced by a limiting reader and not read: the server
		// drains the original.
		r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		io.WriteString(w, "replaced, unread")
	case "/body-after-return":
		// The body is read by a goroutine after ServeHTTP returned.
		io.WriteString(w, "bye")
	case "/ok":
		io.WriteString(w, "ok")
	}
}

// TestRealHandlersMisbehaving: panics (plain, an error, after a flush,
// http.ErrAbortHandler, after Hijack), writes after Hijack, a second
// WriteHeader, a bad Content-Length, the body read after the response
// was flushed (small, over net/http's 256 KiB discard, chunked, full
// duplex): the bytes, how the connection ends, the ConnState sequence
// and the ErrorLog lines (the client's port and a panic's stack set
// aside) match net/http's.
func TestRealHandlersMisbehaving(t *testing.T) {
	var logs [2]logLines
	var mu sync.Mutex
	states := map[bool][]string{}
	s := startDiffServersOpts(t, http.HandlerFunc(misbehave), diffOpts{
		stdLog: log.New(&logs[0], "", 0),
		urLog:  log.New(&logs[1], "", 0),
		connState: func(uring bool, c net.Conn, st http.ConnState) {
			mu.Lock()
			states[uring] = append(states[uring], st.String())
			mu.Unlock()
		},
	})
	defer s.stop()
	big := strings.Repeat("b", 300<<10)
	cases := []diffCase{
		{name: "panic", req: get("/panic")},
		{name: "panic-error", req: get("/panic-error")},
		{name: "abort", req: get("/abort")},
		{name: "abort-before", req: get("/abort-before")},
		{name: "panic-after-flush", req: get("/panic-after-flush")},
		{name: "hijack-then-write", req: get("/hijack-then-write")},
		{name: "panic-after-hijack", req: get("/panic-after-hijack")},
		{name: "twice", req: get("/twice")},
		{name: "bad-cl", req: get("/bad-cl")},
		{name: "body-after-small", req: post("/body-after", "0123456789") + get("/ok")},
		{name: "body-after-big", req: post("/body-after", big) + get("/ok")},
		{name: "body-after-chunked", req: postChunked("/body-after", "abc", "defg") + get("/ok")},
		{name: "body-after-duplex", req: post("/body-after?duplex=1", "0123456789") + get("/ok")},
		{name: "body-after-duplex-big", req: post("/body-after?duplex=1", big) + get("/ok")},
		{name: "body-unread-big", req: post("/ok", big) + get("/ok")},
		{name: "replaced-unread", req: post("/replaced-unread", "0123456789") + get("/ok")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mu.Lock()
			states = map[bool][]string{}
			mu.Unlock()
			logs[0].take()
			logs[1].take()
			std, ur, err := exchangeBoth(s, c)
			if err != nil {
				t.Fatal(err)
			}
			checkSame(t, std, ur)
			relWait(5*time.Second, func() bool {
				mu.Lock()
				defer mu.Unlock()
				for _, u := range []bool{false, true} {
					q := states[u]
					if len(q) == 0 || (q[len(q)-1] != "closed" && q[len(q)-1] != "hijacked") {
						return false
					}
				}
				return true
			})
			time.Sleep(50 * time.Millisecond) // a log line written after the connection's end
			mu.Lock()
			a, b := strings.Join(states[false], " "), strings.Join(states[true], " ")
			mu.Unlock()
			if a != b {
				t.Errorf("ConnState: net/http %q, uringhttp %q", a, b)
			}
			la, lb := normLog(logs[0].take()), normLog(logs[1].take())
			if la != lb {
				t.Errorf("ErrorLog:\n net/http:  %q\n uringhttp: %q", la, lb)
			}
		})
	}
}

// TestRealHandlersFlushAfterHijack: Flush (through
// http.ResponseController) after Hijack returns http.ErrHijacked, where
// net/http's dereferences a nil buffer and panics (a documented
// difference).
func TestRealHandlersFlushAfterHijack(t *testing.T) {
	s := startUring(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, brw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		ferr := http.NewResponseController(w).Flush()
		body := fmt.Sprintf("flush=%v", ferr)
		fmt.Fprintf(brw, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
		brw.Flush()
	}), nil)
	res, err := rawExchange(s.addr, []rawStep{{send: get("/")}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "flush=" + http.ErrHijacked.Error(); !strings.HasSuffix(string(res.out), want) {
		t.Errorf("got %q, want it to end with %q", res.out, want)
	}
}

// TestRealHandlersPprofExpvar: net/http/pprof's index, a 1 s CPU profile
// and a 1 s trace on servers whose WriteTimeout is 500 ms (the handlers
// push the write deadline past it through http.ResponseController, having
// read WriteTimeout from the *http.Server in the request's context), and
// expvar's handler. Their
// bodies hold counters that move, so the status, the headers and the
// shape of the bodies are compared.
func TestRealHandlersPprofExpvar(t *testing.T) {
	e := newRealEnv(t)
	s := startDiffServersOpts(t, e.handler(t), diffOpts{writeTimeout: 500 * time.Millisecond})
	defer s.stop()
	digits := regexp.MustCompile(`[0-9]+`)
	fetch := func(t *testing.T, addr, path string) (*http.Response, []byte) {
		t.Helper()
		c := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableCompression: true}}
		resp, err := c.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		resp.Header.Del("Date")
		return resp, b
	}
	head := func(resp *http.Response, keep ...string) string {
		var sb strings.Builder
		fmt.Fprintf(&sb, "%s\n", resp.Status)
		h := resp.Header.Clone()
		for _, k := range keep {
			h.Del(k)
		}
		writeSorted(&sb, "h", h)
		return sb.String()
	}
	t.Run("index", func(t *testing.T) {
		r0, b0 := fetch(t, s.std, "/debug/pprof/")
		r1, b1 := fetch(t, s.uring, "/debug/pprof/")
		if a, b := head(r0, "Content-Length"), head(r1, "Content-Length"); a != b {
			t.Errorf("net/http:\n%s\nuringhttp:\n%s", a, b)
		}
		if a, b := digits.ReplaceAll(b0, []byte("N")), digits.ReplaceAll(b1, []byte("N")); !bytes.Equal(a, b) {
			t.Errorf("index pages differ beyond their counts:\n%s\n%s", a, b)
		}
	})
	t.Run("goroutine-debug1", func(t *testing.T) {
		r0, _ := fetch(t, s.std, "/debug/pprof/goroutine?debug=1")
		r1, _ := fetch(t, s.uring, "/debug/pprof/goroutine?debug=1")
		if a, b := head(r0, "Content-Length"), head(r1, "Content-Length"); a != b {
			t.Errorf("net/http:\n%s\nuringhttp:\n%s", a, b)
		}
	})
	t.Run("profile-1s", func(t *testing.T) {
		// One at a time: the process has one CPU profiler.
		r0, b0 := fetch(t, s.std, "/debug/pprof/profile?seconds=1")
		r1, b1 := fetch(t, s.uring, "/debug/pprof/profile?seconds=1")
		if a, b := head(r0, "Content-Length"), head(r1, "Content-Length"); a != b {
			t.Errorf("net/http:\n%s\nuringhttp:\n%s", a, b)
		}
		if r1.StatusCode != 200 || len(b1) < 2 || b1[0] != 0x1f || b1[1] != 0x8b {
			t.Errorf("uringhttp: %s, %d bytes, not a gzipped profile (net/http: %d bytes)", r1.Status, len(b1), len(b0))
		}
	})
	t.Run("trace-1s", func(t *testing.T) {
		r0, b0 := fetch(t, s.std, "/debug/pprof/trace?seconds=1")
		r1, b1 := fetch(t, s.uring, "/debug/pprof/trace?seconds=1")
		if a, b := head(r0, "Content-Length"), head(r1, "Content-Length"); a != b {
			t.Errorf("net/http:\n%s\nuringhttp:\n%s", a, b)
		}
		if r1.StatusCode != 200 || !bytes.HasPrefix(b1, []byte("go 1.")) {
			t.Errorf("uringhttp: %s, %d bytes, not a trace (net/http: %d bytes)", r1.Status, len(b1), len(b0))
		}
	})
	t.Run("expvar", func(t *testing.T) {
		r0, b0 := fetch(t, s.std, "/debug/vars")
		r1, b1 := fetch(t, s.uring, "/debug/vars")
		if a, b := head(r0, "Content-Length"), head(r1, "Content-Length"); a != b {
			t.Errorf("net/http:\n%s\nuringhttp:\n%s", a, b)
		}
		var m0, m1 map[string]json.RawMessage
		if err := json.Unmarshal(b0, &m0); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b1, &m1); err != nil {
			t.Fatalf("uringhttp: %v in %q", err, b1)
		}
		k0, k1 := slices.Sorted(maps.Keys(m0)), slices.Sorted(maps.Keys(m1))
		if !slices.Equal(k0, k1) {
			t.Errorf("expvar keys: net/http %v, uringhttp %v", k0, k1)
		}
	})
}

// TestRealHandlersDeadlineReplacesServerTimeout: a write (read) deadline
// the handler sets through http.ResponseController replaces the server's
// WriteTimeout (ReadTimeout) for its request, as it replaces net/http's
// connection deadline: net/http/pprof's profile and trace handlers
// lengthen the write deadline so.
func TestRealHandlersDeadlineReplacesServerTimeout(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		switch r.URL.Path {
		case "/write":
			rc.SetWriteDeadline(time.Now().Add(5 * time.Second))
		case "/write-cleared":
			rc.SetWriteDeadline(time.Time{})
		case "/read":
			rc.SetReadDeadline(time.Now().Add(5 * time.Second))
		case "/read-cleared":
			rc.SetReadDeadline(time.Time{})
		}
		if strings.HasPrefix(r.URL.Path, "/write") || r.URL.Path == "/late" {
			time.Sleep(700 * time.Millisecond)
		}
		b, err := io.ReadAll(r.Body) // the last bytes come 400 ms after the head
		fmt.Fprintf(w, "read %q err=%v", b, err)
	})
	steps := func(path string) []rawStep {
		return []rawStep{
			{send: "POST " + path + " HTTP/1.1\r\n" + hostH + "Content-Length: 4\r\n\r\nab"},
			{pause: 400 * time.Millisecond},
			{send: "cd"},
		}
	}
	for _, timeout := range []string{"write", "read"} {
		t.Run(timeout, func(t *testing.T) {
			o := diffOpts{writeTimeout: 200 * time.Millisecond}
			if timeout == "read" {
				o = diffOpts{readTimeout: 200 * time.Millisecond}
			}
			s := startDiffServersOpts(t, h, o)
			defer s.stop()
			cases := []string{"/" + timeout, "/" + timeout + "-cleared"}
			if timeout == "write" {
				cases = append(cases, "/none") // WriteTimeout passes: no answer
			}
			for _, path := range cases {
				std, ur, err := exchangeBoth(s, diffCase{name: path, steps: steps(path)})
				if err != nil {
					t.Fatal(err)
				}
				checkSame(t, std, ur)
			}
			if timeout == "read" {
				// A documented difference: bytes that arrived before
				// ReadTimeout passed are read after it by uringhttp;
				// net/http fails the read of those its connection's
				// buffer had not taken in.
				std, ur, err := exchangeBoth(s, diffCase{name: "late", steps: steps("/late")})
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Contains(std.out, []byte(`read "ab" err=read tcp`)) || !bytes.Contains(std.out, []byte("i/o timeout")) {
					t.Logf("net/http no longer fails the late read: %q", std.out)
				}
				if !bytes.Contains(ur.out, []byte(`read "abcd" err=<nil>`)) {
					t.Errorf("uringhttp: %q, want the 4 bytes that had arrived", ur.out)
				}
			}
		})
	}
}

var abField = regexp.MustCompile(`(?m)^(Complete requests|Failed requests|Non-2xx responses|Keep-Alive requests|Total transferred|HTML transferred|Document Length|Write errors):\s+(.*)$`)

// abStats runs ab and returns the lines that must not depend on the
// server's speed.
func abStats(t *testing.T, args ...string) string {
	t.Helper()
	out, _ := runTool(t, 60*time.Second, "ab", args...)
	var sb strings.Builder
	for _, m := range abField.FindAllStringSubmatch(out, -1) {
		fmt.Fprintf(&sb, "%s: %s\n", m[1], m[2])
	}
	if sb.Len() == 0 {
		t.Fatalf("ab printed no results:\n%s", out)
	}
	return sb.String()
}

// TestRealHandlersApacheBench: ab (an HTTP/1.0 client, with and without
// -k's keep-alive) against the file server, ServeContent, the reverse
// proxy (a chunked upstream, which HTTP/1.0 gets delimited by the close;
// a 50 KB POST) and TimeoutHandler on both servers: the same counts of requests,
// failures, keep-alive reuses and bytes.
func TestRealHandlersApacheBench(t *testing.T) {
	needTool(t, "ab", "apache2-utils")
	e := newRealEnv(t)
	s := startDiffServers(t, e.handler(t), 0)
	defer s.stop()
	for _, path := range []string{"/files/small.txt", "/files/mid.txt", "/content-strings", "/proxy/length", "/proxy/chunked", "/timeout?d=1ms", "/files/sub", "/proxy/sha"} {
		for _, keep := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/k=%v", strings.TrimPrefix(path, "/"), keep), func(t *testing.T) {
				args := []string{"-q", "-n", "200", "-c", "8", "-s", "20"}
				if keep {
					args = append(args, "-k")
				}
				if path == "/proxy/sha" {
					up := filepath.Join(t.TempDir(), "post.bin")
					os.WriteFile(up, bytes.Repeat([]byte("post body "), 5000), 0o644)
					args = append(args, "-p", up, "-T", "application/octet-stream")
				}
				a := abStats(t, append(args, "http://"+s.std+path)...)
				b := abStats(t, append(args, "http://"+s.uring+path)...)
				if a != b {
					t.Errorf("net/http:\n%s\nuringhttp:\n%s", a, b)
				}
			})
		}
	}
}

var curlDate = regexp.MustCompile(`(?mi)^date: [^\r\n]*\r?\n`)

// TestRealHandlersCurl: curl against both servers, its output (-i: the
// head as received, the body, trailers) compared once Date and multipart
// boundaries are set aside.
func TestRealHandlersCurl(t *testing.T) {
	needTool(t, "curl", "curl")
	e := newRealEnv(t)
	s := startDiffServers(t, e.handler(t), 0)
	defer s.stop()
	upload := filepath.Join(t.TempDir(), "up.txt")
	os.WriteFile(upload, bytes.Repeat([]byte("upload "), 3000), 0o644)
	lm := diffModTime.Format(http.TimeFormat)
	cases := []struct {
		name string
		args []string
		path string
	}{
		{"multirange", []string{"-r", "0-9,20-29"}, "/files/big.bin"},
		{"range", []string{"-r", "100-199"}, "/files/big.bin"},
		{"head", []string{"-I"}, "/files/small.txt"},
		{"ims", []string{"-z", lm}, "/files/small.txt"},
		{"etag", []string{"-H", `If-None-Match: "big-v1"`}, "/content"},
		{"http10-chunked-upstream", []string{"--http1.0"}, "/proxy/chunked"},
		{"http10-file", []string{"--http1.0"}, "/files/mid.txt"},
		{"trailers", []string{"--raw"}, "/proxy/trailers"},
		{"chunked-upload-proxy", []string{"-H", "Transfer-Encoding: chunked", "--data-binary", "@" + upload}, "/proxy/headers"},
		{"upload-proxy-expect", []string{"-H", "Expect: 100-continue", "--data-binary", "@" + upload}, "/proxy/headers"},
		{"redirect", nil, "/files/sub"},
		{"dir", nil, "/files/sub/"},
		{"timeout", nil, "/timeout?d=5s"},
		{"copy-mid", []string{"--raw"}, "/copy?f=mid.txt"},
		{"keepalive-two", []string{"--next", "-sS", "-i", "-r", "0-4"}, "/files/small.txt"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var outs [2]string
			for i, addr := range []string{s.std, s.uring} {
				args := append([]string{"-sS", "-i", "--max-time", "20"}, c.args...)
				if c.name == "keepalive-two" {
					// Two transfers, the second on the first's connection.
					args = []string{"-sS", "-i", "--max-time", "20", "http://" + addr + c.path, "--next", "-sS", "-i", "-r", "0-4", "http://" + addr + c.path}
				} else {
					args = append(args, "http://"+addr+c.path)
				}
				o, _ := runTool(t, 30*time.Second, "curl", args...)
				o = curlDate.ReplaceAllString(o, "Date: <date>\r\n")
				o = string(normBoundary([]byte(o)))
				o = portRE.ReplaceAllString(o, "127.0.0.1:<port>")
				outs[i] = o
			}
			if outs[0] != outs[1] {
				t.Errorf("net/http:\n%q\nuringhttp:\n%q", outs[0], outs[1])
			}
		})
	}
}

// TestRealHandlersLargeFileStreams: a 64 MiB file served by
// http.ServeFile to a client that stops reading after 1 MiB is not held
// in the server's memory (the handler's copy waits while the connection's
// output queue is full), and arrives whole once the client reads on.
func TestRealHandlersLargeFileStreams(t *testing.T) {
	const size = 64 << 20
	p := filepath.Join(t.TempDir(), "huge.bin")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte(i * 13)
	}
	for range size / len(chunk) {
		f.Write(chunk)
	}
	f.Close()
	var sawReaderFrom atomic.Bool
	s := startUring(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, ok := w.(io.ReaderFrom)
		sawReaderFrom.Store(ok)
		http.ServeFile(w, r, p)
	}), nil)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	c, br := realSend(t, s.addr, get("/huge.bin"))
	defer c.Close()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ContentLength != size {
		t.Fatalf("Content-Length %d, want %d", resp.ContentLength, size)
	}
	h := sha256.New()
	if _, err := io.CopyN(h, resp.Body, 1<<20); err != nil {
		t.Fatal(err)
	}
	// The client stops reading: the server fills the socket and its
	// output queue, then its handler waits.
	var peak uint64
	for range 10 {
		time.Sleep(50 * time.Millisecond)
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
	}
	n, err := io.Copy(h, resp.Body)
	if err != nil || n != size-1<<20 {
		t.Fatalf("read %d more bytes, %v", n, err)
	}
	want := sha256.New()
	for range size / len(chunk) {
		want.Write(chunk)
	}
	if !bytes.Equal(h.Sum(nil), want.Sum(nil)) {
		t.Errorf("the file arrived changed")
	}
	grew := int64(peak) - int64(base)
	t.Logf("heap in use grew by %.1f MiB while the client did not read (file %d MiB); ResponseWriter is an io.ReaderFrom: %v", float64(grew)/(1<<20), size>>20, sawReaderFrom.Load())
	if grew > 24<<20 {
		t.Errorf("heap grew by %d MiB serving a %d MiB file to a stalled client", grew>>20, size>>20)
	}
	if !sawReaderFrom.Load() {
		t.Errorf("the ResponseWriter is not an io.ReaderFrom (net/http's is)")
	}
}

// TestRealHandlersBodyReadAfterReturn: a goroutine the handler left
// behind reads Request.Body after ServeHTTP returned, while the server
// still drains the body for the next request, or after it did: on both
// servers the read fails with http.ErrBodyReadAfterClose at once, and the
// connection's next request is answered.
func TestRealHandlersBodyReadAfterReturn(t *testing.T) {
	late := make(chan string, 2)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/late" {
			b, err := io.ReadAll(r.Body)
			fmt.Fprintf(w, "next read %q %v", b, err)
			return
		}
		body := r.Body
		go func() {
			time.Sleep(200 * time.Millisecond)
			buf := make([]byte, 100)
			start := time.Now()
			n, err := body.Read(buf)
			late <- fmt.Sprintf("late read %q %v (blocked %v)", buf[:n], err, time.Since(start) > time.Second)
		}()
		io.WriteString(w, "bye")
	})
	s := startDiffServers(t, h, 0)
	defer s.stop()
	head := "POST /late HTTP/1.1\r\n" + hostH + "Content-Length: 3\r\n\r\n"
	for _, c := range []diffCase{
		{name: "while-draining", steps: []rawStep{{send: head}, {pause: 600 * time.Millisecond}, {send: "abc" + post("/next", "NEXT")}}},
		{name: "after-draining", steps: []rawStep{{send: head + "abc"}, {waitFor: "bye"}, {pause: 400 * time.Millisecond}, {send: post("/next", "NEXT")}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var outs [2]rawResult
			var reads [2]string
			for i, addr := range []string{s.std, s.uring} {
				res, err := rawExchange(addr, c.steps)
				if err != nil {
					t.Fatal(err)
				}
				outs[i] = res
				select {
				case reads[i] = <-late:
				case <-time.After(10 * time.Second):
					t.Fatalf("server %d: the late read did not return", i)
				}
			}
			checkSame(t, outs[0], outs[1])
			if reads[0] != reads[1] {
				t.Errorf("net/http: %s\nuringhttp: %s", reads[0], reads[1])
			}
		})
	}
}

// TestRealHandlersRegisterOnShutdown: a server-sent-events stream that
// ends when the server's RegisterOnShutdown hook fires, as such handlers
// are written for net/http: Shutdown calls the hook, the stream ends, the
// client sees the end, and Shutdown returns.
func TestRealHandlersRegisterOnShutdown(t *testing.T) {
	stop := make(chan struct{})
	var once sync.Once
	s := startUring(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; ; i++ {
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
			select {
			case <-stop:
				io.WriteString(w, "event: bye\ndata: server going away\n\n")
				return
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}), nil)
	s.srv.RegisterOnShutdown(func() { once.Do(func() { close(stop) }) })
	c, br := realSend(t, s.addr, get("/events"))
	defer c.Close()
	if _, err := readUntil(br, "data: 1\n\n"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Shutdown(ctx) }()
	if got, err := readUntil(br, "data: server going away\n\n\r\n0\r\n\r\n"); err != nil {
		t.Fatalf("the stream did not end with its goodbye: %q %v", got, err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// TestRealHandlersProxyUpload: a 16 MiB upload, of known length and
// chunked, streamed through httputil.ReverseProxy to the backend by both
// servers: the backend sees the same bytes and framing.
func TestRealHandlersProxyUpload(t *testing.T) {
	e := newRealEnv(t)
	s := startDiffServers(t, e.handler(t), 0)
	defer s.stop()
	data := make([]byte, 16<<20)
	for i := range data {
		data[i] = realBigByte(i)
	}
	c := &http.Client{Timeout: 60 * time.Second}
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			var outs [2]string
			for i, addr := range []string{s.std, s.uring} {
				var body io.Reader = bytes.NewReader(data)
				if chunked {
					body = io.MultiReader(bytes.NewReader(data)) // no length known
				}
				resp, err := c.Post("http://"+addr+"/proxy/sha", "application/octet-stream", body)
				if err != nil {
					t.Fatal(err)
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					t.Fatal(err)
				}
				outs[i] = fmt.Sprintf("%s %s", resp.Status, b)
			}
			if outs[0] != outs[1] {
				t.Errorf("net/http:  %s\nuringhttp: %s", outs[0], outs[1])
			}
			if want := fmt.Sprintf("%d %x <nil>", len(data), sha256.Sum256(data)); !strings.Contains(outs[1], want) {
				t.Errorf("uringhttp: %s, want the backend to read %s", outs[1], want)
			}
		})
	}
}

// TestRealHandlersDownloadClientGone: a client that reads 100 KiB of a
// large file and goes away ends the handler's copy (its write fails) on
// both servers. (Whether the context is cancelled by then is a race on
// net/http, so it is only logged.)
func TestRealHandlersDownloadClientGone(t *testing.T) {
	e := newRealEnv(t)
	type end struct {
		took time.Duration
		ctx  error
	}
	ended := make(chan end, 1)
	fs := http.FileServer(http.Dir(e.dir))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fs.ServeHTTP(w, r)
		ended <- end{ctx: r.Context().Err()}
	})
	s := startDiffServers(t, h, 0)
	defer s.stop()
	for i, addr := range []string{s.std, s.uring} {
		c, br := realSend(t, addr, get("/big.bin"))
		if _, err := io.CopyN(io.Discard, br, 100<<10); err != nil {
			t.Fatal(err)
		}
		c.Close()
		left := time.Now()
		select {
		case e := <-ended:
			t.Logf("server %d: the handler returned %v after the client left; context %v", i, time.Since(left).Round(time.Millisecond), e.ctx)
		case <-time.After(5 * time.Second):
			t.Fatalf("server %d: the handler still copies 5 s after its client left", i)
		}
	}
}

// TestRealHandlersWriteTimeoutSlowDownload: a 6 MiB file to a client that
// stops reading, on servers with a 300 ms WriteTimeout: on both the
// handler returns soon. A documented difference: net/http's deadline is
// on the socket, so its copy fails at the timeout and the client gets
// what the kernel had taken; uringhttp's WriteTimeout bounds the handler's
// writes, and what they queued before it passed (up to the runtime's
// MaxWriteBuffer) is still delivered.
func TestRealHandlersWriteTimeoutSlowDownload(t *testing.T) {
	e := newRealEnv(t)
	returned := make(chan time.Duration, 1)
	fs := http.FileServer(http.Dir(e.dir))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		fs.ServeHTTP(w, r)
		returned <- time.Since(start)
	})
	s := startDiffServersOpts(t, h, diffOpts{writeTimeout: 300 * time.Millisecond})
	defer s.stop()
	for i, addr := range []string{s.std, s.uring} {
		c, br := realSend(t, addr, get("/big.bin"))
		if _, err := io.CopyN(io.Discard, br, 64<<10); err != nil {
			t.Fatal(err)
		}
		var took time.Duration
		select {
		case took = <-returned:
		case <-time.After(10 * time.Second):
			t.Fatalf("server %d: the handler still writes 10 s after a 300 ms WriteTimeout", i)
		}
		c.SetReadDeadline(time.Now().Add(2 * time.Second)) // uringhttp keeps the connection open after the whole answer
		n, err := io.Copy(io.Discard, br)
		c.Close()
		t.Logf("server %d: handler returned after %v; the client got %d more bytes, then %v", i, took.Round(time.Millisecond), n, err)
	}
}
