package uringrt

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uringrt/uringrt/runtime/experiment"
)

// httpTiers are the net.Conn (callback-free) configurations net/http runs on.
var httpTiers = []struct {
	name string
	cfg  Config
}{
	{"hybrid", Config{Loops: 2}},
	{"ring", Config{Loops: 2, Switches: experiment.Switches{Pollable: experiment.PollRing}}},
	{"locked-loop", Config{Loops: 1, LockedLoops: true}},
}

// echoPath answers GET /p with "hello /p" and POST with its body. It reads
// the whole body before writing: net/http (HTTP/1.x) closes the request body
// once the response header is flushed, which io.Copy(w, r.Body) does after
// 512 bytes when the conn is an io.ReaderFrom (*net.TCPConn or *Conn).
var echoPath = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		w.Header().Set("Content-Type", "application/octet-stream")
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	io.WriteString(w, "hello "+r.URL.Path)
})

// TestHTTPServerKeepAlive: net/http.Server on a uringrt listener serves
// 1,000 requests from net/http's client over a few keep-alive connections.
func TestHTTPServerKeepAlive(t *testing.T) {
	for _, tier := range httpTiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			url, newConns := startHTTP(t, rt, echoPath)
			const clients, requests = 4, 1000
			tr := &http.Transport{MaxIdleConnsPerHost: clients, DisableCompression: true}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
			var wg sync.WaitGroup
			errs := make(chan error, clients)
			for w := 0; w < clients; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					for i := w; i < requests; i += clients {
						if err := oneRequest(client, url, i); err != nil {
							errs <- fmt.Errorf("request %d: %w", i, err)
							return
						}
					}
				}(w)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			// Keep-alive: the requests shared the pool's connections
			// (the Transport may dial a spare when a request races a
			// connection going back to the pool, so allow twice the clients).
			t.Logf("%d requests over %d connections", requests, newConns.Load())
			if n := newConns.Load(); n < 1 || n > 2*clients {
				t.Fatalf("%d connections for %d requests from %d clients: keep-alive not used", n, requests, clients)
			}
		})
	}
}

func oneRequest(client *http.Client, url string, i int) error {
	var resp *http.Response
	var err error
	var want string
	if i%2 == 0 {
		want = fmt.Sprintf("hello /r/%d", i)
		resp, err = client.Get(fmt.Sprintf("%s/r/%d", url, i))
	} else {
		want = strings.Repeat(strconv.Itoa(i), 1+i%700) // up to a few KiB
		resp, err = client.Post(url+"/echo", "application/octet-stream", strings.NewReader(want))
	}
	if err != nil {
		return err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	if string(body) != want {
		return fmt.Errorf("body %q, want %q", body, want)
	}
	return nil
}

// wrkResult is what TestHTTPServerWrk reads from wrk's report.
type wrkResult struct {
	requests                            int64
	connect, read, write, timeout, non2 int64
}

var (
	wrkRequests = regexp.MustCompile(`(?m)^\s*(\d+) requests in `)
	wrkSocket   = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
	wrkNon2xx   = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
)

func parseWrk(out string) (wrkResult, error) {
	var r wrkResult
	m := wrkRequests.FindStringSubmatch(out)
	if m == nil {
		return r, fmt.Errorf("no request count in wrk's output")
	}
	r.requests, _ = strconv.ParseInt(m[1], 10, 64)
	if m := wrkSocket.FindStringSubmatch(out); m != nil {
		for i, p := range []*int64{&r.connect, &r.read, &r.write, &r.timeout} {
			*p, _ = strconv.ParseInt(m[i+1], 10, 64)
		}
	}
	if m := wrkNon2xx.FindStringSubmatch(out); m != nil {
		r.non2, _ = strconv.ParseInt(m[1], 10, 64)
	}
	return r, nil
}

func TestParseWrk(t *testing.T) {
	out := `Running 5s test @ http://127.0.0.1:1/
  2 threads and 100 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.00ms  200.00us   5.00ms   90.00%
    Req/Sec    40.00k     1.00k   45.00k    70.00%
  400123 requests in 5.00s, 50.00MB read
  Socket errors: connect 1, read 2, write 3, timeout 4
  Non-2xx or 3xx responses: 5
Requests/sec:  80024.60
Transfer/sec:     10.00MB
`
	r, err := parseWrk(out)
	want := wrkResult{requests: 400123, connect: 1, read: 2, write: 3, timeout: 4, non2: 5}
	if err != nil || r != want {
		t.Fatalf("parseWrk = %+v, %v; want %+v", r, err, want)
	}
	if _, err := parseWrk("wrk: bad"); err == nil {
		t.Fatal("parseWrk accepted output without a request count")
	}
}

// TestHTTPServerWrk drives the net/http server on uringrt with wrk for 5 s
// at 100 connections: no socket errors, no non-2xx responses. It skips when
// wrk is not installed, unless URINGRT_REQUIRE_WRK=1 (CI).
func TestHTTPServerWrk(t *testing.T) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		if os.Getenv("URINGRT_REQUIRE_WRK") == "1" {
			t.Fatalf("wrk not found and URINGRT_REQUIRE_WRK=1: %v (apt-get install wrk)", err)
		}
		t.Skip("wrk not installed (apt-get install wrk); set URINGRT_REQUIRE_WRK=1 to make this a failure")
	}
	for _, tier := range httpTiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			url, newConns := startHTTP(t, rt, echoPath)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, wrk, "-t2", "-c100", "-d5s", "--timeout", "5s", url+"/wrk")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				t.Fatalf("wrk: %v\n%s", err, out.String())
			}
			r, err := parseWrk(out.String())
			if err != nil {
				t.Fatalf("%v:\n%s", err, out.String())
			}
			t.Logf("wrk: %d requests over %d connections; %+v", r.requests, newConns.Load(), r)
			if r.requests <= 0 {
				t.Errorf("wrk completed no request:\n%s", out.String())
			}
			if r.connect+r.read+r.write+r.timeout > 0 {
				t.Errorf("wrk socket errors: connect %d, read %d, write %d, timeout %d:\n%s", r.connect, r.read, r.write, r.timeout, out.String())
			}
			if r.non2 > 0 {
				t.Errorf("%d non-2xx responses:\n%s", r.non2, out.String())
			}
			// And the server still answers correctly afterwards.
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			if err := oneRequest(&http.Client{Transport: tr, Timeout: 10 * time.Second}, url, 2); err != nil {
				t.Fatalf("after wrk: %v", err)
			}
		})
	}
}
