package interop

// WebSocket peers that are not Go, against the interop server: node's ws
// (npm, installed by `npm ci` in interop/node), python3-websockets
// (Debian's, run by /usr/bin/python3) and a headless Chromium page. Each
// skips, naming what it needs, when that is absent, and fails instead under
// URINGRT_REQUIRE_WS_PEERS=1 (CI).

import (
	"context"
	"os"
	"os/exec"
	"strings"
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
