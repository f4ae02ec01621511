package uringrt

import (
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/uringrt/uringrt/netpoll"
)

// fixFor is what the error text must name for each cause: the way out.
var setupFailures = []struct {
	errno syscall.Errno
	is    error    // what errors.Is must also match
	fix   []string // substrings the message must contain
}{
	{syscall.EPERM, os.ErrPermission, []string{"kernel.io_uring_disabled", "seccomp"}},
	{syscall.EACCES, os.ErrPermission, []string{"kernel.io_uring_disabled", "seccomp"}},
	{syscall.ENOSYS, errors.ErrUnsupported, []string{"io_uring", "BackendStd"}}, // which cause: setupcause_test.go
}

func TestFallbackAutoServesThroughStd(t *testing.T) {
	for _, f := range setupFailures {
		t.Run(f.errno.Error(), func(t *testing.T) {
			logger, buf := logBuffer()
			rt, err := newRuntime(Config{Logger: logger}, failSetup(f.errno))
			if err != nil {
				t.Fatalf("BackendAuto: New failed instead of falling back: %v", err)
			}
			defer rt.Close()
			if rt.Backend() != BackendStd {
				t.Fatalf("Backend() = %v, want std", rt.Backend())
			}
			reason := rt.FallbackReason()
			if reason == "" || !strings.Contains(reason, f.errno.Error()) {
				t.Fatalf("FallbackReason() = %q, want it to name %q", reason, f.errno.Error())
			}
			for _, fix := range f.fix {
				if !strings.Contains(reason, fix) {
					t.Errorf("FallbackReason() = %q does not name the fix %q", reason, fix)
				}
			}
			// Exactly one warning, naming the cause.
			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			warns := 0
			for _, ln := range lines {
				if strings.Contains(ln, "level=WARN") {
					warns++
					if !strings.Contains(ln, f.errno.Error()) || !strings.Contains(ln, "io_uring_setup") {
						t.Errorf("warning does not name the cause: %s", ln)
					}
				}
			}
			if warns != 1 {
				t.Fatalf("%d warnings logged, want exactly 1:\n%s", warns, buf.String())
			}
			// Stats (uringrt_backend_info) says std.
			if b := rt.Stats().Backend; b != BackendStd {
				t.Errorf("Stats().Backend = %v, want std", b)
			}
			// It serves: a net.Conn echo through Go's net.
			ln := listenTCP(t, rt)
			if _, ok := ln.(*stdListener); !ok {
				t.Fatalf("Listen returned %T, want Go's listener", ln)
			}
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				io.Copy(c, c)
			}()
			echoOnce(t, rt, ln.Addr().String(), "fallback "+f.errno.Error())
			// And the callback API too.
			ln2, err := rt.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			served := make(chan error, 1)
			go func() { served <- rt.Serve(ln2, EchoHandler{}) }()
			echoOnce(t, rt, ln2.Addr().String(), "callback over std")
			keep, err := rt.Dial("tcp", ln2.Addr().String()) // open across ln2.Close
			if err != nil {
				t.Fatal(err)
			}
			defer keep.Close()
			ln2.Close() // Serve returns, as with io_uring, while keep is still served
			select {
			case err := <-served:
				if err != nil {
					t.Fatalf("Serve: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Serve did not return after its listener closed")
			}
			if n := strings.Count(buf.String(), "level=WARN"); n != 1 {
				t.Fatalf("%d warnings after serving, want still 1:\n%s", n, buf.String())
			}
		})
	}
}

func TestFallbackUringFails(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, f := range setupFailures {
		t.Run(f.errno.Error(), func(t *testing.T) {
			logger, buf := logBuffer()
			rt, err := newRuntime(Config{Backend: BackendUring, Logger: logger}, failSetup(f.errno))
			if err == nil {
				rt.Close()
				t.Fatal("BackendUring: New succeeded without io_uring")
			}
			if rt != nil {
				t.Fatalf("New returned a runtime with its error %v", err)
			}
			if !errors.Is(err, ErrNoIOUring) {
				t.Errorf("errors.Is(%v, ErrNoIOUring) = false", err)
			}
			if !errors.Is(err, f.errno) {
				t.Errorf("errors.Is(%v, %v) = false", err, f.errno)
			}
			if !errors.Is(err, f.is) {
				t.Errorf("errors.Is(%v, %v) = false", err, f.is)
			}
			var ne *netpoll.Error
			if !errors.As(err, &ne) || ne.Op != "io_uring_setup" {
				t.Errorf("errors.As(%v, *netpoll.Error) = false", err)
			}
			for _, fix := range f.fix {
				if !strings.Contains(err.Error(), fix) {
					t.Errorf("error %q does not name the fix %q", err, fix)
				}
			}
			if strings.Contains(buf.String(), "level=WARN") {
				t.Errorf("BackendUring logged a fallback warning:\n%s", buf.String())
			}
		})
	}
}

// TestFallbackLaterLoopFails injects the failure (io_uring blocked: EPERM)
// into the second loop's ring only (the probe and the first loop
// succeed): the loop already started is stopped, nothing leaks, and
// BackendAuto still falls back. A shortage (EMFILE, ENOMEM) does not fall
// back: TestSetupShortageFailsEveryBackend.
func TestFallbackLaterLoopFails(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, backend := range []Backend{BackendAuto, BackendUring} {
		t.Run(backend.String(), func(t *testing.T) {
			var calls atomic.Int32
			hook := func(p netpoll.Params) (*netpoll.Ring, error) {
				if calls.Add(1) == 3 { // probe, loop 0, loop 1
					return nil, &netpoll.Error{Op: "io_uring_setup", Err: syscall.EPERM}
				}
				return netpoll.New(p)
			}
			logger, buf := logBuffer()
			before := countFDs(t)
			rt, err := newRuntime(Config{Backend: backend, Loops: 2, Logger: logger}, hook)
			if backend == BackendUring {
				if err == nil || !errors.Is(err, ErrNoIOUring) || !errors.Is(err, syscall.EPERM) {
					t.Fatalf("New = %v, want ErrNoIOUring wrapping EPERM", err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if rt.Backend() != BackendStd || !strings.Contains(rt.FallbackReason(), "loop 1") {
					t.Fatalf("Backend %v, reason %q", rt.Backend(), rt.FallbackReason())
				}
				if n := strings.Count(buf.String(), "level=WARN"); n != 1 {
					t.Fatalf("%d warnings, want 1:\n%s", n, buf.String())
				}
				rt.Close()
			}
			waitFDs(t, before)
		})
	}
}

var _ net.Listener = (*stdListener)(nil)
