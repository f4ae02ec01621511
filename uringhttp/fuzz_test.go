package uringhttp_test

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"sync"
	"testing"
	"time"
)

// fuzzHandler answers without echoing the request, so that every status
// line in the output is one the server wrote.
func fuzzHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := 0
		buf := make([]byte, 4096)
		for {
			k, err := r.Body.Read(buf)
			n += k
			if err != nil {
				break
			}
		}
		switch r.URL.Path {
		case "/flush":
			w.Write([]byte("a"))
			w.(http.Flusher).Flush()
			w.Write([]byte("b"))
		case "/empty":
		default:
			fmt.Fprintf(w, "ok %d", n)
		}
	})
}

var statusLine = regexp.MustCompile(`HTTP/1\.[01] (\d{3}) `)

// statuses lists the status codes of the responses in out.
func statuses(out []byte) string {
	var b bytes.Buffer
	for _, m := range statusLine.FindAllSubmatch(out, -1) {
		b.Write(m[1])
		b.WriteByte(' ')
	}
	return b.String()
}

var fuzzServers struct {
	once sync.Once
	s    *diffServers
}

// FuzzServeRaw sends arbitrary bytes to a uringhttp server, then shuts the
// client's writing side, and checks that the server neither panics (a
// handler's or the server's panic fails the process), nor hangs (it
// answers and closes within a deadline), nor allocates without bound;
// where net/http answers the same bytes, the status codes must match
// (URINGHTTP_FUZZ_STATUS=0 leaves that out, to hunt only for panics and
// hangs past a known difference).
func FuzzServeRaw(f *testing.F) {
	for _, c := range diffCases() {
		if b := c.bytesOf(); len(b) <= 64<<10 {
			f.Add(b)
		}
	}
	f.Add([]byte(""))
	f.Add([]byte("\r\n"))
	f.Add([]byte("GET /flush HTTP/1.1\r\nHost: x\r\n\r\n"))
	f.Add([]byte("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1;" + string(bytes.Repeat([]byte("e"), 5000)) + "\r\nx\r\n0\r\n\r\n"))
	// One pair of servers for every input of this process: a fuzz worker
	// runs thousands of inputs.
	s := startDiffServers(f, fuzzHandler(), 0)
	f.Cleanup(s.stop)
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 256<<10 {
			return
		}
		steps := []rawStep{{send: string(in)}, {closeWrite: true}}
		if len(in) == 0 {
			steps = steps[1:]
		}
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		var std, ur rawResult
		var e1, e2 error
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); std, e1 = rawExchange(s.std, steps) }()
		go func() { defer wg.Done(); ur, e2 = rawExchange(s.uring, steps) }()
		wg.Wait()
		runtime.ReadMemStats(&m1)
		if e1 != nil || e2 != nil {
			t.Fatalf("dial: net/http %v, uringhttp %v", e1, e2)
		}
		// Half-closed by the client, both servers must finish and close.
		if !ur.closed() {
			t.Fatalf("uringhttp left the connection open %v after the client's FIN (net/http: %s); it sent %q", diffFirst, std.end, clip(ur.out))
		}
		// Both servers, both clients and the handler together: a bound
		// in proportion to the input, not to what it claims (a
		// Content-Length of 2^62 must not be allocated).
		if grew := m1.TotalAlloc - m0.TotalAlloc; grew > 64<<20+uint64(64*len(in)) {
			t.Fatalf("%d bytes allocated for a %d-byte input", grew, len(in))
		}
		if std.closed() && os.Getenv("URINGHTTP_FUZZ_STATUS") != "0" {
			if a, b := statuses(std.out), statuses(ur.out); a != b {
				t.Fatalf("status codes: net/http %q, uringhttp %q\n net/http:  %s\n uringhttp: %s", a, b, clip(normalize(std.out)), clip(normalize(ur.out)))
			}
		}
	})
}

// TestFuzzHalfCloseBound is FuzzServeRaw's no-hang check with a bound that
// says what hangs: the time from the client's FIN to the server's close.
func TestFuzzHalfCloseBound(t *testing.T) {
	s := startDiffServers(t, fuzzHandler(), 0)
	defer s.stop()
	start := time.Now()
	r, err := rawExchange(s.uring, []rawStep{{send: "GET / HTTP/1.1\r\nHost: x\r\n\r\n"}, {closeWrite: true}})
	if err != nil {
		t.Fatal(err)
	}
	if !r.closed() || time.Since(start) > 2*time.Second {
		t.Fatalf("after a request and the client's FIN: %s after %v, want closed at once; got %q", r.end, time.Since(start), r.out)
	}
}
