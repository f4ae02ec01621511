package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// get GETs path on addr and returns the status code and body.
// getClient opens a connection per request. With http.DefaultClient's
// pool, a stress run's GET in TestHealthReadyAcrossDrain met "connection
// reset by peer" on a reused connection (each subtest starts a new server
// process, whose port may be an earlier one's, and an earlier server's
// connections die with it), which Go's transport does not retry once the
// request is written. A fresh connection per GET has no such history.
var getClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

func get(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	resp, err := getClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestHealthReadyAcrossDrain: /healthz and /readyz answer 200 while the
// server runs; after SIGTERM /readyz answers 503 for -drain-delay while
// /healthz still answers 200 and echoes still work; a second SIGTERM ends
// the delay, and the server exits 0. The delay is 30 s, which the second
// signal cuts short: with 5 s a stress run (two CPU hogs, two race-enabled
// suites) got a reset on a GET made as the delay ran out.
func TestHealthReadyAcrossDrain(t *testing.T) {
	for _, api := range []string{"conn", "callback"} {
		t.Run(api, func(t *testing.T) {
			s := startServer(t, "-api", api, "-drain-delay", "30s")
			for _, p := range []string{"/healthz", "/readyz"} {
				if code, body := get(t, s.metric, p); code != http.StatusOK {
					t.Fatalf("GET %s before SIGTERM: %d %q, want 200", p, code, body)
				}
			}
			if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			var code int
			for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
				if code, _ = get(t, s.metric, "/readyz"); code == http.StatusServiceUnavailable {
					break
				}
			}
			if code != http.StatusServiceUnavailable {
				t.Fatalf("/readyz after SIGTERM: %d, want 503", code)
			}
			if code, _ := get(t, s.metric, "/healthz"); code != http.StatusOK {
				t.Errorf("/healthz while draining: %d, want 200", code)
			}
			echoMsgs(t, s.addr, 1, 3) // still serving during the drain delay
			// A second signal ends the delay: drain now.
			if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-s.exited:
				s.exited <- err
				if err != nil {
					t.Errorf("exit after SIGTERM: %v; stderr:\n%s", err, s.stderr.String())
				}
			case <-time.After(15 * time.Second):
				t.Fatalf("still running 15 s after SIGTERM; stderr:\n%s", s.stderr.String())
			}
			if _, err := net.DialTimeout("tcp", s.metric, time.Second); err == nil {
				t.Error("metrics port still accepts after exit")
			}
		})
	}
}

// TestMetricsIdleKeepAliveClosed: a scraper that keeps its connection
// alive after one scrape and then idles is closed after
// -metrics-idle-timeout (before, it stayed open for good: 200 of 200 after
// 90 s).
func TestMetricsIdleKeepAliveClosed(t *testing.T) {
	s := startServer(t, "-metrics-idle-timeout", "300ms")
	c, err := net.DialTimeout("tcp", s.metric, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("scrape: %s close=%v, want 200 kept alive", resp.Status, resp.Close)
	}
	done := time.Now()
	_, err = r.ReadByte()
	if !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("idle keep-alive connection: %v after %v, want closed by the server", err, time.Since(done))
	}
	t.Logf("closed %v after the scrape", time.Since(done).Round(time.Millisecond))
}

