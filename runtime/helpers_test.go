package uringrt

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/uringrt/uringrt/netpoll"
	"github.com/uringrt/uringrt/runtime/experiment"
)

// procStatusBytes returns a "kB" field of /proc/self/status (VmRSS, VmHWM)
// in bytes.
func procStatusBytes(t testing.TB, field string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// resetPeakRSS resets the process's peak RSS (VmHWM) to its current RSS
// (writing 5 to /proc/self/clear_refs, Linux 4.0+), so peakRSS measures
// from here and not from an earlier test of the same process.
func resetPeakRSS(t testing.TB) {
	t.Helper()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the peak RSS: %v", err)
	}
}

// relRssBytes is VmRSS: the process's resident memory now, in bytes.
func relRssBytes(t testing.TB) int64 { return procStatusBytes(t, "VmRSS") }

// peakRSS is VmHWM: the highest RSS since resetPeakRSS.
func peakRSS(t testing.TB) int64 { return procStatusBytes(t, "VmHWM") }

// countFDs returns the number of open descriptors of the process.
func countFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// listFDs describes the open descriptors (for failure messages): each
// fd, what it points at and, for a TCP socket, its local and remote
// address and state (hex, as /proc/net/tcp has them; st 08 is CLOSE_WAIT).
func listFDs() string {
	ents, _ := os.ReadDir("/proc/self/fd")
	var b strings.Builder
	for _, e := range ents {
		target, _ := os.Readlink("/proc/self/fd/" + e.Name())
		fmt.Fprintf(&b, "%s->%s ", e.Name(), target)
		if ino, ok := strings.CutPrefix(target, "socket:["); ok {
			ino = strings.TrimSuffix(ino, "]")
			for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
				data, _ := os.ReadFile(f)
				for _, line := range strings.Split(string(data), "\n") {
					if fs := strings.Fields(line); len(fs) > 9 && fs[9] == ino {
						fmt.Fprintf(&b, "(%s %s st %s) ", fs[1], fs[2], fs[3])
					}
				}
			}
		}
	}
	return b.String()
}

// waitFDs waits (up to 5 s) until no more than want descriptors are open.
func waitFDs(t testing.TB, want int) {
	t.Helper()
	end := time.Now().Add(5 * time.Second)
	for {
		n := countFDs(t)
		if n <= want {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%d descriptors open after Close, %d before: %s", n, want, listFDs())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// raiseNOFILE raises RLIMIT_NOFILE's soft limit to the hard limit (and,
// with CAP_SYS_RESOURCE, the hard limit to need) and restores it after t.
// It skips t when fewer than need descriptors can be had.
func raiseNOFILE(t *testing.T, need uint64) {
	var orig unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &orig); err != nil {
		t.Fatal(err)
	}
	lim := unix.Rlimit{Cur: orig.Max, Max: orig.Max}
	if lim.Max < need {
		try := unix.Rlimit{Cur: need, Max: need}
		if unix.Setrlimit(unix.RLIMIT_NOFILE, &try) == nil {
			lim = try
		}
	}
	if lim.Max < need {
		t.Skipf("RLIMIT_NOFILE hard limit %d < %d (raise it: ulimit -Hn %d)", lim.Max, need, need)
	}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("cannot raise RLIMIT_NOFILE to %d: %v", lim.Cur, err)
	}
	t.Cleanup(func() { unix.Setrlimit(unix.RLIMIT_NOFILE, &orig) })
}

// startCPUHogs starts n child processes that each spin one CPU for d, and
// kills them when the test ends.
func startCPUHogs(t *testing.T, n int, d time.Duration) {
	t.Helper()
	for i := 0; i < n; i++ {
		hog := exec.Command(os.Args[0], "-test.run=^$")
		hog.Env = append(os.Environ(), "URINGRT_CPU_HOG="+d.String())
		if err := hog.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { hog.Process.Kill(); hog.Wait() })
	}
}

func raiseSoftNOFILE() {
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil {
		lim.Cur = lim.Max
		unix.Setrlimit(unix.RLIMIT_NOFILE, &lim)
	}
}

// relWaitFor polls cond until it holds or d passes; it reports whether it held.
func relWaitFor(d time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// serveCB runs the callback API with h on a new loopback listener of rt
// until the test ends, when it closes the listener and waits (10 s at
// most) for Serve to return.
func serveCB(t testing.TB, rt *Runtime, h Handler) net.Listener {
	t.Helper()
	ln, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		rt.Serve(ln, h)
	}()
	t.Cleanup(func() {
		ln.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("Serve did not return after its listener closed")
		}
	})
	return ln
}

