package uringrt

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// patternFile writes size bytes to a temp file, a pattern in which every
// 8-byte word holds its own offset (so a lost, repeated or moved block
// shows), and returns it opened at offset 0 with the content's SHA-256.
func patternFile(t testing.TB, size int64) (*os.File, [32]byte) {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "src"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	h := sha256.New()
	buf := make([]byte, 1<<20)
	for off := int64(0); off < size; {
		n := min(int64(len(buf)), size-off)
		for i := int64(0); i < n; i += 8 {
			w := uint64(off + i)
			for j := int64(0); j < 8 && i+j < n; j++ {
				buf[i+j] = byte(w >> (8 * j))
			}
		}
		if _, err := f.Write(buf[:n]); err != nil {
			t.Fatal(err)
		}
		h.Write(buf[:n])
		off += n
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return f, sum
}

// drainHash reads c to EOF in a goroutine and sends the count and SHA-256.
func drainHash(c net.Conn) <-chan hashResult {
	ch := make(chan hashResult, 1)
	go func() {
		h := sha256.New()
		n, err := io.CopyBuffer(h, readerOnly{c}, make([]byte, 256<<10))
		var r hashResult
		r.n, r.err = n, err
		copy(r.sum[:], h.Sum(nil))
		ch <- r
	}()
	return ch
}

type hashResult struct {
	n   int64
	sum [32]byte
	err error
}

func waitHash(t *testing.T, ch <-chan hashResult) hashResult {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("reader: %v", r.err)
		}
		return r
	case <-time.After(2 * time.Minute):
		t.Fatal("reader did not finish in 2 minutes")
	}
	return hashResult{}
}

// TestSendfileLargeFile: io.Copy from a 192 MiB file to a uringrt Conn
// takes the sendfile path and is byte-exact.
func TestSendfileLargeFile(t *testing.T) {
	size := int64(192 << 20)
	if testing.Short() {
		size = 16 << 20
	}
	f, sum := patternFile(t, size)
	rt := newRT(t, Config{Loops: 1})
	client, server := pair(t, rt, "tcp")
	got := drainHash(client)
	n, err, handled := server.(*Conn).zeroCopyFrom(f)
	if !handled || err != nil || n != size {
		t.Fatalf("zeroCopyFrom = %d, %v, handled %v; want %d, nil, true", n, err, handled, size)
	}
	server.Close()
	r := waitHash(t, got)
	if r.n != size || r.sum != sum {
		t.Fatalf("peer got %d bytes (sha256 match %v), want %d", r.n, r.sum == sum, size)
	}
	// And through io.Copy, as a user calls it (os.File.WriteTo falls
	// back to the destination's ReadFrom).
	f.Seek(0, io.SeekStart)
	client, server = pair(t, rt, "tcp")
	got = drainHash(client)
	if n, err := io.Copy(server, f); err != nil || n != size {
		t.Fatalf("io.Copy = %d, %v; want %d, nil", n, err, size)
	}
	server.Close()
	if r := waitHash(t, got); r.n != size || r.sum != sum {
		t.Fatalf("io.Copy: peer got %d bytes (sha256 match %v), want %d", r.n, r.sum == sum, size)
	}
}

// TestSendfileLimitedReader: io.CopyN (an io.LimitedReader) sends exactly
// N bytes from the file's position, leaves the file after them and lowers
// the reader's N.
func TestSendfileLimitedReader(t *testing.T) {
	f, _ := patternFile(t, 3<<20)
	want, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	rt := newRT(t, Config{Loops: 1})
	client, server := pair(t, rt, "tcp")
	got := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(client); got <- b }()
	f.Seek(1000, io.SeekStart)
	lr := &io.LimitedReader{R: f, N: 1 << 20}
	n, err, handled := server.(*Conn).zeroCopyFrom(lr)
	if !handled || err != nil || n != 1<<20 || lr.N != 0 {
		t.Fatalf("zeroCopyFrom = %d, %v, handled %v, N left %d; want %d, nil, true, 0", n, err, handled, lr.N, 1<<20)
	}
	if n, err := io.CopyN(server, f, 5000); n != 5000 || err != nil {
		t.Fatalf("io.CopyN = %d, %v", n, err)
	}
	if pos, _ := f.Seek(0, io.SeekCurrent); pos != 1000+1<<20+5000 {
		t.Fatalf("file position %d, want %d", pos, 1000+1<<20+5000)
	}
	if n, err, handled := server.(*Conn).zeroCopyFrom(&io.LimitedReader{R: f, N: 0}); n != 0 || err != nil || !handled {
		t.Fatalf("N=0: %d, %v, %v", n, err, handled)
	}
	server.Close()
	b := <-got
	if !bytes.Equal(b, want[1000:1000+1<<20+5000]) {
		t.Fatalf("peer got %d bytes, not the file's bytes 1000..%d", len(b), 1000+1<<20+5000)
	}
}

