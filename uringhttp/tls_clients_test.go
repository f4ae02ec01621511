package uringhttp_test

// Real TLS clients nobody here wrote, against uringhttp's ServeTLS: curl
// (HTTP/1.1 and HTTP/2), openssl s_client (TLS 1.2, 1.3, resumption),
// wrk over https, h2load over TLS (h2 and --h1) and h2spec (its result
// against net/http's). A missing client skips its test, or fails it under
// URINGHTTP_REQUIRE_CLIENTS=1.

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	uringrt "github.com/uringrt/uringrt/runtime"
)

func TestTLSCurl(t *testing.T) {
	curl := needTool(t, "curl", "curl")
	ts := startTLS(t, uringrt.BackendUring, tlsHandler(), nil)
	for _, c := range []struct{ flag, want string }{
		{"--http1.1", `HTTP/1.1 tls=304 alpn="http/1.1" sni="" body=0`},
		{"--http2", `HTTP/2.0 tls=304 alpn="h2" sni="" body=0`},
		{"--tlsv1.2", `HTTP/2.0 tls=303 alpn="h2" sni="" body=0`},
	} {
		args := []string{"-s", "--cacert", ts.cert, c.flag}
		if c.flag == "--tlsv1.2" {
			args = append(args, "--tls-max", "1.2")
		}
		// Twice on one connection: keep-alive (and a second h2 stream).
		out, _ := runTool(t, 30*time.Second, curl, append(args, ts.url("/a"), ts.url("/b"))...)
		if out != c.want+c.want {
			t.Errorf("curl %s: %q, want %q twice", c.flag, out, c.want)
		}
	}
}

func TestTLSOpenSSLClient(t *testing.T) {
	openssl := needTool(t, "openssl", "openssl")
	ts := startTLS(t, uringrt.BackendUring, tlsHandler(), nil)
	sess := filepath.Join(t.TempDir(), "sess.pem")
	run := func(args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, openssl, append([]string{"s_client", "-connect", ts.addr, "-servername", "localhost", "-CAfile", ts.cert, "-ign_eof"}, args...)...)
		cmd.Stdin = strings.NewReader("GET /x HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("openssl s_client %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-tls1_2"}, `tls=303 alpn="" sni="localhost"`},
		{[]string{"-tls1_3", "-alpn", "http/1.1"}, `tls=304 alpn="http/1.1" sni="localhost"`},
		{[]string{"-tls1_3", "-sess_out", sess}, `tls=304`},
		{[]string{"-tls1_3", "-sess_in", sess}, `tls=304`},
	} {
		out := run(c.args...)
		if !strings.Contains(out, "HTTP/1.1 200 OK") || !strings.Contains(out, c.want) || !strings.Contains(out, "Verify return code: 0 (ok)") {
			t.Fatalf("openssl s_client %v:\n%s", c.args, out)
		}
		if len(c.args) > 1 && c.args[1] == "-sess_in" && !strings.Contains(out, "Reused, TLSv1.3") {
			t.Fatalf("openssl s_client -sess_in: the connection was not resumed from the saved ticket:\n%s", out)
		}
	}
}

func TestTLSWrk(t *testing.T) {
	wrk := needTool(t, "wrk", "wrk")
	ts := startTLS(t, uringrt.BackendUring, clientHandler(), nil)
	out, _ := runTool(t, 60*time.Second, wrk, "-t1", "-c20", "-d1s", ts.url("/"))
	if strings.Contains(out, "Non-2xx") || strings.Contains(out, "Socket errors") || !regexp.MustCompile(`[1-9][0-9]* requests in`).MatchString(out) {
		t.Fatalf("wrk over https:\n%s", out)
	}
}

func TestTLSH2load(t *testing.T) {
	h2load := needTool(t, "h2load", "nghttp2-client")
	ts := startTLS(t, uringrt.BackendUring, clientHandler(), nil)
	for _, mode := range [][]string{{}, {"--h1"}} {
		out, _ := runTool(t, 60*time.Second, h2load, append(mode, "-n", "2000", "-c", "10", "-m", "4", ts.url("/"))...)
		if !strings.Contains(out, "2000 succeeded, 0 failed, 0 errored") {
			t.Fatalf("h2load %v over TLS:\n%s", mode, out)
		}
		proto := "h2"
		if len(mode) > 0 {
			proto = "http/1.1"
		}
		if !strings.Contains(out, "Application protocol: "+proto) {
			t.Fatalf("h2load %v: not %s:\n%s", mode, proto, out)
		}
	}
}

// TestTLSH2spec runs h2spec over TLS against uringhttp and against
// net/http serving the same handler: the same tests pass and fail.
func TestTLSH2spec(t *testing.T) {
	h2spec, err := exec.LookPath("h2spec")
	if err != nil {
		msg := "h2spec not installed (go install github.com/summerwind/h2spec/cmd/h2spec@latest)"
		if os.Getenv("URINGHTTP_REQUIRE_CLIENTS") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	ts := startTLS(t, uringrt.BackendUring, h, nil)
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h}
	cert, err := tls.LoadX509KeyPair(ts.cert, ts.key)
	if err != nil {
		t.Fatal(err)
	}
	hs.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
	go hs.ServeTLS(gl, "", "")
	defer hs.Close()
	result := func(addr string) (summary string, failed []string) {
		host, port, _ := net.SplitHostPort(addr)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		out, _ := exec.CommandContext(ctx, h2spec, "-t", "-k", "-h", host, "-p", port, "-o", "5").CombinedOutput()
		ansi := regexp.MustCompile("\x1b\\[[0-9;]*m")
		section := ""
		for _, line := range strings.Split(ansi.ReplaceAllString(string(out), ""), "\n") {
			if m := regexp.MustCompile(`^\s*([0-9.]+ .*|[0-9]+\. .*)$`).FindStringSubmatch(line); m != nil && !strings.Contains(line, ":") {
				section = strings.TrimSpace(line)
			}
			if i := strings.Index(line, "× "); i >= 0 {
				failed = append(failed, section+" "+strings.TrimSpace(line[i+len("× "):]))
			}
			if strings.Contains(line, "tests,") {
				summary = strings.TrimSpace(line)
			}
		}
		slices.Sort(failed)
		return summary, slices.Compact(failed) // (listed again at the end)
	}
	ours, ourFails := result(ts.addr)
	theirs, theirFails := result(gl.Addr().String())
	t.Logf("h2spec over TLS: uringhttp %q, net/http %q", ours, theirs)
	// What fails here fails on net/http too (x/net's server may be newer
	// than the one net/http bundles, and pass more).
	for _, f := range ourFails {
		if !slices.Contains(theirFails, f) {
			t.Errorf("h2spec: %s fails on uringhttp, not on net/http", f)
		}
	}
	if ours == "" || len(ourFails) > len(theirFails) {
		t.Fatalf("h2spec: uringhttp %q\n%s\nnet/http %q\n%s", ours, strings.Join(ourFails, "\n"), theirs, strings.Join(theirFails, "\n"))
	}
	t.Logf("failed on both: %s; on net/http only: %d", strings.Join(ourFails, "; "), len(theirFails)-len(ourFails))
}
