package uringrt

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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

// EchoHandler is the tests' callback echo: it writes every byte it
// receives back with WriteNoCopy (buffer lending for runs of 2 KiB or more).
type EchoHandler struct{}

func (EchoHandler) OnOpen(*CallbackConn) {}

func (EchoHandler) OnData(c *CallbackConn, data []byte) { c.WriteNoCopy(data) }

func (EchoHandler) OnClose(*CallbackConn, error) {}
