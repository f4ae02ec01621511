package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	uringrt "github.com/uringrt/uringrt/runtime"
	"github.com/uringrt/uringrt/runtime/uringprom"
)

// oneLine checks that s is exactly one non-empty line containing want.
func oneLine(t *testing.T, s, want string) {
	t.Helper()
	if !strings.HasSuffix(s, "\n") || strings.Count(s, "\n") != 1 || len(strings.TrimSpace(s)) == 0 {
		t.Errorf("stderr is not exactly one line: %q", s)
	}
	if !strings.HasPrefix(s, "echo-server: ") {
		t.Errorf("stderr %q does not start with the program name", s)
	}
	if !strings.Contains(s, want) {
		t.Errorf("stderr %q does not mention %q", s, want)
	}
}

func TestBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-nope"}, "-nope"},
		{[]string{"-loops", "many"}, "many"},
		{[]string{"-api", "grpc"}, "grpc"},
		{[]string{"-batch", "maybe"}, "maybe"},
		{[]string{"-backend", "epoll"}, "epoll"},
		{[]string{"-pollable", "sometimes"}, "sometimes"},
		{[]string{"-loops", "-1"}, "-loops"},
		{[]string{"-max-conns", "-3"}, "-max-conns"},
		{[]string{"-wait-latency", "-5s"}, "-wait-latency"},
		{[]string{"-wait-latency", "1000h"}, "0s..100ms"},
		{[]string{"-workers", "1000000"}, "0..4096"},
		{[]string{"-idle-poll", "2s"}, "0s..1s"},
		{[]string{"extra"}, "extra"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tc.args, &stdout, &stderr); code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			oneLine(t, stderr.String(), tc.want)
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
		})
	}
}

func TestAddressInUse(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	addr := busy.Addr().String()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"listen", []string{"-addr", addr, "-metrics-addr", ""}, "address already in use"},
		{"metrics", []string{"-addr", "127.0.0.1:0", "-metrics-addr", addr}, "metrics"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			done := make(chan int, 1)
			go func() { done <- run(tc.args, &stdout, &stderr) }()
			select {
			case code := <-done:
				if code != 2 {
					t.Errorf("exit %d, want 2", code)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("run did not return within 10 s with its address in use")
			}
			oneLine(t, stderr.String(), tc.want)
			if !strings.Contains(stderr.String(), addr) {
				t.Errorf("stderr %q does not name the address %s", stderr.String(), addr)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-version"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	out := stdout.String()
	if !strings.HasPrefix(out, "echo-server "+version+"\n") {
		t.Errorf("stdout %q does not start with the version", out)
	}
	if !strings.Contains(out, "io_uring: ") {
		t.Errorf("stdout %q has no io_uring line", out)
	}
	// On a kernel with io_uring, the probed features; otherwise the cause.
	if !strings.Contains(out, "io_uring: unavailable") {
		for _, want := range []string{"kernel=", "setup=", "buf_ring=", "multishot_accept=", "ops="} {
			if !strings.Contains(out, want) {
				t.Errorf("stdout %q lacks %q", out, want)
			}
		}
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr %q, want nothing", stderr.String())
	}
}

// buildServer builds the echo-server once per test binary run.
var buildServer = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "echo-server-test")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "echo-server")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

func TestMain(m *testing.M) {
	code := m.Run()
	if bin, err := buildServer(); err == nil {
		os.RemoveAll(filepath.Dir(bin))
	}
	os.Exit(code)
}

// freePort returns a loopback address nothing listens on right now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// server is a running echo-server subprocess.
type server struct {
	cmd          *exec.Cmd
	addr, metric string
	stderr       *syncBuffer
	exited       chan error
}

