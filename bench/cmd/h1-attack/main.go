// Command h1-attack runs an attack against one HTTP/1.1 server process,
// uringhttp or net/http with the same handlers (scripts/h1-attack.sh runs
// both, side by side, in alternating rounds), and prints one line of what
// the server did:
//
//	rss_base, rss_peak, rss_end (MiB): before, the most sampled every 50 ms
//	  during the attack, and 5 s after the attackers left (without a forced
//	  collection; rss_gc after one, through /_gc)
//	probes ok/sent, p99 (ms): a fresh connection's GET / every 100 ms
//	cpu (s): the server's user+system time during the attack
//	fds, goroutines: after the attackers left, against before ("back" when
//	  within 5 of it within 5 s)
//	and what the attack itself measures (each attack's comment says).
//
//	h1-attack -server uringhttp -attack nonread [-n 100] [-d 10s]
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

var (
	addrFlag = flag.String("addr", "127.0.0.1:17680", "server `address`")
	nFlag    = flag.Int("n", 0, "attackers (0: the attack's default)")
	durFlag  = flag.Duration("d", 0, "attack duration (0: the attack's default)")
)

func main() {
	kind := flag.String("server", "uringhttp", "uringhttp or nethttp")
	attack := flag.String("attack", "nonread", "nonread, slowread, slow1k, memback, upload4, burst, timeouts, pipeline, shutdown, hijack, upload200, idle15k")
	serveMode := flag.Bool("serve", false, "run as the server process")
	rht := flag.Duration("rht", 0, "server: ReadHeaderTimeout")
	idle := flag.Duration("idle", 0, "server: IdleTimeout")
	flag.Parse()
	if *serveMode {
		serve(*kind, *addrFlag, *rht, *idle)
		return
	}
	raiseNOFILE()
	a, ok := attacks[*attack]
	if !ok {
		fatal(fmt.Errorf("unknown attack %q", *attack))
	}
	args := []string{"-serve", "-server", *kind, "-addr", *addrFlag}
	switch *attack {
	case "timeouts":
		args = append(args, "-rht", "1s", "-idle", "2s")
	case "idle15k":
		args = append(args, "-rht", "10s", "-idle", "60s")
	}
	srv := startServer(args)
	defer srv.stop()
	m := &meter{srv: srv}
	m.begin()
	extra := a(m)
	m.end()
	fmt.Printf("server=%s attack=%s %s %s\n", *kind, *attack, m.report(), extra)
}

// server is the server process.
type server struct {
	cmd *exec.Cmd
	out *bufio.Reader
	pid int
}

func startServer(args []string) *server {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Stderr = os.Stderr
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		fatal(err)
	}
	s := &server{cmd: cmd, out: bufio.NewReader(out), pid: cmd.Process.Pid}
	if line, err := s.out.ReadString('\n'); err != nil || line != "listening\n" {
		fatal(fmt.Errorf("server: %q %v", line, err))
	}
	return s
}

// sigterm asks the server to shut down and returns what it printed.
func (s *server) sigterm() string {
	s.cmd.Process.Signal(os.Interrupt)
	line, _ := s.out.ReadString('\n')
	return strings.TrimSpace(line)
}

func (s *server) stop() {
	s.cmd.Process.Kill()
	s.cmd.Wait()
}

func (s *server) status(field string) int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.pid))
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, field) {
			var n int64
			fmt.Sscan(strings.Fields(line)[1], &n)
			return n << 10
		}
	}
	return 0
}

func (s *server) rss() int64 { return s.status("VmRSS:") }

func (s *server) cpu() float64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.pid))
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	var u, k float64
	fmt.Sscan(f[11], &u)
	fmt.Sscan(f[12], &k)
	return (u + k) / 100
}

func (s *server) fds() int {
	e, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.pid))
	return len(e)
}

