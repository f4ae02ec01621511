package uringrt

import (
	"errors"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/uringrt/uringrt/netpoll"
)

// TestDefaultEMFILERetries: the default runtime's first use with the
// process at its descriptor limit returns an error naming EMFILE (it does
// not come up on Go's net for good, logging "io_uring unavailable"), and
// the next use, with descriptors back, runs on io_uring.
func TestDefaultEMFILERetries(t *testing.T) {
	if _, err := Probe(); err != nil {
		t.Skipf("no io_uring here: %v", err)
	}
	if err := CloseDefault(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { CloseDefault() })
	hog := limitFDs(t)
	hog.fill()
	rt, err := Default()
	hog.release()
	if err == nil {
		t.Fatalf("Default at EMFILE: backend %v (%q), want an error naming EMFILE", rt.Backend(), rt.FallbackReason())
	}
	if !errors.Is(err, syscall.EMFILE) || !errors.Is(err, ErrSetupResources) || errors.Is(err, ErrNoIOUring) ||
		!strings.Contains(err.Error(), "EMFILE") {
		t.Fatalf("Default at EMFILE: %v; want ErrSetupResources wrapping EMFILE, not ErrNoIOUring", err)
	}
	rt, err = Default()
	if err != nil {
		t.Fatalf("Default with descriptors back: %v", err)
	}
	if rt.Backend() != BackendUring {
		t.Fatalf("Default with descriptors back: backend %v (%q), want uring", rt.Backend(), rt.FallbackReason())
	}
}

// TestSetupShortageFailsEveryBackend: a loop whose setup runs out of
// descriptors or memory (here loop 1 of 2, after the probe and loop 0 came
// up) fails New with ErrSetupResources and the errno under BackendAuto as
// under BackendUring, stopping the loop already started; io_uring being
// blocked (EPERM) still falls back under BackendAuto.
func TestSetupShortageFailsEveryBackend(t *testing.T) {
	if _, err := Probe(); err != nil {
		t.Skipf("no io_uring here: %v", err)
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOMEM} {
		for _, backend := range []Backend{BackendAuto, BackendUring} {
			t.Run(errno.Error()+"/"+backend.String(), func(t *testing.T) {
				var calls atomic.Int32
				hook := func(p netpoll.Params) (*netpoll.Ring, error) {
					if calls.Add(1) == 3 { // probe, loop 0, loop 1
						return nil, &netpoll.Error{Op: "io_uring_setup", Err: errno}
					}
					return netpoll.New(p)
				}
				logger, buf := logBuffer()
				before := countFDs(t)
				rt, err := newRuntime(Config{Backend: backend, Loops: 2, Logger: logger}, hook)
				if err == nil {
					rt.Close()
					t.Fatalf("New succeeded (backend %v, %q); want ErrSetupResources", rt.Backend(), rt.FallbackReason())
				}
				if !errors.Is(err, ErrSetupResources) || !errors.Is(err, errno) || errors.Is(err, ErrNoIOUring) {
					t.Fatalf("New = %v; want ErrSetupResources wrapping %v", err, errno)
				}
				if strings.Contains(buf.String(), "level=WARN") {
					t.Errorf("a fallback warning was logged:\n%s", buf.String())
				}
				waitFDs(t, before)
			})
		}
	}
}
