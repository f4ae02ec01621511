package uringrt

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// startRedis runs redis-server on a free loopback port for the test and
// returns its address. Without redis-server the test is skipped, unless
// URINGRT_REQUIRE_REDIS is set (CI sets it), where it fails.
func startRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("URINGRT_REQUIRE_REDIS") != "" {
			t.Fatal("redis-server not installed and URINGRT_REQUIRE_REDIS is set (apt-get install redis-server)")
		}
		t.Skip("redis-server not installed (apt-get install redis-server); set URINGRT_REQUIRE_REDIS=1 to require it")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir(), "--daemonize", "no")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		closed := false
		for sc.Scan() {
			if !closed && strings.Contains(sc.Text(), "Ready to accept connections") {
				close(ready)
				closed = true
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("redis-server did not start within 30 s")
	}
	return "127.0.0.1:" + port
}

// TestGoRedisStaleConnCheck: go-redis checks a pooled connection through
// SyscallConn (a MSG_PEEK in RawConn.Read) before reusing it. After the
// server kills the idle client connection (CLIENT KILL), the next GET must
// not fail: the check sees the EOF, drops the connection and dials a new
// one, as on Go's net. Before Conn had SyscallConn the check was skipped
// and the GET failed with EOF.
func TestGoRedisStaleConnCheck(t *testing.T) {
	addr := startRedis(t)
	admin := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, tier := range optTiers {
		t.Run(tier.name, func(t *testing.T) {
			rt := newRT(t, tier.cfg)
			d := &Dialer{Runtime: rt}
			client := redis.NewClient(&redis.Options{
				Addr: addr, PoolSize: 1, MaxRetries: -1, // no retry: a stale conn must be caught by the check
				Dialer: d.DialContext,
			})
			defer client.Close()
			key := "k-" + tier.name
			for round := range 5 {
				if err := client.Set(ctx, key, round, 0).Err(); err != nil {
					t.Fatalf("round %d: SET: %v", round, err)
				}
				id, err := client.ClientID(ctx).Result()
				if err != nil {
					t.Fatalf("round %d: CLIENT ID: %v", round, err)
				}
				if err := admin.ClientKillByFilter(ctx, "ID", strconv.FormatInt(id, 10)).Err(); err != nil {
					t.Fatalf("round %d: CLIENT KILL: %v", round, err)
				}
				// The kill reaches the client as a FIN; wait until the
				// server has dropped the connection so the check has
				// something to see.
				waitClientGone(t, ctx, admin, id)
				got, err := client.Get(ctx, key).Int()
				if err != nil {
					t.Fatalf("round %d: GET after CLIENT KILL: %v", round, err)
				}
				if got != round {
					t.Fatalf("round %d: GET = %d", round, got)
				}
			}
		})
	}
}

// waitClientGone polls CLIENT LIST until connection id is gone.
func waitClientGone(t *testing.T, ctx context.Context, admin *redis.Client, id int64) {
	t.Helper()
	needle := "id=" + strconv.FormatInt(id, 10) + " "
	for i := 0; ; i++ {
		list, err := admin.ClientList(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(list, needle) {
			return
		}
		if i > 2000 {
			t.Fatalf("client %d still listed after CLIENT KILL", id)
		}
		time.Sleep(time.Millisecond)
	}
}
