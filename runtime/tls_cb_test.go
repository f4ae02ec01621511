package uringrt

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uringrt/uringrt/internal/testcert"
	"github.com/uringrt/uringrt/runtime/experiment"
)

// tlsBackends are the runtimes the callback TLS tests run on.
var tlsBackends = []struct {
	name string
	cfg  Config
}{
	{"uring", Config{Loops: 1}},
	{"uring-nobufring", Config{Loops: 1, Switches: experiment.Switches{DisableMultishot: true, DisableBufRing: true}}},
	{"std", Config{Backend: BackendStd}},
}

func tlsServerConfig(t testing.TB) (*tls.Config, *tls.Config) {
	cert, pool := testcert.New(t)
	return &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"echo"}},
		&tls.Config{RootCAs: pool, ServerName: "localhost", NextProtos: []string{"echo"}}
}

// tlsEcho is a callback handler that starts TLS in OnOpen and echoes the
// plaintext; closed gets OnClose's error.
func tlsEcho(cfg *tls.Config, timeout time.Duration, closed chan error) HandlerFuncs {
	return HandlerFuncs{
		Open: func(c *CallbackConn) {
			if err := c.StartTLS(cfg, timeout); err != nil {
				panic(err)
			}
		},
		Data: func(c *CallbackConn, d []byte) { c.Write(d) },
		Close: func(c *CallbackConn, err error) {
			if closed != nil {
				closed <- err
			}
		},
	}
}

// TestCallbackTLSEcho: a Go TLS client (1.2 and 1.3) gets its lines back
// from a callback echo over TLS, small and several records long; ALPN and
// the connection state are seen by the server; the client's close_notify
// ends the connection with io.EOF.
func TestCallbackTLSEcho(t *testing.T) {
	for _, b := range tlsBackends {
		for _, vers := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
			t.Run(fmt.Sprintf("%s/%x", b.name, vers), func(t *testing.T) {
				rt := newRT(t, b.cfg)
				scfg, ccfg := tlsServerConfig(t)
				ccfg.MaxVersion = vers
				closed := make(chan error, 1)
				states := make(chan tls.ConnectionState, 1)
				h := tlsEcho(scfg, 10*time.Second, closed)
				h.TLSHandshake = func(c *CallbackConn, err error) {
					if err != nil {
						t.Errorf("handshake: %v", err)
						return
					}
					st, ok := c.TLSConnectionState()
					if !ok {
						t.Errorf("TLSConnectionState not ok after the handshake")
					}
					states <- st
				}
				ln := serveCB(t, rt, h)
				cc := dialTLS(t, ln, ccfg, 20*time.Second)
				st := <-states
				if st.Version != vers || st.NegotiatedProtocol != "echo" {
					t.Fatalf("server state: version %x alpn %q", st.Version, st.NegotiatedProtocol)
				}
				br := bufio.NewReader(cc)
				for _, n := range []int{1, 100, 5000, 40000, 100000} {
					line := strings.Repeat("x", n) + "\n"
					go cc.Write([]byte(line))
					got, err := br.ReadString('\n')
					if err != nil || got != line {
						t.Fatalf("echo of %d bytes: %d bytes, %v", n, len(got), err)
					}
				}
				cc.Close()
				select {
				case err := <-closed:
					if err != nil && err != io.EOF {
						t.Fatalf("OnClose: %v", err)
					}
				case <-time.After(20 * time.Second):
					t.Fatal("no OnClose after the client's close")
				}
			})
		}
	}
}

// TestCallbackTLSWriteOrder: records written by many goroutines at once
// (AsyncWrite and Write from off the loop) and by OnData on the loop,
// with writes queued before the handshake completed, all reach a Go TLS
// client intact (a record out of its sealing order fails its MAC) and in
// each writer's order.
func TestCallbackTLSWriteOrder(t *testing.T) {
	const writers, msgs = 8, 300
	for _, b := range tlsBackends {
		t.Run(b.name, func(t *testing.T) {
			rt := newRT(t, b.cfg)
			scfg, ccfg := tlsServerConfig(t)
			var wg sync.WaitGroup
			h := HandlerFuncs{
				Open: func(c *CallbackConn) {
					if err := c.StartTLS(scfg, 10*time.Second); err != nil {
						panic(err)
					}
					for w := 0; w < writers; w++ {
						wg.Add(1)
						go func() {
							defer wg.Done()
							for i := 0; i < msgs; i++ {
								msg := fmt.Sprintf("w%d %d %s\n", w, i, strings.Repeat("p", i%97))
								var err error
								if i%2 == 0 {
									_, err = c.AsyncWrite([]byte(msg))
								} else {
									_, err = c.Write([]byte(msg))
								}
								if err != nil {
									t.Errorf("write: %v", err)
									return
								}
							}
						}()
					}
				},
				Data: func(c *CallbackConn, d []byte) {
					for range d {
						c.Write([]byte("loop\n"))
					}
				},
			}
			ln := serveCB(t, rt, h)
			cc := dialTLS(t, ln, ccfg, 30*time.Second)
			go func() {
				for i := 0; i < 50; i++ {
					cc.Write([]byte("ab"))
				}
			}()
			next := make([]int, writers)
			loops := 0
			br := bufio.NewReader(cc)
			for loops < 100 || sum(next) < writers*msgs {
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatalf("after %d loop lines and %v: %v", loops, next, err)
				}
				if line == "loop\n" {
					loops++
					continue
				}
				var w, i int
				if _, err := fmt.Sscanf(line, "w%d %d", &w, &i); err != nil || w >= writers {
					t.Fatalf("bad line %q", line)
				}
				if i != next[w] {
					t.Fatalf("writer %d: message %d after %d", w, i, next[w]-1)
				}
				next[w]++
			}
			wg.Wait()
		})
	}
}