// relServeCB is serveCB, returning once one connection (dialed and closed
// at once; h sees it) has reached the listener, so the cleanup's Close
// never races with Serve's start.
func relServeCB(t testing.TB, rt *Runtime, h Handler) net.Listener {
	t.Helper()
	ln := serveCB(t, rt, h)
	c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
	if err == nil {
		c.Close()
	}
	return ln
}

// echoMaxQueued is a callback echo handler that records in max the most
// bytes a connection's output queue held after a Write.
func echoMaxQueued(max *atomic.Int64) Handler {
	return HandlerFuncs{Data: func(c *CallbackConn, d []byte) {
		c.Write(d)
		if q := int64(c.outq.n); q > max.Load() {
			max.Store(q)
		}
	}}
}

// echoServer starts an echo server on rt, through the callback API
// (EchoHandler) or (api "conn") a goroutine per net.Conn, and returns its
// address. It stops when the test ends.
func echoServer(t testing.TB, rt *Runtime, api string) string {
	t.Helper()
	if api == "callback" {
		return serveCB(t, rt, EchoHandler{}).Addr().String()
	}
	return relServeConnEcho(t, rt).Addr().String()
}

// relServeConnEcho runs an io.Copy echo server on the net.Conn API.
func relServeConnEcho(t testing.TB, rt *Runtime) net.Listener {
	t.Helper()
	ln, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	relAcceptEcho(&wg, ln)
	t.Cleanup(func() {
		ln.Close()
		rt.Close() // ends the handlers' io.Copy
		wg.Wait()
	})
	return ln
}

// relAcceptEcho accepts on ln until it is closed, each conn served by an
// io.Copy echo on its own goroutine; wg counts the accept loop and every
// handler (wg.Wait returns once ln is closed and every conn has ended).
// Accept errors other than net.ErrClosed (EMFILE, a reset before accept)
// are retried after 1 ms.
func relAcceptEcho(wg *sync.WaitGroup, ln net.Listener) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				time.Sleep(time.Millisecond)
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
}

// acceptHold accepts on ln until it is closed, holding every connection
// open until then.
func acceptHold(ln net.Listener) {
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
}

// dialStd dials n connections to addr with Go's net (5 s each at most);
// they are closed when the test ends.
func dialStd(t testing.TB, addr string, n int) []net.Conn {
	t.Helper()
	cs := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range cs {
			c.Close()
		}
	})
	for range n {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	return cs
}

func relDialStd(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func newRT(t testing.TB, cfg Config) *Runtime {
	t.Helper()
	if cfg.Backend == BackendAuto {
		cfg.Backend = BackendUring
	}
	rt, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// listenTCP returns a new loopback TCP listener of rt, closed when the
// test ends.
func listenTCP(t testing.TB, rt *Runtime) net.Listener {
	t.Helper()
	ln, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

func pair(t testing.TB, rt *Runtime, network string) (client, server net.Conn) {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = t.TempDir() + "/s.sock"
	}
	ln, err := rt.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	return pairOn(t, ln, func(addr string) (net.Conn, error) { return rt.Dial(network, addr) })
}

// pairOn dials ln's address with dial and accepts the one connection; it
// closes ln before returning, and both ends when the test ends.
func pairOn(t testing.TB, ln net.Listener, dial func(addr string) (net.Conn, error)) (client, server net.Conn) {
	t.Helper()
	defer ln.Close()
	client, server = dialAccept(t, ln, dial)
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// dialAccept dials ln's address with dial and accepts the one connection.
// ln stays open, and the caller closes both ends.
func dialAccept(t testing.TB, ln net.Listener, dial func(addr string) (net.Conn, error)) (client, server net.Conn) {
	t.Helper()
	ch := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			c = nil
		}
		ch <- c
	}()
	client, err := dial(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-ch
	if server == nil {
		client.Close()
		t.Fatal("accept failed")
	}
	return client, server
}

// goClientPair returns a connected pair whose client is Go's net and whose
// server side is accepted from a loopback listener of rt (of Go's net when
// rt is nil); both are closed when the test ends.
func goClientPair(t testing.TB, rt *Runtime) (client, server net.Conn) {
	t.Helper()
	listen := net.Listen
	if rt != nil {
		listen = rt.Listen
	}
	ln, err := listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return pairOn(t, ln, func(addr string) (net.Conn, error) { return net.DialTimeout("tcp", addr, 5*time.Second) })
}

func setLinger0(t testing.TB, c net.Conn) {
	t.Helper()
	type linger interface{ SetLinger(int) error }
	if l, ok := c.(linger); ok {
		l.SetLinger(0)
		return
	}
	if sc, ok := c.(*stdConn); ok {
		sc.Conn.(*net.TCPConn).SetLinger(0)
		return
	}
	if uc, ok := c.(*Conn); ok {
		uc.SetLinger(0)
		return
	}
	t.Fatalf("cannot set linger on %T", c)
}

// onLoop runs fn on l and waits for it.
func onLoop(l *loop, fn func()) {
	done := make(chan struct{})
	l.post(request{kind: reqFunc, fn: func() { fn(); close(done) }})
	<-done
}

// idleClients opens n idle connections to addr in a child process
// (TestMain's URINGRT_IDLE_CLIENT), each echoed once; the returned func
// makes the child close them all at once and waits for it to exit.
func idleClients(t testing.TB, addr string, n int) (closeAll func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "URINGRT_IDLE_CLIENT="+addr+","+strconv.Itoa(n))
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	closeAll = func() { once.Do(func() { stdin.Close(); cmd.Wait() }) }
	t.Cleanup(closeAll)
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		t.Fatalf("client: %q", line)
	}
	return closeAll
}

