package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// attacks: each runs against the server m measures and returns what it
// measured itself (key=value fields).
var attacks = map[string]func(m *meter) string{
	// nonread: n (100) clients ask a 200 MB download and never read, for d
	// (10 s).
	"nonread": func(m *meter) string {
		return unread("/big?n=200000000", orDefault(0, 100), durDefault(10*time.Second))
	},
	// slowread: n (80) clients read a 10 MB download at 2 MB/s each; the
	// handlers' mean and longest durations (net/http's reflect the
	// client's pace: about 5 s).
	"slowread": func(m *meter) string {
		got := readers(orDefault(0, 80), "/big?n=10000000", 2<<20, 30*time.Second)
		s := m.srv.stats()
		mean := float64(s["big_ns"]) / float64(max(s["big_n"], 1)) / 1e9
		return fmt.Sprintf("handler_mean_s=%.2f handler_max_s=%.2f complete=%d", mean, float64(s["big_max_ns"])/1e9, countAtLeast(got, 10000000))
	},
	// slow1k: n (1000) clients read a 1 GB download at 1 KiB/s each for d
	// (30 s): how many got less than 2 KiB (starved), and the least any got.
	"slow1k": func(m *meter) string {
		got := readers(orDefault(0, 1000), "/big?n=1000000000", 1<<10, durDefault(30*time.Second))
		starved := len(got) - countAtLeast(got, 2<<10)
		sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
		return fmt.Sprintf("starved=%d least_kib=%.1f median_kib=%.1f", starved, float64(got[0])/1024, float64(got[len(got)/2])/1024)
	},
	// memback: one 50 MB download read at full speed; rss_end tells what
	// stays.
	"memback": func(m *meter) string {
		b, err := get("/big?n=50000000")
		return fmt.Sprintf("read=%d err=%v", len(b), err)
	},
	// upload4: four 100 MB uploads in a row to the slow handler.
	"upload4": func(m *meter) string {
		for i := 0; i < 4; i++ {
			if err := upload(100_000_000); err != nil {
				return "err=" + err.Error()
			}
		}
		return ""
	},
	// upload200: n (200) 50 MB uploads at once to the slow handler.
	"upload200": func(m *meter) string {
		n := orDefault(0, 200)
		var failed atomic.Int64
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if upload(50_000_000) != nil {
					failed.Add(1)
				}
			}()
		}
		wg.Wait()
		return fmt.Sprintf("failed=%d", failed.Load())
	},
	// burst: n (2000) keep-alive connections opened at once, one request
	// each, then idle: the server's RSS per connection after a collection,
	// against before.
	"burst": func(m *meter) string {
		// First what any server that ran a while holds: 8 keep-alive
		// connections send 1,000 requests each (a uringrt loop's provided
		// buffers, 4 MiB, are all resident once its recvs have cycled
		// through them: a cost per loop, not per connection).
		warm := dialN(8, false)
		for _, c := range warm {
			br := bufio.NewReader(c)
			for i := 0; i < 1000; i++ {
				roundTrip(c, br)
			}
		}
		closeAll(warm)
		time.Sleep(3 * time.Second)
		get("/_gc")
		before := m.srv.rss()
		n := orDefault(0, 2000)
		conns := dialN(n, true)
		eachConn(conns, func(_ int, c net.Conn) {
			c.SetDeadline(time.Now().Add(30 * time.Second))
			roundTrip(c, bufio.NewReader(c))
			c.SetDeadline(time.Time{})
		})
		time.Sleep(3 * time.Second) // handler goroutines of the burst end (net/http: none; uringhttp's idle workers: 2 s)
		get("/_gc")
		after := m.srv.rss()
		closeAll(conns)
		return fmt.Sprintf("per_conn_kib=%.2f", float64(after-before)/float64(n)/1024)
	},
	// timeouts: (the server runs with ReadHeaderTimeout 1 s, IdleTimeout 2
	// s) when a partial head and an idle connection are closed, and what
	// the partial head got.
	"timeouts": func(m *meter) string {
		rht, got := closedAfter("GET / HTTP/1.1\r\nHost: x\r\n", false)
		idle, _ := closedAfter("GET / HTTP/1.1\r\nHost: x\r\n\r\n", true)
		return fmt.Sprintf("rht_closed_s=%.3f rht_bytes=%d idle_closed_s=%.3f", rht.Seconds(), got, idle.Seconds())
	},
	// pipeline: n (100) connections each write 200,000 pipelined GETs and
	// read nothing, for d (20 s).
	"pipeline": func(m *meter) string {
		conns := dialN(orDefault(0, 100), false)
		batch := strings.Repeat("GET / HTTP/1.1\r\nHost: x\r\n\r\n", 1000)
		end := time.Now().Add(durDefault(20 * time.Second))
		var sent atomic.Int64
		eachConn(conns, func(_ int, c net.Conn) {
			for i := 0; i < 200 && time.Now().Before(end); i++ {
				c.SetWriteDeadline(end)
				if _, err := io.WriteString(c, batch); err != nil {
					return
				}
				sent.Add(1000)
			}
		})
		time.Sleep(time.Until(end))
		closeAll(conns)
		return fmt.Sprintf("requests_sent=%d", sent.Load())
	},
	// shutdown: n (50) connections after one request send part of a second
	// head; then SIGTERM: how long Shutdown took.
	"shutdown": func(m *meter) string {
		conns := dialN(orDefault(0, 50), false)
		for _, c := range conns {
			if c == nil {
				continue
			}
			roundTrip(c, bufio.NewReader(c))
			io.WriteString(c, "GET / HTTP/1.1\r\nHos")
		}
		time.Sleep(200 * time.Millisecond)
		res := m.srv.sigterm()
		closeAll(conns)
		return strings.ReplaceAll(res, " ", "_")
	},
	// idle15k: (the server runs with IdleTimeout 60 s, ReadHeaderTimeout
	// 10 s) n (15,000) keep-alive connections, one request each, then idle
	// for d (10 s): the server's CPU while they are idle (each holds an
	// armed timeout).
	"idle15k": func(m *meter) string {
		n := orDefault(0, 15000)
		conns := dialN(n, false)
		var wg sync.WaitGroup
		sem := make(chan struct{}, 200)
		for _, c := range conns {
			if c == nil {
				continue
			}
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				c.SetDeadline(time.Now().Add(30 * time.Second))
				roundTrip(c, bufio.NewReader(c))
			}()
		}
		wg.Wait()
		time.Sleep(time.Second)
		c0 := m.srv.cpu()
		d := durDefault(10 * time.Second)
		time.Sleep(d)
		idleCPU := (m.srv.cpu() - c0) / d.Seconds()
		closeAll(conns)
		return fmt.Sprintf("idle_cpu_ms_per_s=%.2f", idleCPU*1000)
	},
	// hijack: n (100) hijacked connections that never read while the
	// server writes 1 MiB messages, for d (10 s).
	"hijack": func(m *meter) string {
		return unread("/ws", orDefault(0, 100), durDefault(10*time.Second))
	},
}

