package netpoll

import (
	"errors"
	"os"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

func newTestRing(t testing.TB, p Params) *Ring {
	t.Helper()
	r, err := New(p)
	if err != nil {
		t.Fatalf("New(%+v): %v", p, err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestProbeFeatures(t *testing.T) {
	f, err := ProbeFeatures()
	if err != nil {
		t.Fatal(err)
	}
	t.Log(f)
	if !f.Ops.Has(OpNop) || !f.Ops.Has(OpRecv) {
		t.Fatalf("probe lacks nop/recv: %v", f)
	}
}

// TestProbeFeaturesReportsProbeError forces the register call that reads the
// opcode table onto another thread than the ring's (the kernel answers EEXIST
// for a SINGLE_ISSUER ring), which is what happened when the goroutine moved
// between setup and probe: ProbeFeatures used to swallow the error and return
// a Features with no opcodes.
func TestProbeFeaturesReportsProbeError(t *testing.T) {
	saved := probeRing
	t.Cleanup(func() { probeRing = saved })
	probeRing = func(r *Ring) (OpSet, error) {
		type result struct {
			ops OpSet
			err error
		}
		c := make(chan result)
		go func() {
			// ProbeFeatures' goroutine holds its thread locked, so this one
			// runs on a different thread.
			runtime.LockOSThread()
			ops, err := r.Probe()
			c <- result{ops, err}
		}()
		res := <-c
		return res.ops, res.err
	}
	f, err := ProbeFeatures()
	if !errors.Is(err, syscall.EEXIST) {
		t.Fatalf("ProbeFeatures with the probe on another thread: err = %v (ops %v), want EEXIST", err, f.Ops)
	}
}

// TestProbeFeaturesGoroutineMoves runs ProbeFeatures from many goroutines
// while others keep the scheduler busy, so an unlocked goroutine would move
// between threads mid-probe.
func TestProbeFeaturesGoroutineMoves(t *testing.T) {
	stop := make(chan struct{})
	var busy sync.WaitGroup
	for range 2 * runtime.GOMAXPROCS(0) {
		busy.Add(1)
		go func() {
			defer busy.Done()
			for {
				select {
				case <-stop:
					return
				default:
					runtime.Gosched()
				}
			}
		}()
	}
	defer func() { close(stop); busy.Wait() }()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				f, err := ProbeFeatures()
				if err != nil {
					t.Error(err)
					return
				}
				if !f.Ops.Has(OpNop) || !f.Ops.Has(OpRecv) {
					t.Errorf("probe lacks nop/recv: %v", f)
					return
				}
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
}

func TestSetupErrors(t *testing.T) {
	tests := []struct {
		name string
		p    Params
		is   []error
	}{
		{"too many entries", Params{Entries: 1 << 20}, []error{syscall.EINVAL}},
		{"defer without single issuer", Params{Entries: 8, Flags: SetupDeferTaskrun}, []error{syscall.EINVAL, errors.ErrUnsupported}},
		{"unknown flag", Params{Entries: 8, Flags: 1 << 30}, []error{syscall.EINVAL, errors.ErrUnsupported}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := New(tt.p)
			if err == nil {
				r.Close()
				t.Fatal("New succeeded")
			}
			var e *Error
			if !errors.As(err, &e) || e.Op != "io_uring_setup" {
				t.Fatalf("err = %v, want *Error naming io_uring_setup", err)
			}
			for _, target := range tt.is {
				if !errors.Is(err, target) {
					t.Errorf("errors.Is(%v, %v) = false", err, target)
				}
			}
		})
	}
	if !errors.Is(newError("io_uring_setup", syscall.EPERM), os.ErrPermission) {
		t.Error("EPERM does not match os.ErrPermission")
	}
}

func TestClampAndZeroEntries(t *testing.T) {
	r := newTestRing(t, Params{Entries: 1 << 20, Flags: SetupClamp})
	if r.SQEntries() != 32768 {
		t.Errorf("clamped SQ = %d", r.SQEntries())
	}
	r2 := newTestRing(t, Params{})
	if r2.SQEntries() != 256 {
		t.Errorf("default SQ = %d", r2.SQEntries())
	}
}

func TestFallbackChain(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r := newTestRing(t, Params{Entries: 8, Flags: SetupSingleIssuer | SetupDeferTaskrun, Fallback: true})
	if r.Flags()&SetupDeferTaskrun == 0 {
		t.Logf("kernel fell back to %v", r.Flags())
	}
	next, ok := fallbackFlags(SetupSingleIssuer | SetupDeferTaskrun)
	if !ok || next != SetupSingleIssuer|SetupCoopTaskrun|SetupTaskrunFlag {
		t.Errorf("fallback step = %v", next)
	}
}

func TestNopRoundTrip(t *testing.T) {
	r := newTestRing(t, Params{Entries: 4})
	for i := 0; i < 4; i++ {
		r.GetSQE().PrepNop()
	}
	if sqe := r.GetSQE(); sqe != nil {
		t.Fatal("GetSQE on a full SQ returned an SQE")
	}
	if r.Stats().SQFull != 1 {
		t.Fatalf("SQFull = %d", r.Stats().SQFull)
	}
	n, err := r.SubmitAndWait(4, time.Second, 0)
	if err != nil || n != 4 {
		t.Fatalf("SubmitAndWait = %d, %v", n, err)
	}
	var cqes [8]CQE
	got, _ := r.Reap(cqes[:])
	if got != 4 {
		t.Fatalf("reaped %d", got)
	}
}

func TestWaitTimeout(t *testing.T) {
	r := newTestRing(t, Params{Entries: 4})
	start := time.Now()
	if _, err := r.SubmitAndWait(1, 50*time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	if el < 45*time.Millisecond || el > 2*time.Second {
		t.Fatalf("wait took %v, want about 50ms", el)
	}
	if r.Stats().Timeouts != 1 {
		t.Fatalf("Timeouts = %d", r.Stats().Timeouts)
	}
}

func TestSingleIssuerOtherThread(t *testing.T) {
	done := make(chan *Ring)
	go func() {
		runtime.LockOSThread() // the thread dies with the goroutine: never reused
		r, err := New(Params{Entries: 4, Flags: SetupSingleIssuer | SetupDeferTaskrun})
		if err != nil {
			t.Error(err)
			done <- nil
			return
		}
		r.GetSQE().PrepNop()
		if _, err := r.Submit(); err != nil {
			t.Error(err)
		}
		done <- r
	}()
	r := <-done
	if r == nil {
		return
	}
	defer r.Close()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_, err := r.SubmitAndWait(1, 10*time.Millisecond, 0)
	if !errors.Is(err, syscall.EEXIST) {
		t.Fatalf("enter from another thread: err = %v, want EEXIST", err)
	}
	t.Log(err)
}