// get fetches path on a connection of its own.
func get(path string) (string, error) {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + *addrFlag + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func (s *server) stats() map[string]int64 {
	m := map[string]int64{}
	if b, err := get("/_stats"); err == nil {
		json.Unmarshal([]byte(b), &m)
	}
	return m
}

// meter samples the server during an attack and probes it.
type meter struct {
	srv                    *server
	base, peak, endRSS, gc int64
	cpu0, cpu              float64
	fds0, gor0, fds1, gor1 int
	back                   bool
	mem                    map[string]int64
	stop                   chan struct{}
	wg                     sync.WaitGroup
	mu                     sync.Mutex
	lat                    []time.Duration
	sent                   atomic.Int64
	ok                     atomic.Int64
}

func (m *meter) begin() {
	get("/") // the server's first request: pools, workers
	m.base, m.cpu0 = m.srv.rss(), m.srv.cpu()
	m.fds0, m.gor0 = m.srv.fds(), int(m.srv.stats()["goroutines"])
	m.peak = m.base
	m.stop = make(chan struct{})
	m.wg.Add(2)
	go func() {
		defer m.wg.Done()
		for {
			if r := m.srv.rss(); r > m.peak {
				m.peak = r
			}
			select {
			case <-m.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	go func() {
		defer m.wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		var pw sync.WaitGroup
		for {
			select {
			case <-m.stop:
				pw.Wait()
				return
			case <-t.C:
			}
			pw.Add(1)
			go func() {
				defer pw.Done()
				m.sent.Add(1)
				t0 := time.Now()
				if b, err := get("/"); err == nil && b == "ok" {
					m.ok.Add(1)
					m.mu.Lock()
					m.lat = append(m.lat, time.Since(t0))
					m.mu.Unlock()
				}
			}()
		}
	}()
}

// end stops the sampling (the attack has closed its connections) and
// waits up to 5 s for descriptors and goroutines to come back.
func (m *meter) end() {
	close(m.stop)
	m.wg.Wait()
	m.cpu = m.srv.cpu() - m.cpu0
	deadline := time.Now().Add(5 * time.Second)
	for {
		m.fds1, m.gor1 = m.srv.fds(), int(m.srv.stats()["goroutines"])
		if m.back = m.fds1 <= m.fds0+5 && m.gor1 <= m.gor0+5; m.back || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Until(deadline))
	m.endRSS = m.srv.rss()
	get("/_gc")
	m.gc = m.srv.rss()
	m.mem = m.srv.stats()
}

func (m *meter) report() string {
	sort.Slice(m.lat, func(i, j int) bool { return m.lat[i] < m.lat[j] })
	p99 := time.Duration(0)
	if n := len(m.lat); n > 0 {
		p99 = m.lat[(n-1)*99/100]
	}
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	return fmt.Sprintf("rss_base=%.1f rss_peak=%.1f growth=%.1f rss_end=%.1f rss_gc=%.1f probes=%d/%d p99_ms=%.1f cpu_s=%.2f fds=%d->%d goroutines=%d->%d back=%v",
		mib(m.base), mib(m.peak), mib(m.peak-m.base), mib(m.endRSS), mib(m.gc), m.ok.Load(), m.sent.Load(),
		float64(p99)/1e6, m.cpu, m.fds0, m.fds1, m.gor0, m.gor1, m.back) +
		fmt.Sprintf(" gc_heap=%.1f gc_stack=%.1f gc_gosys=%.1f", mib(m.mem["heap_inuse"]), mib(m.mem["stack"]), mib(m.mem["gosys"]))
}

func orDefault(n, def int) int {
	if *nFlag > 0 {
		return *nFlag
	}
	return def
}

func durDefault(def time.Duration) time.Duration {
	if *durFlag > 0 {
		return *durFlag
	}
	return def
}

// dialN opens n connections (all at once when burst, else 100 at a time).
func dialN(n int, burst bool) []net.Conn {
	conns := make([]net.Conn, n)
	par := 100
	if burst {
		par = n
	}
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			for try := 0; try < 5; try++ {
				c, err := net.DialTimeout("tcp", *addrFlag, 10*time.Second)
				if err == nil {
					conns[i] = c
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	return conns
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
}
