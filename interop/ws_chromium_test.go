package interop

// A headless Chromium page against the interop server, over ws:// and,
// where uringhttp serves TLS, wss:// (a self-signed certificate, which the
// browser is told to accept).

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	uringrt "github.com/uringrt/uringrt/runtime"
	"github.com/uringrt/uringrt/uringhttp"
)

// chromePage opens a websocket to its own origin's /ws, echoes text, binary
// and 1 MiB (with the browser's default permessage-deflate offer), closes
// with 4000 and posts what happened to /result.
const chromePage = `<!doctype html><title>uringws</title><script>
const log = [];
const done = (ok, why) => fetch('/result', {method: 'POST', body: JSON.stringify({ok, why, log})});
const ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/ws');
ws.binaryType = 'arraybuffer';
const big = 'x'.repeat(1 << 20);
const sends = [() => 'hello \u00b5\u4e16', () => new Uint8Array([0, 1, 254, 255]), () => big];
let i = 0, want;
const same = (a, b) => typeof b === 'string' ? a === b :
  a instanceof ArrayBuffer && a.byteLength === b.length && new Uint8Array(a).every((v, k) => v === b[k]);
ws.onopen = () => { log.push('open ' + ws.extensions); want = sends[0](); ws.send(want); };
ws.onmessage = (e) => {
  if (!same(e.data, want)) { done(false, 'echo ' + i + ' differs'); return; }
  log.push('echo ' + i);
  if (++i < sends.length) { want = sends[i](); ws.send(want); } else ws.close(4000, 'done');
};
ws.onclose = (e) => done(e.code === 4000 && i === sends.length, 'close ' + e.code);
ws.onerror = () => log.push('error');
</script>`

type pageResult struct {
	OK  bool
	Why string
	Log []string
}

// pageHandlers serve the page and take its result.
func pageHandlers(results chan<- pageResult) map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"/page": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, chromePage)
		},
		"/result": func(w http.ResponseWriter, r *http.Request) {
			var res pageResult
			json.NewDecoder(r.Body).Decode(&res)
			select {
			case results <- res:
			default:
			}
		},
	}
}

// runChromium opens page in a headless Chromium and waits for its result.
func runChromium(t *testing.T, page string, results <-chan pageResult, extra ...string) {
	bin, err := exec.LookPath("chromium")
	needPeer(t, err == nil, "chromium (apt-get install chromium)")
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + filepath.Join(t.TempDir(), "profile")}, extra...)
	cmd := exec.Command(bin, append(args, page)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	}()
	select {
	case res := <-results:
		if !res.OK || len(res.Log) == 0 || !strings.Contains(res.Log[0], "permessage-deflate") {
			t.Fatalf("chromium page: %+v (want every echo, close 4000, permessage-deflate)", res)
		}
		t.Logf("chromium: %v", res.Log)
	case <-time.After(120 * time.Second):
		t.Fatal("no result from the chromium page in 120 s")
	}
}

func TestWSChromium(t *testing.T) {
	results := make(chan pageResult, 1)
	base := wsEcho(t, pageHandlers(results))
	runChromium(t, "http"+strings.TrimPrefix(base, "ws")+"/page", results)
}

// tlsServer is uringhttp's Server once it serves TLS.
type tlsServer interface {
	ServeTLS(ln net.Listener, certFile, keyFile string) error
}

func TestWSChromiumTLS(t *testing.T) {
	rt, err := uringrt.New(uringrt.Config{Loops: 2, Backend: uringrt.BackendUring})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	results := make(chan pageResult, 1)
	srv := &uringhttp.Server{Handler: wsHandler(pageHandlers(results)), Runtime: rt, ErrorLog: log.New(io.Discard, "", 0)}
	ts, ok := any(srv).(tlsServer)
	if !ok {
		t.Skip("uringhttp.Server has no ServeTLS in this build: wss:// not tested")
	}
	cert, key := selfSigned(t)
	ln, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go ts.ServeTLS(ln, cert, key)
	defer srv.Close()
	runChromium(t, "https://"+ln.Addr().String()+"/page", results, "--ignore-certificate-errors")
}

// selfSigned writes an ECDSA P-256 certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T) (certFile, keyFile string) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(k)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return certFile, keyFile
}