// start runs argv with stderr into s.stderr; the process is killed and
// reaped when the test ends, and s.exited then reports its exit.
func (s *server) start(t *testing.T, argv ...string) {
	t.Helper()
	s.stderr, s.exited = &syncBuffer{}, make(chan error, 1)
	s.cmd = exec.Command(argv[0], argv[1:]...)
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.exited <- s.cmd.Wait() }()
	t.Cleanup(func() {
		s.cmd.Process.Kill()
		<-s.exited
		s.exited <- nil
	})
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServer runs the built echo-server with args on free loopback
// ports and waits until both its echo and metrics ports accept.
func startServer(t *testing.T, args ...string) *server {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the echo-server binary; skipped with -short")
	}
	bin, err := buildServer()
	if err != nil {
		t.Fatal(err)
	}
	for attempt := 0; ; attempt++ {
		s := &server{addr: freePort(t), metric: freePort(t)}
		s.start(t, append([]string{bin, "-addr", s.addr, "-metrics-addr", s.metric}, args...)...)
		err := s.waitListening(10 * time.Second)
		if err == nil {
			return s
		}
		// A port taken between freePort and the server's bind: retry.
		if attempt < 2 && strings.Contains(s.stderr.String(), "address already in use") {
			continue
		}
		t.Fatalf("%v; stderr:\n%s", err, s.stderr.String())
	}
}

func (s *server) waitListening(d time.Duration) error {
	end := time.Now().Add(d)
	for _, a := range []string{s.addr, s.metric} {
		for {
			c, err := net.DialTimeout("tcp", a, time.Second)
			if err == nil {
				c.Close()
				break
			}
			select {
			case err := <-s.exited:
				s.exited <- err
				return fmt.Errorf("echo-server exited (%v) before listening on %s", err, a)
			default:
			}
			if time.Now().After(end) {
				return fmt.Errorf("echo-server not listening on %s after %v", a, d)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

// echoMsgs sends msgs messages on conns connections, checks the echoes and
// returns the bytes sent.
func echoMsgs(t *testing.T, addr string, conns, msgs int) int {
	t.Helper()
	sent := 0
	for i := 0; i < conns; i++ {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		r := bufio.NewReader(c)
		for m := 0; m < msgs; m++ {
			msg := fmt.Sprintf("conn %d msg %d\n", i, m)
			if _, err := io.WriteString(c, msg); err != nil {
				t.Fatal(err)
			}
			sent += len(msg)
			got, err := r.ReadString('\n')
			if err != nil || got != msg {
				t.Fatalf("echo %q, %v; want %q", got, err, msg)
			}
		}
		c.Close()
	}
	return sent
}

// scrape GETs /metrics and returns the text exposition.
func scrape(t *testing.T, addr string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s\n%s", resp.Status, body)
	}
	return string(body)
}

// sample sums the samples of metric name (any labels) whose label set
// contains every one of labels (e.g. `backend="uring"`), and says whether
// there was one.
func sample(text, name string, labels ...string) (float64, bool) {
	var sum float64
	found := false
	for _, line := range strings.Split(text, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		n, rest, _ := strings.Cut(line, " ")
		lbl := ""
		if i := strings.IndexByte(n, '{'); i >= 0 {
			if j := strings.LastIndexByte(line, '}'); j > i {
				n, lbl, rest = line[:i], line[i:j+1], strings.TrimSpace(line[j+1:])
			}
		}
		if n != name {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(lbl, l)
		}
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.Fields(rest)[0], 64)
		if err != nil {
			continue
		}
		sum += v
		found = true
	}
	return sum, found
}

// hasPrefix reports whether some sample's name starts with prefix.
func hasPrefix(text, prefix string) bool {
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, prefix) {
			return true
		}
	}
	return false
}

// stop sends SIGTERM and checks the server exits 0 within 5 s.
func (s *server) stop(t *testing.T) {
	t.Helper()
	start := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.exited:
		s.exited <- err
		if err != nil {
			t.Errorf("after SIGTERM: %v (want exit 0); stderr:\n%s", err, s.stderr.String())
		}
		t.Logf("exited %v after SIGTERM", time.Since(start).Round(time.Millisecond))
	case <-time.After(5 * time.Second):
		t.Errorf("still running 5 s after SIGTERM; stderr:\n%s", s.stderr.String())
	}
}