// TestSpliceConnToConn: io.Copy between two uringrt conns, and between a
// uringrt conn and a *net.TCPConn either way, splices and is byte-exact.
// The sending ends half-close (CloseWrite) and the receiver reads to EOF
// before anything is closed: Linux does not promise that bytes still
// queued when a socket is closed arrive (under TCP memory pressure it
// resets such a socket, TCPAbortOnMemory), but it does deliver them up
// to a FIN.
func TestSpliceConnToConn(t *testing.T) {
	size := int64(96 << 20)
	if testing.Short() {
		size = 8 << 20
	}
	f, sum := patternFile(t, size)
	rt := newRT(t, Config{Loops: 2})
	for _, tc := range []struct {
		name           string
		srcStd, dstStd bool
	}{{"uringrt-to-uringrt", false, false}, {"std-to-uringrt", true, false}, {"uringrt-to-std", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			// feed -> src ... io.Copy(dst, src) ... dst -> sink
			var feed, src, dst, sink net.Conn
			if tc.srcStd {
				feed, src = goClientPair(t, nil)
			} else {
				feed, src = pair(t, rt, "tcp")
			}
			if tc.dstStd {
				dst, sink = goClientPair(t, nil)
			} else {
				dst, sink = pair(t, rt, "tcp")
			}
			if _, ok := rawEndOf(src); !ok {
				t.Fatalf("%T is no splice end", src)
			}
			if _, ok := rawEndOf(dst); !ok {
				t.Fatalf("%T is no splice end", dst)
			}
			got := drainHash(sink)
			fed := make(chan error, 1)
			go func() {
				_, err := io.Copy(writerOnly{feed}, readerOnly{io.NewSectionReader(f, 0, size)})
				feed.(interface{ CloseWrite() error }).CloseWrite()
				fed <- err
			}()
			var n int64
			var err error
			var handled bool
			if tc.srcStd {
				n, err, handled = dst.(*Conn).zeroCopyFrom(src)
			} else {
				n, err, handled = src.(*Conn).spliceTo(dst)
			}
			if !handled || err != nil || n != size {
				t.Fatalf("splice = %d, %v, handled %v; want %d, nil, true", n, err, handled, size)
			}
			if err := <-fed; err != nil {
				t.Fatal(err)
			}
			dst.(interface{ CloseWrite() error }).CloseWrite()
			if r := waitHash(t, got); r.n != size || r.sum != sum {
				t.Fatalf("sink got %d bytes (sha256 match %v), want %d", r.n, r.sum == sum, size)
			}
		})
	}
	t.Run("io.Copy-echo", func(t *testing.T) {
		// The README's echo server, io.Copy(c, c): WriteTo copies through
		// its buffer (no pipe between a socket and itself).
		client, server := pair(t, rt, "tcp")
		done := make(chan error, 1)
		go func() { _, err := io.Copy(server, server); done <- err }()
		got := drainHash(client)
		if _, err := io.Copy(writerOnly{client}, readerOnly{io.NewSectionReader(f, 0, size)}); err != nil {
			t.Fatal(err)
		}
		client.(*Conn).CloseWrite()
		if err := <-done; err != nil {
			t.Fatalf("io.Copy(c, c): %v", err)
		}
		server.(*Conn).CloseWrite()
		if r := waitHash(t, got); r.n != size || r.sum != sum {
			t.Fatalf("echo: got %d bytes (sha256 match %v), want %d", r.n, r.sum == sum, size)
		}
	})
}

