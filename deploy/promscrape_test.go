package deploy

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPrometheusScrape runs scripts/prom-scrape.sh: a real Prometheus
// scrapes a real echo-server (built here) after echo traffic, and the
// script checks through Prometheus's query API that the target is up and
// uringrt_cqes_reaped_total, the histograms and the Go/process collectors
// arrived. Without a prometheus binary it skips, or fails when
// REQUIRE_PROMETHEUS=1 (CI installs it: apt-get install -y prometheus).
func TestPrometheusScrape(t *testing.T) {
	if _, err := exec.LookPath("prometheus"); err != nil {
		if os.Getenv("REQUIRE_PROMETHEUS") == "1" {
			t.Fatal("REQUIRE_PROMETHEUS=1 but no prometheus binary on PATH (apt-get install -y prometheus)")
		}
		t.Skip("prometheus not installed; set REQUIRE_PROMETHEUS=1 to make this a failure")
	}
	if testing.Short() {
		t.Skip("builds binaries and runs Prometheus; skipped with -short")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to build the echo-server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	if dl, ok := t.Deadline(); ok {
		ctx, cancel = context.WithDeadline(context.Background(), dl.Add(-10*time.Second))
	}
	defer cancel()

	dir := t.TempDir()
	server, client := filepath.Join(dir, "echo-server"), filepath.Join(dir, "echo-client")
	for bin, pkg := range map[string]string{server: "../cmd/echo-server", client: "../cmd/echo-client"} {
		out, err := exec.CommandContext(ctx, gobin, "build", "-o", bin, pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}

	script, err := filepath.Abs("../scripts/prom-scrape.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "bash", script, server)
	cmd.Env = append(os.Environ(), "ECHO_CLIENT_BIN="+client, "PROM_SCRAPE_TIMEOUT=30", "REQUIRE_PROMETHEUS=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// On timeout, TERM lets the script's trap stop Prometheus and the
	// server; KILL follows if it does not exit.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	start := time.Now()
	err = cmd.Run()
	t.Logf("scripts/prom-scrape.sh (%v):\n%s", time.Since(start).Round(time.Millisecond), out.String())
	if err != nil {
		t.Fatalf("scripts/prom-scrape.sh: %v", err)
	}
	for _, want := range []string{`up{job="uringrt"} = 1`, "uringrt_backend_info backend = ", "ok: Prometheus scraped the echo-server"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
