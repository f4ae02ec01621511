package uringrt

import (
	"errors"
	"math/rand"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// toxicProxy puts a Toxiproxy proxy (in-process) between clients and
// upstream and returns it started; t.Cleanup stops it.
func toxicProxy(t *testing.T, upstream string, toxics ...string) *toxiproxy.Proxy {
	t.Helper()
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, "urt-"+strings.ReplaceAll(t.Name(), "/", "-"), "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	for _, js := range toxics {
		if _, err := p.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
			t.Fatalf("toxic %s: %v", js, err)
		}
	}
	return p
}

// TestToxiproxyFaults puts a fault proxy (github.com/Shopify/toxiproxy/v2,
// in-process) between Go's net clients and the echo server, for the
// callback API and the net.Conn API under every pollable policy: latency
// with jitter both ways and tiny segments (7 +/- 5 bytes) echo every byte
// once and in order, and the runtime's own dialed conn's read deadline
// fires on time behind the latency; a slow close (500 ms) still lets
// Shutdown finish within its bound; connections reset by the proxy mid-echo
// deliver an in-order prefix and leave no descriptor behind.
func TestToxiproxyFaults(t *testing.T) {
	faults := []struct {
		name   string
		toxics []string
	}{
		{"latency-jitter", []string{
			`{"name":"down","type":"latency","stream":"downstream","attributes":{"latency":20,"jitter":15}}`,
			`{"name":"up","type":"latency","stream":"upstream","attributes":{"latency":20,"jitter":15}}`,
		}},
		{"tiny-segments", []string{
			`{"name":"down","type":"slicer","stream":"downstream","attributes":{"average_size":7,"size_variation":5,"delay":20}}`,
			`{"name":"up","type":"slicer","stream":"upstream","attributes":{"average_size":7,"size_variation":5,"delay":20}}`,
		}},
		{"slow-close", []string{
			`{"name":"down","type":"slow_close","stream":"downstream","attributes":{"delay":500}}`,
			`{"name":"up","type":"slow_close","stream":"upstream","attributes":{"delay":500}}`,
		}},
		{"reset", []string{
			`{"name":"slow","type":"latency","stream":"downstream","attributes":{"latency":40}}`,
			`{"name":"up","type":"reset_peer","stream":"upstream","attributes":{"timeout":150}}`,
		}},
	}
	for _, f := range faults {
		for _, s := range faultServers() {
			t.Run(f.name+"/"+s.name, func(t *testing.T) {
				toxicCase(t, s, f.name, f.toxics)
			})
		}
	}
}

func toxicCase(t *testing.T, s faultServer, fault string, toxics []string) {
	const conns, size = 3, 64 << 10
	fds0 := countFDs(t)
	srv := startFaultEcho(t, s, func(rt *Runtime) (net.Listener, error) { return rt.Listen("tcp", "127.0.0.1:0") })
	defer srv.abort()
	rt, ln := srv.rt, srv.ln
	p := toxicProxy(t, ln.Addr().String(), toxics...)
	errs := make(chan error, conns)
	var nreset int
	var mu sync.Mutex
	for i := 0; i < conns; i++ {
		c, err := net.DialTimeout("tcp", p.Listen, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		go func() {
			err := relEchoCheck(c, size, time.Minute, rand.New(rand.NewSource(int64(i))))
			if fault == "reset" && err != nil && !strings.Contains(err.Error(), "of the stream is") {
				// The proxy resets the connection 150 ms into the echo:
				// what arrived must still be an in-order prefix (a wrong
				// byte fails relCheckPattern); the reset itself is the
				// fault under test.
				mu.Lock()
				nreset++
				mu.Unlock()
				err = nil
			}
			errs <- err
			c.Close()
		}()
	}
	if fault == "latency-jitter" {
		// The runtime's own conn behind the latency: its read deadline
		// fires on time.
		own, err := rt.Dial("tcp", p.Listen)
		if err != nil {
			t.Fatal(err)
		}
		const deadline = 200 * time.Millisecond
		start := time.Now()
		own.SetReadDeadline(start.Add(deadline))
		_, rerr := own.Read(make([]byte, 1))
		if took := time.Since(start); !errors.Is(rerr, os.ErrDeadlineExceeded) || took < deadline || took > deadline+3*time.Second {
			t.Errorf("own conn Read: %v after %v, want a deadline error after %v", rerr, took, deadline)
		}
		own.Close()
	}
	for i := 0; i < conns; i++ {
		if err := <-errs; err != nil {
			t.Errorf("echo: %v", err)
		}
	}
	if fault == "reset" && nreset == 0 {
		t.Errorf("no connection was reset mid-echo: the fault did not happen")
	}
	srv.stop(t)
	p.Stop()
	waitFDs(t, fds0)
}