// TestSendfileDeadline: a write deadline passing while sendfile waits for
// a peer that does not read ends io.Copy with a timeout error.
func TestSendfileDeadline(t *testing.T) {
	f, _ := patternFile(t, 64<<20)
	rt := newRT(t, Config{Loops: 1})
	_, server := pair(t, rt, "tcp")
	server.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
	res := make(chan error, 1)
	var n int64
	go func() {
		var err error
		n, err = io.Copy(server, f)
		res <- err
	}()
	select {
	case err := <-res:
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("io.Copy err = %v, want a timeout", err)
		}
		var oe *net.OpError
		if !errors.As(err, &oe) || oe.Op != "readfrom" {
			t.Fatalf("io.Copy err = %#v, want a *net.OpError readfrom", err)
		}
		if n <= 0 || n >= 64<<20 {
			t.Fatalf("copied %d bytes before the deadline, want some, not all", n)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("io.Copy did not return 30 s after its deadline")
	}
}

// TestSpliceCloseDuringCopy: Close of the conn a copy waits on ends the
// copy with net.ErrClosed: the source while the copy waits for bytes, the
// destination while it waits for room (conn-to-conn and from a file). As
// with *net.TCPConn, closing the other conn does not wake the copy.
func TestSpliceCloseDuringCopy(t *testing.T) {
	rt := newRT(t, Config{Loops: 2})
	for _, which := range []string{"src", "dst", "file-dst"} {
		t.Run(which, func(t *testing.T) {
			feed, src := pair(t, rt, "tcp")
			dst, _ := pair(t, rt, "tcp") // its peer never reads
			res := make(chan error, 1)
			var copied func() error
			switch which {
			case "file-dst":
				f, _ := patternFile(t, 64<<20)
				copied = func() error { _, err := io.Copy(dst, f); return err }
			case "dst":
				copied = func() error { _, err := io.Copy(dst, src); return err }
				go io.Copy(writerOnly{feed}, readerOnly{io.LimitReader(zeros{}, 64<<20)})
			case "src":
				copied = func() error { _, err := io.Copy(dst, src); return err } // feed sends nothing
			}
			go func() { res <- copied() }()
			// Let the copy get going (it fills the peer's buffers, or finds
			// nothing to read, then waits); Close must wake it either way.
			time.Sleep(100 * time.Millisecond)
			if which == "src" {
				src.Close()
			} else {
				dst.Close()
			}
			select {
			case err := <-res:
				if !errors.Is(err, net.ErrClosed) {
					t.Fatalf("copy err = %v, want net.ErrClosed", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("copy did not return 30 s after Close")
			}
		})
	}
}

type zeros struct{}

func (zeros) Read(b []byte) (int, error) { clear(b); return len(b), nil }

// TestServeFile: net/http's ServeFile on a uringrt listener
// serves a file byte-exact (its response writer hands the body to
// Conn.ReadFrom with an io.LimitedReader of the file).
func TestServeFile(t *testing.T) {
	f, sum := patternFile(t, 24<<20)
	rt := newRT(t, Config{Loops: 1})
	url, _ := startHTTP(t, rt, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, f.Name())
	}))
	client := &http.Client{Transport: &http.Transport{}, Timeout: 2 * time.Minute}
	defer client.CloseIdleConnections()
	for _, rng := range []string{"", "bytes=100-2000100"} {
		req, _ := http.NewRequest("GET", url+"/f", nil)
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		n, err := io.Copy(h, resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if rng == "" {
			if n != 24<<20 || !bytes.Equal(h.Sum(nil), sum[:]) {
				t.Fatalf("GET: %d bytes, sha256 match %v", n, bytes.Equal(h.Sum(nil), sum[:]))
			}
			continue
		}
		want := make([]byte, 2000001)
		f.ReadAt(want, 100)
		if n != int64(len(want)) || !bytes.Equal(h.Sum(nil), sha256Sum(want)) {
			t.Fatalf("range: %d bytes, want %d, content match %v", n, len(want), bytes.Equal(h.Sum(nil), sha256Sum(want)))
		}
	}
}

func sha256Sum(b []byte) []byte { s := sha256.Sum256(b); return s[:] }

