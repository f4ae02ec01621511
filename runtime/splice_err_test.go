package uringrt

import (
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestSpliceErrorNamesBothConns: a proxy's io.Copy(dst, src) that fails
// because the client reset src says what Go's net says for two
// *net.TCPConn, with the same shape and the roles' addresses in the same
// places ("writeto tcp SRC: readfrom tcp DST: splice: connection reset by
// peer"). Before, the error named only src.
func TestSpliceErrorNamesBothConns(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	want := proxyResetError(t, nil)
	got := proxyResetError(t, rt)
	if got != want {
		t.Fatalf("uringrt proxy error:\n\t%s\nGo's net:\n\t%s", got, want)
	}
	t.Logf("both: %s", got)
}

// proxyResetError runs io.Copy(dst, src) between a proxy's two
// connections (rt's, or Go's net with rt nil) until the client resets,
// and returns the error with each address replaced by its role.
func proxyResetError(t *testing.T, rt *Runtime) string {
	client, src := goClientPair(t, rt)
	var dst, backend net.Conn
	if rt != nil {
		dst, backend = pair(t, rt, "tcp")
	} else {
		dst, backend = goClientPair(t, nil)
	}
	var got atomic.Int64
	go func() {
		b := make([]byte, 64<<10)
		for {
			n, err := backend.Read(b)
			got.Add(int64(n))
			if err != nil {
				return
			}
		}
	}()
	done := make(chan error, 1)
	go func() { _, err := io.Copy(dst, src); done <- err }()
	const size = 1 << 20
	if _, err := client.Write(make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(10 * time.Second); got.Load() < size; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("backend got %d of %d bytes after 10 s", got.Load(), size)
		}
	}
	setLinger0(t, client)
	client.Close() // an RST: src's next read fails with ECONNRESET
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("io.Copy still running 10 s after the client's reset")
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("io.Copy: %v, want ECONNRESET", err)
	}
	return strings.NewReplacer(
		src.LocalAddr().String(), "SRC_LOCAL", src.RemoteAddr().String(), "SRC_REMOTE",
		dst.LocalAddr().String(), "DST_LOCAL", dst.RemoteAddr().String(), "DST_REMOTE",
	).Replace(err.Error())
}