// faultServer is one echo server a fault test runs against: the callback
// API, or the net.Conn API under one pollable policy.
type faultServer struct {
	name     string
	callback bool
	pollable experiment.Pollable
}

// faultServers lists the callback API, then the net.Conn API under every
// pollable policy ("conn-hybrid", ...).
func faultServers() []faultServer {
	servers := []faultServer{{"callback", true, experiment.PollHybrid}}
	for _, p := range []experiment.Pollable{experiment.PollHybrid, experiment.PollRing, experiment.PollAsync, experiment.PollBlocking} {
		servers = append(servers, faultServer{"conn-" + p.String(), false, p})
	}
	return servers
}

// faultEcho is the echo server of one fault case: a runtime of two loops
// serving s on ln (EchoHandler, or relAcceptEcho's io.Copy per net.Conn).
type faultEcho struct {
	rt      *Runtime
	ln      net.Listener
	wg      sync.WaitGroup // the server's goroutines
	stopped bool
}

// startFaultEcho starts s's echo server on the listener listen makes. The
// caller defers abort, and calls stop as the case ends.
func startFaultEcho(t *testing.T, s faultServer, listen func(rt *Runtime) (net.Listener, error)) *faultEcho {
	t.Helper()
	rt, err := New(Config{Loops: 2, Backend: BackendUring, Switches: experiment.Switches{Pollable: s.pollable}})
	if err != nil {
		t.Fatal(err)
	}
	e := &faultEcho{rt: rt}
	if e.ln, err = listen(rt); err != nil {
		rt.Close()
		t.Fatal(err)
	}
	if s.callback {
		e.wg.Add(1)
		go func() { defer e.wg.Done(); rt.Serve(e.ln, EchoHandler{}) }()
	} else {
		relAcceptEcho(&e.wg, e.ln)
	}
	return e
}

// abort closes the runtime if stop did not (a case that failed early).
func (e *faultEcho) abort() {
	if !e.stopped {
		e.rt.Close()
	}
}

// stop ends a fault case's server: Shutdown within its 5 s bound, then the
// listener and the runtime closed (Close within 6 s) and every goroutine of
// the server returned.
func (e *faultEcho) stop(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := e.rt.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v after %v", err, time.Since(start))
	}
	if d := time.Since(start); d > 6*time.Second {
		t.Errorf("Shutdown took %v, bound 5s", d)
	}
	e.ln.Close()
	start = time.Now()
	e.rt.Close()
	e.stopped = true
	if d := time.Since(start); d > 6*time.Second {
		t.Errorf("Close took %v", d)
	}
	e.wg.Wait()
}

// optTiers are the configurations the option tests run in: the net.Conn
// policies that wait differently, and Go's net.
var optTiers = []struct {
	name string
	cfg  Config
}{
	{"hybrid", Config{Loops: 2, Switches: experiment.Switches{LoopReadiness: true}}},
	{"ring", Config{Loops: 1, Switches: experiment.Switches{Pollable: experiment.PollRing}}},
	{"blocking", Config{Loops: 1, Workers: 4, Switches: experiment.Switches{Pollable: experiment.PollBlocking}}},
	{"std", Config{Backend: BackendStd}},
}

