package uringhttp_test

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
)

// TestDifferentialMalformedAfterValidHalfClose: a malformed request
// pipelined behind a valid one, then the client's half-close. net/http
// always answers the malformed one (400 or 501) after the first response;
// so must uringhttp, however the bytes and the FIN fall into reads and
// however the handler's goroutine and the loop interleave (the answer to
// the malformed request was lost when the FIN's callback closed the
// connection between the serving goroutine's end and its write of that
// answer), so each case runs many times, with handlers on the loop and
// off it.
func TestDifferentialMalformedAfterValidHalfClose(t *testing.T) {
	firsts := map[string]string{
		"get":          get("/hello"),
		"post-read":    post("/readbody", "abc"),
		"post-unread":  post("/hello", "abc"),
		"chunked-read": postChunked("/readbody", "abc"),
	}
	bad := map[string]string{
		"bad-request-line": "BOGUS\r\n\r\n",
		"bad-version":      "GET / HTTP/9.9\r\n" + hostH + "\r\n",
		"unsupported-te":   "POST / HTTP/1.1\r\n" + hostH + "Transfer-Encoding: gzip\r\n\r\n",
		"no-host":          "GET / HTTP/1.1\r\n\r\n",
		"partial-head":     "GET /hello HTTP/1.1\r\nHost: exa",
	}
	runs := 24 // per case and mode: the loss showed in about 1 of 200 exchanges
	if testing.Short() {
		runs = 6
	}
	for _, off := range []bool{false, true} {
		s := startDiffServersOpts(t, diffHandler(), diffOpts{offLoop: off})
		t.Cleanup(s.stop)
		for fn, f := range firsts {
			for bn, b := range bad {
				for _, split := range []bool{false, true} {
					steps := []rawStep{{send: f + b}, {closeWrite: true}}
					if split {
						steps = []rawStep{{send: f}, {send: b}, {closeWrite: true}}
					}
					name := fmt.Sprintf("offloop=%v/%s/%s/split=%v", off, fn, bn, split)
					t.Run(name, func(t *testing.T) {
						t.Parallel()
						malformedAfterValid(t, s, steps, runs)
					})
				}
			}
		}
	}
}

// malformedAfterValid plays steps once against net/http and runs times
// against uringhttp (a few at once), which must answer as net/http did.
func malformedAfterValid(t *testing.T, s *diffServers, steps []rawStep, runs int) {
	std, err := rawExchange(s.std, steps)
	if err != nil {
		t.Fatal(err)
	}
	want := normalize(std.out)
	if std.end == "open" || bytes.Count(want, []byte("HTTP/1.1 ")) != 2 {
		t.Fatalf("net/http did not answer both requests and close (%s): %q", std.end, want)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	failed := 0
	for i := 0; i < runs; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ur, err := rawExchange(s.uring, steps)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Error(err)
				return
			}
			if got := normalize(ur.out); !bytes.Equal(got, want) || ur.end == "open" {
				if failed++; failed == 1 {
					t.Errorf("run %d: uringhttp (%s) %q\nnet/http (%s) %q", i, ur.end, got, std.end, want)
				}
			}
		}()
	}
	wg.Wait()
	if failed > 0 {
		t.Errorf("%d of %d runs differ from net/http", failed, runs)
	}
}