// unread dials n clients that each GET path and read nothing, holds them
// for d and closes them.
func unread(path string, n int, d time.Duration) string {
	conns := dialN(n, false)
	for _, c := range conns {
		if c != nil {
			io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
		}
	}
	time.Sleep(d)
	closeAll(conns)
	return ""
}

// roundTrip writes a GET / on c and reads its answer through br to the
// end of its body; errors are dropped (the attack counts what the server
// did, not what the client saw).
func roundTrip(c net.Conn, br *bufio.Reader) {
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, err := http.ReadResponse(br, nil); err == nil {
		io.Copy(io.Discard, resp.Body)
	}
}

// readers runs n clients that GET path and read it at rate bytes/s each
// for at most limit; it returns the bytes each read.
func readers(n int, path string, rate int, limit time.Duration) []int64 {
	conns := dialN(n, false)
	got := make([]int64, n)
	end := time.Now().Add(limit)
	eachConn(conns, func(i int, c net.Conn) {
		defer c.Close()
		io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
		piece := max(rate/10, 1)
		buf := make([]byte, piece)
		t0 := time.Now()
		for time.Now().Before(end) {
			c.SetReadDeadline(end)
			k, err := c.Read(buf)
			got[i] += int64(k)
			if err != nil {
				return
			}
			// Pace: sleep until the bytes read so far are due.
			if due := t0.Add(time.Duration(float64(got[i]) / float64(rate) * 1e9)); time.Until(due) > 0 {
				time.Sleep(time.Until(due))
			}
		}
	})
	return got
}

// eachConn runs f on each of conns that is not nil (a failed dial), each in
// its own goroutine, and returns when all have returned; i is the conn's
// index in conns.
func eachConn(conns []net.Conn, f func(i int, c net.Conn)) {
	var wg sync.WaitGroup
	for i, c := range conns {
		if c == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(i, c)
		}()
	}
	wg.Wait()
}

func countAtLeast(got []int64, n int64) int {
	k := 0
	for _, g := range got {
		if g >= n {
			k++
		}
	}
	return k
}

// upload POSTs size bytes to /up and checks the count it answers.
func upload(size int64) error {
	c, err := net.Dial("tcp", *addrFlag)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Minute))
	fmt.Fprintf(c, "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", size)
	chunk := make([]byte, 64<<10)
	for sent := int64(0); sent < size; {
		k := min(int64(len(chunk)), size-sent)
		if _, err := c.Write(chunk[:k]); err != nil {
			return err
		}
		sent += k
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(resp.Body)
	if string(b) != fmt.Sprint(size) {
		return fmt.Errorf("the handler read %q", b)
	}
	return nil
}

// closedAfter sends req on a new connection (reading the answer first
// when answered) and returns how long after that the server closed it,
// and the bytes it sent then.
func closedAfter(req string, answered bool) (time.Duration, int) {
	c, err := net.Dial("tcp", *addrFlag)
	if err != nil {
		return 0, 0
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	io.WriteString(c, req)
	t0 := time.Now()
	if answered {
		buf := make([]byte, 4096)
		c.Read(buf)
		t0 = time.Now()
	}
	n, _ := io.Copy(io.Discard, c)
	return time.Since(t0), int(n)
}
