package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
)

// startUDPEcho runs a Go net UDP echo server for the test.
func startUDPEcho(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 65536)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			pc.WriteTo(buf[:n], from)
		}
	}()
	t.Cleanup(func() { pc.Close(); <-done })
	return pc.LocalAddr().String()
}

// TestRunUDP: -network udp runs ping-pong over connected UDP sockets, on
// uringrt PacketConns (-engine uring) and on Go's net (-engine net).
func TestRunUDP(t *testing.T) {
	addr := startUDPEcho(t)
	for _, args := range [][]string{
		{"-engine", "uring"},
		{"-engine", "net"},
		{"-engine", "uring", "-s", "1400", "-depth", "2"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			cfg := testConfig(t, addr, append([]string{"-network", "udp"}, args...)...)
			if code := run(context.Background(), cfg, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
			}
			m := parseSummary(t, strings.TrimSpace(stdout.String()))
			if m["tps"] <= 0 || m["errors"] != 0 || m["conns"] != 10 {
				t.Errorf("summary %q: want tps>0 errors=0 conns=10", stdout.String())
			}
		})
	}
}

func TestUDPFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-network", "sctp"},
		{"-network", "udp", "-s", "70000"},
	} {
		if _, err := parseFlags(args, new(bytes.Buffer)); !errors.Is(err, errUsage) {
			t.Errorf("parseFlags(%q) = %v, want errUsage", args, err)
		}
	}
}
