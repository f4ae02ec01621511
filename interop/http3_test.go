package interop

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/uringrt/uringrt/runtime"
)

// quic-go takes its fast path (batched reads through SyscallConn, ECN and
// packet info in control messages, GSO through WriteMsgUDP) only for a
// PacketConn with these methods.
var _ quic.OOBCapablePacketConn = (*uringrt.PacketConn)(nil)

// testTLS returns a server and a client TLS config sharing a fresh
// self-signed certificate for 127.0.0.1.
func testTLS(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "uringrt test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	server = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	client = &tls.Config{RootCAs: pool}
	return server, client
}

// body is the deterministic content served at /bytes?n=N.
func body(n int) []byte {
	b := make([]byte, n)
	var x uint32 = 2463534242
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

const bigBody = 10 << 20 // 10 MiB

// TestHTTP3OnPacketConn: an http3.Server serves on a uringrt PacketConn; a
// quic-go http3 client fetches a 10 MiB body and checks it byte for byte.
// The client runs on Go's net and, in a second case, on a uringrt
// PacketConn too, and in a third case both receive through the multishot
// recvmsg (Config.UDPRecvMultishot; quic-go then reads through
// PacketConn.ReadBatch). quic-go must take its OOB path on the uringrt
// socket: the server's connection reports GSO in use.
func TestHTTP3OnPacketConn(t *testing.T) {
	for _, c := range []struct {
		name                     string
		clientOnURing, multishot bool
	}{
		{"client=std", false, false},
		{"client=uringrt", true, false},
		{"client=uringrt,multishot", true, true},
	} {
		clientOnURing := c.clientOnURing
		t.Run(c.name, func(t *testing.T) {
			rt := newRuntime(t, c.multishot)
			srvTLS, cliTLS := testTLS(t)
			big := body(bigBody)
			want := sha256.Sum256(big)
			var gso, conns atomic.Int32
			mux := http.NewServeMux()
			mux.HandleFunc("/bytes", func(w http.ResponseWriter, r *http.Request) {
				n, err := strconv.Atoi(r.URL.Query().Get("n"))
				if err != nil || n < 0 || n > len(big) {
					http.Error(w, "bad n", http.StatusBadRequest)
					return
				}
				w.Header().Set("Content-Length", strconv.Itoa(n))
				w.Write(big[:n])
			})
			mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
				io.Copy(w, r.Body)
			})
			pc, err := rt.ListenPacket("udp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := &http3.Server{
				Handler:   mux,
				TLSConfig: http3.ConfigureTLSConfig(srvTLS),
				ConnContext: func(ctx context.Context, c *quic.Conn) context.Context {
					conns.Add(1)
					if c.ConnectionState().GSO {
						gso.Add(1)
					}
					return ctx
				},
			}
			served := make(chan error, 1)
			go func() { served <- srv.Serve(pc) }()
			defer func() {
				srv.Close()
				pc.Close()
				select {
				case <-served:
				case <-time.After(10 * time.Second):
					t.Error("http3 server did not return after Close")
				}
			}()

			tr := &http3.Transport{TLSClientConfig: cliTLS}
			if clientOnURing {
				cpc, err := rt.ListenPacket("udp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				qt := &quic.Transport{Conn: cpc}
				defer cpc.Close()
				defer qt.Close()
				tr.Dial = func(ctx context.Context, addr string, tlsCfg *tls.Config, cfg *quic.Config) (*quic.Conn, error) {
					ua, err := net.ResolveUDPAddr("udp", addr)
					if err != nil {
						return nil, err
					}
					return qt.DialEarly(ctx, ua, tlsCfg, cfg)
				}
			}
			defer tr.Close()
			client := &http.Client{Transport: tr, Timeout: 2 * time.Minute}
			url := "https://" + pc.LocalAddr().String()

			resp, err := client.Get(url + "/bytes?n=" + strconv.Itoa(bigBody))
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatalf("reading the body: %v (%d bytes)", err, len(got))
			}
			if resp.Proto != "HTTP/3.0" || len(got) != bigBody || sha256.Sum256(got) != want {
				t.Fatalf("%s: %d bytes, want %d byte-exact", resp.Proto, len(got), bigBody)
			}
			// An upload echoed back, over the same connection.
			up := big[:1<<20]
			resp, err = client.Post(url+"/echo", "application/octet-stream", bytes.NewReader(up))
			if err != nil {
				t.Fatal(err)
			}
			got, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || !bytes.Equal(got, up) {
				t.Fatalf("echo: %d bytes, err %v", len(got), err)
			}
			if conns.Load() == 0 || gso.Load() != conns.Load() {
				t.Errorf("quic-go used GSO on %d of %d server connections: it did not take its OOB path on the uringrt PacketConn", gso.Load(), conns.Load())
			}
		})
	}
}