// optPair connects a Dialer to a ListenConfig's listener, both on rt.
func optPair(t *testing.T, rt *Runtime, d *Dialer, lc *ListenConfig) (client, server net.Conn) {
	t.Helper()
	d.Runtime, lc.Runtime = rt, rt
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return pairOn(t, ln, func(addr string) (net.Conn, error) { return d.Dial("tcp", addr) })
}

// tiers are the configurations every contract test runs in: each pollable
// policy, the feature tiers turned off, and Go's net.
var tiers = []struct {
	name string
	cfg  Config
}{
	{"hybrid", Config{Loops: 2, Switches: experiment.Switches{LoopReadiness: true}}},
	{"ring", Config{Loops: 2, Switches: experiment.Switches{Pollable: experiment.PollRing}}},
	{"async", Config{Loops: 1, Switches: experiment.Switches{Pollable: experiment.PollAsync}}},
	{"blocking", Config{Loops: 1, Workers: 8, Switches: experiment.Switches{Pollable: experiment.PollBlocking}}},
	{"no-defer-taskrun", Config{Loops: 1, Switches: experiment.Switches{DisableDeferTaskrun: true, DisableMultishot: true, DisableBufRing: true}}},
	{"nobatch", Config{Loops: 1, Switches: experiment.Switches{WaitBatch: experiment.WaitBatchOff}}},
	{"idlepoll", Config{Loops: 1, LockedLoops: true, IdlePoll: 100 * time.Microsecond, Switches: experiment.Switches{Pollable: experiment.PollRing}}},
	{"dedicated", Config{Loops: 1, LockedLoops: true, DedicatedLoops: true, Switches: experiment.Switches{Pollable: experiment.PollRing}}},
	{"locked-loop", Config{Loops: 2, LockedLoops: true}},
	{"netpoll", Config{Loops: 2, Switches: experiment.Switches{NetpollReadiness: true}}},
	{"std", Config{Backend: BackendStd}},
}

// failSetup is a newRing hook that fails every io_uring_setup with errno,
// as the kernel does under seccomp or kernel.io_uring_disabled (EPERM) or
// without io_uring (ENOSYS).
func failSetup(errno syscall.Errno) func(netpoll.Params) (*netpoll.Ring, error) {
	return func(netpoll.Params) (*netpoll.Ring, error) {
		return nil, &netpoll.Error{Op: "io_uring_setup", Err: errno}
	}
}

// logBuffer returns a logger writing every record (debug and up) to buf.
func logBuffer() (*slog.Logger, *bytes.Buffer) {
	buf := new(bytes.Buffer)
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}

// echoOnce dials addr through rt, writes msg and expects it back.
func echoOnce(t testing.TB, rt *Runtime, addr, msg string) {
	t.Helper()
	c, err := rt.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != msg {
		t.Fatalf("echo: got %q, %v; want %q", got, err, msg)
	}
}

