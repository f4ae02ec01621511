package uringrt

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// testNet is a network the test creates: two network namespaces joined by
// a veth pair, the server's end srvIP in srvNS, the client's cliIP in
// cliNS. Faults are applied with nft (packet loss), tc tbf (a rate limit)
// and ip link (a link down). t.Cleanup deletes both namespaces (and so the
// veth pair, the rules and the qdiscs).
type testNet struct {
	t              testing.TB
	srvNS, cliNS   string
	srvDev, cliDev string
	srvIP, cliIP   string
}

var netnsSeq atomic.Int32

// newTestNet creates the namespaces, or skips the test with the reason when
// they cannot be created (not root, no ip(8)) unless URINGRT_REQUIRE_NETNS=1
// (CI), which makes that a failure.
func newTestNet(t testing.TB) *testNet {
	t.Helper()
	skip := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("URINGRT_REQUIRE_NETNS") == "1" {
			t.Fatalf("network namespaces required (URINGRT_REQUIRE_NETNS=1): %s", msg)
		}
		t.Skipf("cannot create network namespaces: %s (needs root and ip(8), nft(8), tc(8) from iproute2 and nftables)", msg)
	}
	for _, tool := range []string{"ip", "nft", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			skip("%s not found", tool)
		}
	}
	n := netnsSeq.Add(1)
	id := fmt.Sprintf("%d-%d", os.Getpid()%100000, n)
	tn := &testNet{
		t:     t,
		srvNS: "urt-s-" + id, cliNS: "urt-c-" + id,
		srvDev: fmt.Sprintf("urs%d", n), cliDev: fmt.Sprintf("urc%d", n),
		srvIP: fmt.Sprintf("10.231.%d.1", n%250), cliIP: fmt.Sprintf("10.231.%d.2", n%250),
	}
	if out, err := exec.Command("ip", "netns", "add", tn.srvNS).CombinedOutput(); err != nil {
		skip("ip netns add: %v: %s", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", tn.srvNS).Run() })
	if out, err := exec.Command("ip", "netns", "add", tn.cliNS).CombinedOutput(); err != nil {
		skip("ip netns add: %v: %s", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", tn.cliNS).Run() })
	tn.must("ip", "link", "add", tn.srvDev, "netns", tn.srvNS, "type", "veth", "peer", "name", tn.cliDev, "netns", tn.cliNS)
	for _, side := range []struct{ ns, dev, ip string }{{tn.srvNS, tn.srvDev, tn.srvIP}, {tn.cliNS, tn.cliDev, tn.cliIP}} {
		tn.must("ip", "-n", side.ns, "addr", "add", side.ip+"/24", "dev", side.dev)
		tn.must("ip", "-n", side.ns, "link", "set", side.dev, "up")
		tn.must("ip", "-n", side.ns, "link", "set", "lo", "up")
	}
	return tn
}

// must runs a command and fails the test when it fails.
func (tn *testNet) must(args ...string) {
	tn.t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		tn.t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
}

// loss drops pct percent of the packets each namespace sends (nft numgen
// random), until the returned function removes the rules.
func (tn *testNet) loss(pct int) func() {
	tn.t.Helper()
	for _, ns := range []string{tn.srvNS, tn.cliNS} {
		tn.must("ip", "netns", "exec", ns, "nft", "add", "table", "inet", "urtloss")
		tn.must("ip", "netns", "exec", ns, "nft", "add", "chain", "inet", "urtloss", "out", "{ type filter hook output priority 0 ; }")
		tn.must("ip", "netns", "exec", ns, "nft", "add", "rule", "inet", "urtloss", "out", "meta", "l4proto", "tcp",
			"numgen", "random", "mod", "100", "<", fmt.Sprint(pct), "drop")
	}
	return func() {
		for _, ns := range []string{tn.srvNS, tn.cliNS} {
			tn.must("ip", "netns", "exec", ns, "nft", "delete", "table", "inet", "urtloss")
		}
	}
}

// rate limits both directions to rate (a tc rate, "20mbit") with tbf,
// until the returned function removes the qdiscs.
func (tn *testNet) rate(rate string) func() {
	tn.t.Helper()
	for _, side := range []struct{ ns, dev string }{{tn.srvNS, tn.srvDev}, {tn.cliNS, tn.cliDev}} {
		tn.must("ip", "netns", "exec", side.ns, "tc", "qdisc", "add", "dev", side.dev, "root", "tbf",
			"rate", rate, "burst", "32kbit", "latency", "400ms")
	}
	return func() {
		for _, side := range []struct{ ns, dev string }{{tn.srvNS, tn.srvDev}, {tn.cliNS, tn.cliDev}} {
			tn.must("ip", "netns", "exec", side.ns, "tc", "qdisc", "del", "dev", side.dev, "root")
		}
	}
}

// linkDown sets the client's end of the veth pair down (packets either way
// are lost; TCP retransmits) until the returned function sets it up again.
func (tn *testNet) linkDown() func() {
	tn.t.Helper()
	tn.must("ip", "-n", tn.cliNS, "link", "set", tn.cliDev, "down")
	return func() {
		tn.must("ip", "-n", tn.cliNS, "link", "set", tn.cliDev, "up")
		// The address is kept; routes come back with the link.
	}
}

// in runs fn on a thread switched into the namespace ns: sockets fn
// creates belong to ns (and stay in it after the thread switches back).
func (tn *testNet) in(ns string, fn func()) {
	tn.t.Helper()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer orig.Close()
		target, err := os.Open("/var/run/netns/" + ns)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("setns %s: %w", ns, err)
			return
		}
		fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			// Leave the thread locked: it exits with this goroutine
			// rather than serve others in the wrong namespace.
			errc <- fmt.Errorf("setns back: %w", err)
			return
		}
		runtime.UnlockOSThread()
		errc <- nil
	}()
	if err := <-errc; err != nil {
		tn.t.Fatal(err)
	}
}