// BenchmarkSendfile copies a 1 GiB file (URINGRT_BENCH_FILE_MIB to change)
// to a socket with io.Copy: sendfile on uringrt's Conn and on
// *net.TCPConn; the reader is Go's net in both.
//
//	go test -run X -bench 'Sendfile|SpliceConn' -benchtime 3x ./runtime
func BenchmarkSendfile(b *testing.B) {
	size := benchFileSize()
	f, _ := patternFile(b, size)
	benchUringAndStd(b, func(b *testing.B, rt *Runtime) {
		client, server := goClientPair(b, rt)
		got := discard(client)
		b.SetBytes(size)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			f.Seek(0, io.SeekStart)
			if n, err := io.Copy(server, f); err != nil || n != size {
				b.Fatalf("io.Copy = %d, %v", n, err)
			}
		}
		b.StopTimer()
		server.Close()
		if n := <-got; n != size*int64(b.N) {
			b.Fatalf("reader got %d bytes, want %d", n, size*int64(b.N))
		}
	})
}

// BenchmarkSpliceConn copies 1 GiB from one socket to another with
// io.Copy(dst, src) (splice through a pipe): src and dst from uringrt's
// listener, or both *net.TCPConn. The feeder (sendfile from the file) and
// the reader are Go's net in both.
func BenchmarkSpliceConn(b *testing.B) {
	size := benchFileSize()
	f, _ := patternFile(b, size)
	benchUringAndStd(b, func(b *testing.B, rt *Runtime) {
		feed, src := goClientPair(b, rt)
		sink, dst := goClientPair(b, rt)
		got := discard(sink)
		b.SetBytes(size)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			fed := make(chan error, 1)
			go func() {
				_, err := io.Copy(feed, io.NewSectionReader(f, 0, size))
				fed <- err
			}()
			if n, err := io.Copy(dst, io.LimitReader(src, size)); err != nil || n != size {
				b.Fatalf("io.Copy = %d, %v", n, err)
			}
			if err := <-fed; err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		dst.Close()
		if n := <-got; n != size*int64(b.N) {
			b.Fatalf("reader got %d bytes, want %d", n, size*int64(b.N))
		}
	})
}

// benchUringAndStd runs f as the sub-benchmark "uringrt", with a runtime
// of one loop, and as "std", with rt nil (Go's net).
func benchUringAndStd(b *testing.B, f func(b *testing.B, rt *Runtime)) {
	for _, name := range []string{"uringrt", "std"} {
		b.Run(name, func(b *testing.B) {
			var rt *Runtime
			if name == "uringrt" {
				rt = newRT(b, Config{Loops: 1})
			}
			f(b, rt)
		})
	}
}

func benchFileSize() int64 {
	if v, err := strconv.Atoi(os.Getenv("URINGRT_BENCH_FILE_MIB")); err == nil && v > 0 {
		return int64(v) << 20
	}
	return 1 << 30
}

// pipeFDs counts this process's open pipe descriptors.
func pipeFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && len(l) > 5 && l[:5] == "pipe:" {
			n++
		}
	}
	return n
}

// TestSpliceIdleHoldsNoPipe: a proxy's io.Copy(dst, src) splices a bulk
// burst through a pipe but closes it once src has nothing to read, so idle
// proxied connections cost no descriptors beyond their sockets (10,000 idle
// copies with a pipe each would need 20,000 more).
func TestSpliceIdleHoldsNoPipe(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	before := pipeFDs(t)
	feed, src := pair(t, rt, "tcp")
	dst, sink := pair(t, rt, "tcp")
	done := make(chan error, 1)
	go func() { _, err := io.Copy(dst, src); done <- err }()
	msg := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB: fills the 32 KiB buffer, so splice
	got := make(chan []byte, 1)
	go func() {
		b := make([]byte, len(msg))
		io.ReadFull(sink, b)
		got <- b
	}()
	if _, err := feed.Write(msg); err != nil {
		t.Fatal(err)
	}
	if b := <-got; !bytes.Equal(b, msg) {
		t.Fatal("copied bytes differ")
	}
	// The copy now waits for more: no pipe may be left open.
	deadline := time.Now().Add(10 * time.Second)
	for pipeFDs(t) > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d pipe descriptors open while the copy idles, want %d", pipeFDs(t), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
	feed.(*Conn).CloseWrite()
	if err := <-done; err != nil {
		t.Fatalf("io.Copy: %v", err)
	}
}