// slogTo returns a text logger writing every record to w.
func slogTo(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// lockedBuffer is a bytes.Buffer safe for a logger and a test to share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// startHTTP serves h with net/http on a uringrt listener of rt and returns
// its base URL and the number of connections it has accepted so far.
func startHTTP(t testing.TB, rt *Runtime, h http.Handler) (url string, newConns *atomic.Int64) {
	t.Helper()
	ln, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ln.(*listener); !ok {
		t.Fatalf("Listen returned %T, want the io_uring listener", ln)
	}
	newConns = new(atomic.Int64)
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ConnState: func(c net.Conn, s http.ConnState) {
			if s == http.StateNew {
				if _, ok := c.(*Conn); !ok {
					t.Errorf("net/http got a %T, want *Conn", c)
				}
				newConns.Add(1)
			}
		},
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("http.Server.Shutdown: %v", err)
		}
		if err := <-done; err != http.ErrServerClosed {
			t.Errorf("http.Server.Serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String(), newConns
}

// loopSum adds f over the loops of s.
func loopSum(s Stats, f func(*LoopStats) uint64) uint64 {
	var n uint64
	for i := range s.Loops {
		n += f(&s.Loops[i])
	}
	return n
}

// activeConns is the connections accepted and not yet closed, over all
// loops.
func activeConns(rt *Runtime) int64 {
	s := rt.Stats()
	return int64(loopSum(s, func(l *LoopStats) uint64 { return l.Accepted })) -
		int64(loopSum(s, func(l *LoopStats) uint64 { return l.Closed }))
}

// eventually polls cond until it holds or the deadline (at most d, and
// before the test's own deadline) passes; then it fails with cond's last
// message.
func eventually(t *testing.T, d time.Duration, cond func() (bool, string)) {
	t.Helper()
	end := time.Now().Add(d)
	if dl, ok := t.Deadline(); ok && dl.Add(-5*time.Second).Before(end) {
		end = dl.Add(-5 * time.Second)
	}
	for {
		ok, msg := cond()
		if ok {
			return
		}
		if time.Now().After(end) {
			t.Fatal(msg)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// echoTraffic dials conns connections to addr with Go's net (so the client
// side counts nowhere in the runtime), sends msgs messages of size bytes
// on each, one at a time, and checks every echo. It returns the open
// connections (the caller closes them) and the bytes sent in all.
func echoTraffic(t *testing.T, addr string, conns, msgs, size int) ([]net.Conn, int) {
	t.Helper()
	cs := make([]net.Conn, conns)
	for i := range cs {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			for _, c := range cs[:i] {
				c.Close()
			}
			t.Fatalf("dial %s: %v", addr, err)
		}
		cs[i] = c
	}
	errs := make(chan error, conns)
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetDeadline(time.Now().Add(20 * time.Second))
			out := bytes.Repeat([]byte{byte('a' + i%26)}, size)
			in := make([]byte, size)
			for m := 0; m < msgs; m++ {
				if _, err := c.Write(out); err != nil {
					errs <- fmt.Errorf("conn %d msg %d: write: %w", i, m, err)
					return
				}
				if _, err := io.ReadFull(c, in); err != nil {
					errs <- fmt.Errorf("conn %d msg %d: read: %w", i, m, err)
					return
				}
				if !bytes.Equal(in, out) {
					errs <- fmt.Errorf("conn %d msg %d: echo %q, want %q", i, m, in, out)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		for _, c := range cs {
			c.Close()
		}
		t.Fatal(err)
	}
	return cs, conns * msgs * size
}

func closeAll(cs []net.Conn) {
	for _, c := range cs {
		c.Close()
	}
}

// newMetricsRT starts a runtime that counts (Config.Metrics).
func newMetricsRT(t *testing.T, cfg Config) *Runtime {
	t.Helper()
	cfg.Metrics = true
	return newRT(t, cfg)
}

// relTestDeadline is when a test's own loops must give up: the earlier of
// now+d and shortly before the test binary's deadline.
func relTestDeadline(t testing.TB, d time.Duration) time.Time {
	end := time.Now().Add(d)
	if tt, ok := t.(*testing.T); ok {
		if td, ok := tt.Deadline(); ok && td.Add(-5*time.Second).Before(end) {
			end = td.Add(-5 * time.Second)
		}
	}
	return end
}

func relFillPattern(b []byte, off int64) {
	for i := range b {
		b[i] = relPattern(off + int64(i))
	}
}

// relCheckPattern returns an error at the first byte of b that is not the
// stream's byte at off+i.
func relCheckPattern(b []byte, off int64) error {
	for i := range b {
		if b[i] != relPattern(off+int64(i)) {
			return fmt.Errorf("byte %d of the stream is %d, want %d", off+int64(i), b[i], relPattern(off+int64(i)))
		}
	}
	return nil
}

// relEchoCheck sends size bytes of the numbered stream on c in random chunks
// and reads them back, verifying each byte, within d.
func relEchoCheck(c net.Conn, size int, d time.Duration, rng *rand.Rand) error {
	c.SetDeadline(time.Now().Add(d))
	defer c.SetDeadline(time.Time{})
	errc := make(chan error, 1)
	go func() {
		buf := make([]byte, 8192)
		for off := 0; off < size; {
			n := 1 + rng.Intn(len(buf))
			if n > size-off {
				n = size - off
			}
			relFillPattern(buf[:n], int64(off))
			if _, err := c.Write(buf[:n]); err != nil {
				errc <- err
				return
			}
			off += n
		}
		errc <- nil
	}()
	buf := make([]byte, 8192)
	for off := 0; off < size; {
		n, err := c.Read(buf)
		if err := relCheckPattern(buf[:n], int64(off)); err != nil {
			return err
		}
		off += n
		if err != nil && off < size {
			return fmt.Errorf("after %d of %d bytes: %w", off, size, err)
		}
	}
	return <-errc
}

// relCbTiers are the callback API's feature tiers: the fast path, each
// feature turned off, a handler on the worker pool, and Go's net.
var relCbTiers = []struct {
	name     string
	cfg      Config
	blocking bool
}{
	{"bufring-multishot", Config{Loops: 2}, false},
	{"no-bundles", Config{Loops: 1, Switches: experiment.Switches{DisableRecvBundles: true}}, false},
	{"no-bufring", Config{Loops: 1, Switches: experiment.Switches{DisableBufRing: true}}, false},
	{"no-multishot", Config{Loops: 1, Switches: experiment.Switches{DisableMultishot: true}}, false},
	{"no-defer-taskrun", Config{Loops: 1, Switches: experiment.Switches{DisableDeferTaskrun: true, DisableMultishot: true, DisableBufRing: true}}, false},
	{"blocking-handler", Config{Loops: 1, Workers: 4}, true},
	{"locked-loop", Config{Loops: 1, LockedLoops: true}, false},
	{"std", Config{Backend: BackendStd}, false},
}

func relEchoHandler(blocking bool) Handler {
	return HandlerFuncs{Data: func(c *CallbackConn, d []byte) { c.Write(d) }, Blocking: blocking}
}

// ---- feature tiers ----

// relSmallBufDialer dials with 16 KiB socket buffers set before connect, so
// a peer that does not read fills the path quickly.
var relSmallBufDialer = net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
	return rc.Control(func(fd uintptr) {
		syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 16<<10)
		syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, 16<<10)
	})
}}

// raceBuild reports whether the test binary was built with -race.
func raceBuild() bool {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" && s.Value == "true" {
				return true
			}
		}
	}
	return false
}

