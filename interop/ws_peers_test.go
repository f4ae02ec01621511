package interop

// WebSocket peers that are not Go, against the interop server: node's ws
// (npm, installed by `npm ci` in interop/node), python3-websockets
// (Debian's, run by /usr/bin/python3) and a headless Chromium page. Each
// skips, naming what it needs, when that is absent, and fails instead under
// URINGRT_REQUIRE_WS_PEERS=1 (CI).

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func needPeer(t *testing.T, ok bool, what string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("URINGRT_REQUIRE_WS_PEERS") != "" {
		t.Fatalf("%s is missing and URINGRT_REQUIRE_WS_PEERS is set", what)
	}
	t.Skipf("%s is missing (set URINGRT_REQUIRE_WS_PEERS=1 to fail instead)", what)
}

// runPeer runs a peer script once per deflate setting; it prints OK.
func runPeer(t *testing.T, base string, argv ...string) {
	for _, deflate := range []string{"0", "1"} {
		t.Run(map[string]string{"0": "plain", "1": "deflate"}[deflate], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, argv[0], append(argv[1:], base, deflate)...).CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "OK" {
				t.Fatalf("%v: %v\n%s", argv, err, out)
			}
		})
	}
}

func TestWSNodeClient(t *testing.T) {
	_, errNode := exec.LookPath("node")
	_, errMod := os.Stat("node/node_modules/ws/package.json")
	needPeer(t, errNode == nil && errMod == nil, "node and its ws module (apt-get install nodejs; cd interop/node && npm ci)")
	runPeer(t, wsEcho(t, nil), "node", "node/echo.js")
}

func TestWSPythonClient(t *testing.T) {
	err := exec.Command("/usr/bin/python3", "-c", "import websockets").Run()
	needPeer(t, err == nil, "python3-websockets (apt-get install python3-websockets)")
	runPeer(t, wsEcho(t, nil), "/usr/bin/python3", "python/ws_echo.py")
}

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

func TestWSChromium(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	needPeer(t, err == nil, "chromium (apt-get install chromium)")
	type result struct {
		OK  bool
		Why string
		Log []string
	}
	results := make(chan result, 1)
	base := wsEcho(t, map[string]http.HandlerFunc{
		"/page": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, chromePage)
		},
		"/result": func(w http.ResponseWriter, r *http.Request) {
			var res result
			json.NewDecoder(r.Body).Decode(&res)
			select {
			case results <- res:
			default:
			}
		},
	})
	page := "http" + strings.TrimPrefix(base, "ws") + "/page"
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(t.TempDir(), "profile"), page)
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