func TestServeScrapeAndTerminate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		backend string
	}{
		// -loop-readiness: readers wait on the loop's POLLIN, so the conn
		// API's echo reaps CQEs (with GOMAXPROCS 2 or more they would wait
		// in Go's netpoller, and a small echo might never touch the ring).
		{"conn", []string{"-api", "conn", "-backend", "uring", "-loop-readiness"}, "uring"},
		{"callback", []string{"-api", "callback", "-backend", "uring"}, "uring"},
		{"std", []string{"-api", "callback", "-backend", "std"}, "std"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, tc.args...)
			sent := echoMsgs(t, s.addr, 3, 20)
			text := scrape(t, s.metric)
			if tc.backend == "uring" {
				cqes, ok := sample(text, "uringrt_cqes_reaped_total")
				if !ok || cqes <= 0 {
					t.Errorf("uringrt_cqes_reaped_total = %v (present %v), want > 0", cqes, ok)
				}
				// Every byte sent was echoed back, so read by the server,
				// before the scrape.
				if rb, _ := sample(text, "uringrt_read_bytes_total"); rb != float64(sent) {
					t.Errorf("uringrt_read_bytes_total = %v, want %d", rb, sent)
				}
				// 3 echo connections and startServer's readiness probe.
				if acc, _ := sample(text, "uringrt_connections_accepted_total"); acc != 4 {
					t.Errorf("uringrt_connections_accepted_total = %v, want 4", acc)
				}
			}
			if v, ok := sample(text, "uringrt_backend_info", `backend="`+tc.backend+`"`); !ok || v != 1 {
				t.Errorf("uringrt_backend_info{backend=%q} = %v (present %v), want 1", tc.backend, v, ok)
			}
			for _, p := range []string{"go_goroutines", "go_memstats_", "process_cpu_seconds_total", "process_open_fds"} {
				if !hasPrefix(text, p) {
					t.Errorf("/metrics has no %s* sample", p)
				}
			}
			// The worker pool serves only -pollable blocking and
			// blocking handlers: unused here, it exports nothing.
			if hasPrefix(text, "uringrt_worker_") {
				t.Errorf("/metrics has the unused worker pool's uringrt_worker_* series")
			}
			s.stop(t)
		})
	}
}

// TestNoMetricsAddr: with -metrics-addr "" nothing serves /metrics and the
// server still echoes and stops on SIGTERM.
func TestNoMetricsAddr(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the echo-server binary; skipped with -short")
	}
	bin, err := buildServer()
	if err != nil {
		t.Fatal(err)
	}
	s := &server{addr: freePort(t)}
	s.start(t, bin, "-addr", s.addr, "-metrics-addr", "")
	s.metric = s.addr // waitListening checks both
	if err := s.waitListening(10 * time.Second); err != nil {
		t.Fatalf("%v; stderr:\n%s", err, s.stderr.String())
	}
	echoMsgs(t, s.addr, 1, 5)
	s.stop(t)
}

// TestVersionLoopFlagsMatchBackendInfo: -version says which setup flags
// this command line's loops use, and they are what uringrt_backend_info
// reports for the same loops (the default loop: COOP_TASKRUN; with
// -locked-loops: DEFER_TASKRUN). Before, -version printed only the flags
// the kernel offers (DEFER_TASKRUN) while the metric said COOP_TASKRUN.
func TestVersionLoopFlagsMatchBackendInfo(t *testing.T) {
	for _, locked := range []bool{false, true} {
		args := []string{"-version"}
		if locked {
			args = append(args, "-locked-loops")
		}
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit %d, stderr %q", args, code, stderr.String())
		}
		out := stdout.String()
		if strings.Contains(out, "io_uring: unavailable") {
			t.Skip("no io_uring here")
		}
		rt, err := uringrt.New(uringrt.Config{Loops: 1, Backend: uringrt.BackendUring, LockedLoops: locked, Metrics: true})
		if err != nil {
			t.Fatal(err)
		}
		reg := prometheus.NewRegistry()
		if err := uringprom.Register(reg, rt); err != nil {
			t.Fatal(err)
		}
		mfs, err := reg.Gather()
		rt.Close()
		if err != nil {
			t.Fatal(err)
		}
		metric := ""
		for _, mf := range mfs {
			if mf.GetName() == "uringrt_backend_info" {
				for _, lp := range mf.GetMetric()[0].GetLabel() {
					if lp.GetName() == "setup_flags" {
						metric = lp.GetValue()
					}
				}
			}
		}
		if want := "loops: setup=" + metric + "\n"; metric == "" || !strings.Contains(out, want) {
			t.Errorf("%v: stdout %q lacks %q (uringrt_backend_info's setup_flags)", args, out, want)
		}
		wantFlag := "COOP_TASKRUN"
		if locked {
			wantFlag = "DEFER_TASKRUN"
		}
		if !strings.Contains(metric, wantFlag) {
			t.Logf("%v: loops use %s (no %s on this kernel?)", args, metric, wantFlag)
		}
	}
}
