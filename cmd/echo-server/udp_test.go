package main

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// freeUDPPort returns a loopback UDP address nothing is bound to right now.
func freeUDPPort(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	return pc.LocalAddr().String()
}

// TestServeUDP: echo-server -network udp echoes datagrams (each one whole,
// to its sender), counts them in the udp metrics and exits 0 on SIGTERM.
func TestServeUDP(t *testing.T) {
	for _, multishot := range []string{"false", "true"} {
		t.Run("udp-multishot="+multishot, func(t *testing.T) { testServeUDP(t, "-udp-multishot="+multishot) })
	}
}

func testServeUDP(t *testing.T, extra ...string) {
	if testing.Short() {
		t.Skip("builds and runs the echo-server binary; skipped with -short")
	}
	bin, err := buildServer()
	if err != nil {
		t.Fatal(err)
	}
	s := &server{addr: freeUDPPort(t), metric: freePort(t)}
	s.start(t, append([]string{bin, "-network", "udp", "-backend", "uring", "-addr", s.addr, "-metrics-addr", s.metric}, extra...)...)
	// The metrics port accepts once the UDP socket is bound (both happen
	// before the server logs that it listens).
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(s.stderr.String(), "echo-server listening") {
		if time.Now().After(deadline) {
			t.Fatalf("echo-server not listening after 10s; stderr:\n%s", s.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	c, err := net.Dial("udp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const msgs = 20
	sent := 0
	buf := make([]byte, 2048)
	for i := 0; i < msgs; i++ {
		msg := bytes.Repeat([]byte(fmt.Sprintf("datagram %d;", i)), i+1)
		// UDP: resend on a lost datagram (loopback rarely loses one).
		for try := 0; ; try++ {
			if _, err := c.Write(msg); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(time.Second))
			n, err := c.Read(buf)
			if err == nil {
				if !bytes.Equal(buf[:n], msg) {
					t.Fatalf("echo of datagram %d: %q", i, buf[:n])
				}
				sent += len(msg)
				break
			}
			if try == 4 {
				t.Fatalf("datagram %d: no echo after 5 tries: %v; stderr:\n%s", i, err, s.stderr.String())
			}
		}
	}
	// The server counts a datagram sent once its sendmsg(2) returns, so the
	// echo can reach us, and our scrape the server, before the writing
	// goroutine has counted it (a stress run under CPU hogs saw the last
	// datagram's 240 bytes missing): scrape until the counts catch up.
	var got, gotBytes float64
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		text := scrape(t, s.metric)
		got, _ = sample(text, "uringrt_udp_received_datagrams_total")
		gotBytes, _ = sample(text, "uringrt_udp_sent_bytes_total")
		if (got >= msgs && gotBytes >= float64(sent)) || time.Now().After(deadline) {
			break
		}
	}
	if got < msgs {
		t.Errorf("uringrt_udp_received_datagrams_total = %v, want >= %d", got, msgs)
	}
	if gotBytes < float64(sent) {
		t.Errorf("uringrt_udp_sent_bytes_total = %v, want >= %d", gotBytes, sent)
	}
	s.stop(t)
}

func TestBadNetworkFlag(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-network", "sctp"}, &stdout, &stderr); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	oneLine(t, stderr.String(), "sctp")
}
