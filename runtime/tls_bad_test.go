package uringrt

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestTLSGutsLayout fails loudly when crypto/tls's Conn no longer has the
// buffers the loop takes back (rawInput, input, hand): the runtime then
// keeps them as crypto/tls does (correct, but an idle connection holds
// them), and tls_guts.go needs a look. It also checks that after an
// exchange an established connection holds none of them.
func TestTLSGutsLayout(t *testing.T) {
	if !tlsGuts.ok {
		t.Fatal("crypto/tls.Conn's rawInput/input/hand fields are not found with their types: idle TLS connections now keep crypto/tls's buffers (see tls_guts.go)")
	}
	rt := newRT(t, Config{Loops: 1})
	scfg, ccfg := tlsServerConfig(t)
	caps := make(chan [3]int, 1)
	h := tlsEcho(scfg, 10*time.Second, nil)
	h.Data = func(c *CallbackConn, d []byte) {
		c.Write(d)
		c.AfterFunc(time.Millisecond, func(c *CallbackConn) { // after the batch of records
			tc := c.tlsSt().tc
			select {
			case caps <- [3]int{tlsRawInput(tc).Cap(), tlsHand(tc).Cap(), int(tlsInput(tc).Size())}:
			default: // (one OnData per batch of records: the first tells)
			}
		})
	}
	ln := serveCB(t, rt, h)
	cc, err := tls.Dial("tcp", ln.Addr().String(), ccfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	cc.Write([]byte(strings.Repeat("m", 20000))) // records of several sizes
	select {
	case got := <-caps:
		if got != [3]int{} {
			t.Fatalf("idle connection keeps crypto/tls buffers: rawInput cap %d, hand cap %d, input size %d", got[0], got[1], got[2])
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no OnData")
	}
}

// rawTLSPair dials ln, completes a TLS handshake with Go's client, and
// returns the raw TCP conn (to write bytes under the TLS layer) and the
// TLS client.
func rawTLSPair(t *testing.T, ln net.Listener, ccfg *tls.Config) (net.Conn, *tls.Conn) {
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	tc := tls.Client(raw, ccfg)
	tc.SetDeadline(time.Now().Add(20 * time.Second))
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	return raw, tc
}

func waitTLSClose(t *testing.T, closed chan error) error {
	t.Helper()
	select {
	case err := <-closed:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("no OnClose")
		return nil
	}
}

// TestTLSBadRecords: a record header claiming more than a record may hold
// (before and after the handshake) is refused by crypto/tls with its
// record_overflow alert and the connection closed; a record cut by the
// peer's FIN closes it with io.ErrUnexpectedEOF; nothing is leaked.
func TestTLSBadRecords(t *testing.T) {
	for _, b := range tlsBackends {
		t.Run(b.name, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			rt, err := New(b.cfg)
			if err != nil {
				t.Fatal(err)
			}
			scfg, ccfg := tlsServerConfig(t)
			closed := make(chan error, 4)
			ln, err := rt.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go rt.Serve(ln, tlsEcho(scfg, 10*time.Second, closed))

			// An oversized first record: crypto/tls's alert (21, fatal, 22 record_overflow).
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			c.Write([]byte{22, 3, 1, 0xff, 0xff})
			c.SetReadDeadline(time.Now().Add(20 * time.Second))
			got, _ := io.ReadAll(c)
			c.Close()
			if !bytes.Equal(got, []byte{21, 3, 1, 0, 2, 2, 22}) && !bytes.Equal(got, []byte{21, 3, 3, 0, 2, 2, 22}) {
				t.Fatalf("answer to an oversized ClientHello record: %v", got)
			}
			var re tls.RecordHeaderError
			if err := waitTLSClose(t, closed); !errors.As(err, &re) || !strings.Contains(re.Msg, "oversized") {
				t.Fatalf("OnClose: %v", err)
			}

			// An oversized record after the handshake.
			raw, tc := rawTLSPair(t, ln, ccfg)
			raw.Write([]byte{23, 3, 3, 0xff, 0xff})
			if _, err := tc.Read(make([]byte, 10)); err == nil || !strings.Contains(err.Error(), "record overflow") {
				t.Fatalf("client read after an oversized record: %v", err)
			}
			if err := waitTLSClose(t, closed); !errors.As(err, &re) {
				t.Fatalf("OnClose: %v", err)
			}

			// A record cut short by the FIN.
			raw, _ = rawTLSPair(t, ln, ccfg)
			raw.Write([]byte{23, 3, 3, 0, 100, 1, 2, 3})
			raw.(*net.TCPConn).CloseWrite()
			if err := waitTLSClose(t, closed); err != io.ErrUnexpectedEOF {
				t.Fatalf("OnClose after a truncated record: %v", err)
			}
			ln.Close()
			rt.Close()
			var leak error
			relWaitFor(10*time.Second, func() bool { leak = goleak.Find(ignore); return leak == nil })
			if leak != nil {
				t.Fatal(leak)
			}
		})
	}
}

// TestTLSTrickledHellos: ClientHellos trickled a byte at a time on many
// connections start no goroutine (the handshake starts only once the
// record is whole), hold only their bytes, and are all closed at the
// handshake timeout.
func TestTLSTrickledHellos(t *testing.T) {
	trickleHellos(t, 200, 20*time.Millisecond, 600*time.Millisecond)
}

// TestTLSTrickledHellosHeavy is TestTLSTrickledHellos at scale: 9,000
// ClientHellos a byte a second (client and server in this process: 9,000
// is what the 20,000-descriptor limit leaves), a 5 s handshake timeout.
func TestTLSTrickledHellosHeavy(t *testing.T) {
	if os.Getenv("URINGRT_TLS_HEAVY") == "" {
		t.Skip("set URINGRT_TLS_HEAVY=1 (9,000 connections; .ci/run does, without -race)")
	}
	trickleHellos(t, 9000, time.Second, 5*time.Second)
}

// trickleHellos runs n connections that each send the start of a real
// ClientHello a byte every gap, against a handshake timeout of timeout.
func trickleHellos(t *testing.T, n int, gap, timeout time.Duration) {
	raiseNOFILE(t, uint64(n)+200)
	rt := newRT(t, Config{Loops: 1})
	scfg, ccfg := tlsServerConfig(t)
	var closedN, timedOut atomic.Int64
	h := tlsEcho(scfg, timeout, nil)
	h.Close = func(c *CallbackConn, err error) {
		closedN.Add(1)
		if errors.Is(err, ErrTLSHandshakeTimeout) {
			timedOut.Add(1)
		}
	}
	ln := serveCB(t, rt, h)
	hello := clientHello(t, ccfg)
	base := runtime.NumGoroutine()
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var maxG atomic.Int64
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			for j := 0; j < len(hello)-1; j++ {
				if _, err := c.Write(hello[j : j+1]); err != nil {
					return // closed at the timeout
				}
				select {
				case <-stop:
					return
				case <-time.After(gap):
				}
			}
		}()
	}
	deadline := time.Now().Add(timeout / 2)
	for time.Now().Before(deadline) {
		if g := int64(runtime.NumGoroutine() - base - n); g > maxG.Load() {
			maxG.Store(g)
		}
		time.Sleep(10 * time.Millisecond)
	}
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	if per := (int64(ms1.HeapInuse) - int64(ms0.HeapInuse)) / int64(n); per > 16<<10 {
		t.Errorf("%d heap bytes per trickling connection (client and server), over 16 KiB", per)
	}
	if !relWaitFor(60*time.Second, func() bool { return closedN.Load() == int64(n) }) {
		t.Fatalf("%d of %d trickling connections closed", closedN.Load(), n)
	}
	close(stop)
	wg.Wait()
	if timedOut.Load() != int64(n) {
		t.Fatalf("%d of %d closed with ErrTLSHandshakeTimeout", timedOut.Load(), n)
	}
	if g := maxG.Load(); g > 20 {
		t.Fatalf("%d goroutines beyond the clients' while %d ClientHellos trickled", g, n)
	}
}

// clientHello returns the first flight of Go's TLS client (a ClientHello
// record).
func clientHello(t *testing.T, ccfg *tls.Config) []byte {
	a, b := net.Pipe()
	go tls.Client(a, ccfg).Handshake()
	buf := make([]byte, 64<<10)
	b.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := io.ReadAtLeast(b, buf, 5)
	if err != nil {
		t.Fatal(err)
	}
	for n < 5+recordLen(buf) {
		m, err := b.Read(buf[n:])
		if err != nil {
			t.Fatal(err)
		}
		n += m
	}
	a.Close()
	b.Close()
	return buf[:5+recordLen(buf)]
}