// streamEchoAll runs streamEcho of n bytes on conns connections at once
// and fails t on the first error.
func streamEchoAll(t *testing.T, addr string, conns, n int) {
	t.Helper()
	inParallel(t, conns, func(i int) error { return streamEcho(addr, n, byte(i)) })
}

// inParallel runs f(0) ... f(n-1) on n goroutines, waits for all, and
// fails t on the first error.
func inParallel(t *testing.T, n int, f func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- f(i)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// streamEcho writes n patterned bytes in 32 KiB writes while reading the
// echo, and checks it byte for byte.
func streamEcho(addr string, n int, seed byte) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	return echoPattern(c, n, seed, 32<<10)
}

// stdPeer is the other end of every script: a Go net socket.
func stdPeer(t *testing.T, network, addr string) *net.UDPConn {
	t.Helper()
	pc, err := net.ListenPacket(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	return pc.(*net.UDPConn)
}

func udpAddrOf(c net.PacketConn) *net.UDPAddr { return c.LocalAddr().(*net.UDPAddr) }

// loopbackTo is the address to send to c's port on 127.0.0.1.
func loopbackTo(c net.PacketConn) *net.UDPAddr {
	return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: udpAddrOf(c).Port}
}

// sameAddr says whether a received sender address is the peer's (an
// AF_INET6 socket sees IPv4 senders IPv4-mapped).
func sameAddr(got net.Addr, peer *net.UDPAddr) bool {
	ua, ok := got.(*net.UDPAddr)
	if !ok || ua == nil {
		return false
	}
	return ua.Port == peer.Port && ua.IP.Equal(peer.IP)
}

// payload is a datagram of n bytes numbered seq.
func payload(seq, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(seq*7 + i)
	}
	if n >= 4 {
		binary.BigEndian.PutUint32(b, uint32(seq))
	}
	return b
}

// discard reads c to EOF into a 1 MiB buffer and reports the count.
func discard(c net.Conn) <-chan int64 {
	ch := make(chan int64, 1)
	go func() {
		n, _ := io.CopyBuffer(io.Discard, readerOnly{c}, make([]byte, 1<<20))
		ch <- n
	}()
	return ch
}

// EchoHandler is the tests' callback echo: it writes every byte it
// receives back with WriteNoCopy (buffer lending for runs of 2 KiB or more).
type EchoHandler struct{}

func (EchoHandler) OnOpen(*CallbackConn) {}

func (EchoHandler) OnData(c *CallbackConn, data []byte) {
	if _, err := c.WriteNoCopy(data); err != nil {
		c.Close() // refused (ErrWriteBufferFull): never drop echoed bytes
	}
}

func (EchoHandler) OnClose(*CallbackConn, error) {}

// udpRingOf returns pc's multishot recvmsg (Config.UDPRecvMultishot), nil
// when it has none or runs on Go's net.
func udpRingOf(pc *PacketConn) *udpRing {
	if r, ok := pc.sock.(*ringUDP); ok {
		return r.ur
	}
	return nil
}