// TestMetricsConnsCannotStarveEcho: with the process limited to 1,024
// descriptors, 2,100 idle connections to the metrics port neither use up
// the descriptors nor stop the echo listener: it still accepts and echoes,
// and /metrics still answers once the idle ones time out. Before the
// connection cap the metrics server accepted all of them and the echo
// listener hit EMFILE.
func TestMetricsConnsCannotStarveEcho(t *testing.T) {
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("needs prlimit (util-linux)")
	}
	const idle = 2100
	if n := nofileLimit(); n > 0 && n < idle+200 {
		t.Skipf("RLIMIT_NOFILE %d is too low for %d client connections", n, idle)
	}
	s := startServerWrapped(t, []string{"prlimit", "--nofile=1024:1024", "--"}, "-metrics-idle-timeout", "1s")
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	timeouts := 0
	for i := 0; i < idle; i++ {
		c, err := net.DialTimeout("tcp", s.metric, 2*time.Second)
		if err != nil {
			// The accept backlog is full: the kernel drops the SYN. The
			// echo port must still accept.
			timeouts++
			if timeouts > 3 {
				break
			}
			continue
		}
		conns = append(conns, c)
	}
	t.Logf("%d idle metrics connections open, %d dials timed out", len(conns), timeouts)
	echoMsgs(t, s.addr, 20, 3)
	if strings.Contains(s.stderr.String(), "too many open files") {
		t.Errorf("server ran out of descriptors:\n%s", s.stderr.String())
	}
	// At the cap each new connection closes an old idle one
	// (evictingListener); once the clients go the server answers.
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	var lastErr error
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.metric+"/healthz", nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			lastErr = nil
			break
		}
		lastErr = err
	}
	if lastErr != nil {
		t.Errorf("/healthz never answered again: %v", lastErr)
	}
	s.stop(t)
}

// startServerWrapped is startServer with the binary run under wrapper
// (e.g. prlimit).
func startServerWrapped(t *testing.T, wrapper []string, args ...string) *server {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the echo-server binary; skipped with -short")
	}
	bin, err := buildServer()
	if err != nil {
		t.Fatal(err)
	}
	s := &server{addr: freePort(t), metric: freePort(t)}
	s.start(t, append(append(append([]string{}, wrapper...), bin, "-addr", s.addr, "-metrics-addr", s.metric), args...)...)
	if err := s.waitListening(10 * time.Second); err != nil {
		t.Fatalf("%v; stderr:\n%s", err, s.stderr.String())
	}
	return s
}

// TestMetricsRedactedWhenPublished: bound beyond loopback, /metrics drops
// the kernel release and the descriptor gauges; on loopback (or with
// -metrics-host-info on) they are there.
func TestMetricsRedactedWhenPublished(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		redact bool
	}{
		{"loopback", nil, false},
		{"published", []string{"-metrics-host-info", "off"}, true},
		{"published opt-in", []string{"-metrics-host-info", "on"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, tc.args...)
			text := scrape(t, s.metric)
			_, fds := sample(text, "process_max_fds")
			_, redacted := sample(text, "uringrt_backend_info", `kernel="redacted"`)
			if tc.redact != redacted || tc.redact == fds {
				t.Errorf("kernel redacted %v, process_max_fds exported %v; want redacted %v", redacted, fds, tc.redact)
			}
			if _, ok := sample(text, "uringrt_backend_info"); !ok {
				t.Error("uringrt_backend_info missing")
			}
		})
	}
	if isLoopback("0.0.0.0:9100") || isLoopback("[::]:9100") || !isLoopback("127.0.0.1:9100") || !isLoopback("[::1]:1") || !isLoopback("localhost:1") {
		t.Error("isLoopback misjudges an address")
	}
}

// TestMetricsPipeliningNonReaderCut: a client that pipelines /metrics
// requests and never reads is cut off by the write timeout (before, the
// server held it for good, blocked writing).
func TestMetricsPipeliningNonReaderCut(t *testing.T) {
	s := startServer(t, "-metrics-idle-timeout", "10m") // only the write timeout may close it
	c, err := net.DialTimeout("tcp", s.metric, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetReadBuffer(4096)
	req := strings.Repeat("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 3000)
	c.SetWriteDeadline(time.Now().Add(metricsWriteTimeout))
	io.WriteString(c, req) // may stop short once the server stops reading: fine
	// Not reading is the test: the server's writes fill the socket buffers
	// and block; after metricsWriteTimeout it must give up and close.
	time.Sleep(metricsWriteTimeout + 2*time.Second)
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	n, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server still holds the connection %v after the write timeout (read %d bytes)", metricsWriteTimeout+22*time.Second, n)
	}
	t.Logf("connection closed by the server after %d bytes (%v)", n, err)
}