func sum(s []int) (n int) {
	for _, v := range s {
		n += v
	}
	return n
}

// TestCallbackTLSFraming: Peek and Next work on plaintext: length-prefixed
// frames split across records and receives come back whole.
func TestCallbackTLSFraming(t *testing.T) {
	for _, b := range tlsBackends {
		t.Run(b.name, func(t *testing.T) {
			rt := newRT(t, b.cfg)
			scfg, ccfg := tlsServerConfig(t)
			h := HandlerFuncs{
				Open: func(c *CallbackConn) { c.StartTLS(scfg, 10*time.Second) },
				Data: func(c *CallbackConn, _ []byte) {
					for {
						hdr, err := c.Peek(4)
						if err != nil {
							return
						}
						n := int(binary.BigEndian.Uint32(hdr))
						frame, err := c.Next(4 + n)
						if err != nil {
							return
						}
						c.Write(frame)
					}
				},
			}
			ln := serveCB(t, rt, h)
			cc := dialTLS(t, ln, ccfg, 20*time.Second)
			for _, n := range []int{0, 3, 16380, 70000} {
				frame := make([]byte, 4+n)
				binary.BigEndian.PutUint32(frame, uint32(n))
				for i := range n {
					frame[4+i] = byte(i)
				}
				go func() {
					for i := 0; i < len(frame); i += 1000 { // many small records
						cc.Write(frame[i:min(i+1000, len(frame))])
					}
				}()
				got := make([]byte, len(frame))
				if _, err := io.ReadFull(cc, got); err != nil || string(got) != string(frame) {
					t.Fatalf("frame of %d: %v", n, err)
				}
			}
		})
	}
}

// TestCallbackTLSHandshakeTimeout: a client that sends nothing, or part
// of a ClientHello, is closed at the handshake timeout (OnClose gets
// ErrTLSHandshakeTimeout) and no handshake goroutine was started for it.
func TestCallbackTLSHandshakeTimeout(t *testing.T) {
	for _, b := range tlsBackends {
		t.Run(b.name, func(t *testing.T) {
			rt := newRT(t, b.cfg)
			scfg, _ := tlsServerConfig(t)
			closed := make(chan error, 2)
			ln := serveCB(t, rt, tlsEcho(scfg, 300*time.Millisecond, closed))
			for _, send := range [][]byte{nil, {22, 3, 1, 2, 0, 1, 0}} {
				if _, err := sendReadAll(t, ln.Addr().String(), send); err != nil && !isReset(err) {
					t.Fatalf("after %d bytes: %v", len(send), err)
				}
				if err := waitTLSClose(t, closed); !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatalf("OnClose: %v", err)
				}
			}
		})
	}
}

// dialTLS dials ln with Go's TLS client, its deadline d from now; the
// conn is closed when the test ends.
func dialTLS(t *testing.T, ln net.Listener, ccfg *tls.Config, d time.Duration) *tls.Conn {
	t.Helper()
	cc, err := tls.Dial("tcp", ln.Addr().String(), ccfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	cc.SetDeadline(time.Now().Add(d))
	return cc
}

// sendReadAll dials addr in the clear, writes send and reads until the
// server closes (20 s at most); the conn is closed when the test ends.
func sendReadAll(t *testing.T, addr string, send []byte) ([]byte, error) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.Write(send)
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	return io.ReadAll(c)
}

func isReset(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "reset") || errors.Is(err, net.ErrClosed))
}

// TestCallbackTLSGarbage: a plaintext HTTP request instead of a
// ClientHello fails the handshake with crypto/tls's RecordHeaderError, on
// the loop; the handler may answer it in the clear; the connection closes.
func TestCallbackTLSGarbage(t *testing.T) {
	for _, b := range tlsBackends {
		t.Run(b.name, func(t *testing.T) {
			rt := newRT(t, b.cfg)
			scfg, _ := tlsServerConfig(t)
			closed := make(chan error, 1)
			h := tlsEcho(scfg, 10*time.Second, closed)
			h.TLSHandshake = func(c *CallbackConn, err error) {
				var re tls.RecordHeaderError
				if errors.As(err, &re) && string(re.RecordHeader[:]) == "GET /" {
					c.Write([]byte("HTTP/1.0 400 Bad Request\r\n\r\n"))
				}
			}
			ln := serveCB(t, rt, h)
			got, _ := sendReadAll(t, ln.Addr().String(), []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
			if !strings.HasPrefix(string(got), "HTTP/1.0 400") {
				t.Fatalf("answer %q", got)
			}
			var re tls.RecordHeaderError
			if err := waitTLSClose(t, closed); !errors.As(err, &re) {
				t.Fatalf("OnClose: %v", err)
			}
		})
	}
}

// goroutines returns the number of goroutines once it stops falling.
func goroutines() int {
	n := runtime.NumGoroutine()
	for i := 0; i < 50; i++ {
		time.Sleep(20 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m >= n {
			return m
		}
		n = m
	}
	return n
}
