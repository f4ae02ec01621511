package netpoll

import (
	"errors"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func threadVoluntarySwitches(t *testing.T) int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		t.Fatal(err)
	}
	return ru.Nvcsw
}

// TestDeferTaskrunBatchedWake shows batched local task_work: on a
// DEFER_TASKRUN ring, a thread waiting with min_complete=N for N recvs whose
// data arrives one by one is woken once, not once per completion; waiting
// for one CQE at a time costs a wake-up per completion.
func TestDeferTaskrunBatchedWake(t *testing.T) {
	const n = 24
	run := func(batched bool) int64 {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		r, err := New(Params{Entries: 64, Flags: SetupSingleIssuer | SetupDeferTaskrun})
		if err != nil {
			t.Skipf("no DEFER_TASKRUN: %v", err)
		}
		defer r.Close()
		peers := make([]int, n)
		bufs := make([][]byte, n)
		for i := range peers {
			a, b := tcpPair(t)
			peers[i] = a
			bufs[i] = make([]byte, 8)
			r.GetSQE().SetUserData(uint64(i+1)).PrepRecv(b, bufs[i], 0)
		}
		if _, err := r.Submit(); err != nil {
			t.Fatal(err)
		}
		go func() {
			for _, p := range peers {
				time.Sleep(time.Millisecond)
				unix.Write(p, []byte("x"))
			}
		}()
		before := threadVoluntarySwitches(t)
		got := 0
		var cqes [n]CQE
		deadline := time.Now().Add(5 * time.Second)
		for got < n && time.Now().Before(deadline) {
			want := uint32(1)
			if batched {
				want = uint32(n - got)
			}
			if _, err := r.SubmitAndWait(want, time.Second, 0); err != nil {
				t.Fatal(err)
			}
			k, _ := r.Reap(cqes[:])
			got += k
		}
		if got != n {
			t.Fatalf("reaped %d of %d", got, n)
		}
		return threadVoluntarySwitches(t) - before
	}
	batched := run(true)
	single := run(false)
	t.Logf("voluntary context switches for %d completions: batched %d, one at a time %d", n, batched, single)
	if batched > 3 {
		t.Errorf("batched wait woke %d times for %d completions, want about 1", batched, n)
	}
	if single < n/2 {
		t.Errorf("waiting one at a time woke only %d times: the test did not spread completions", single)
	}
}

// TestSQPoll drives a ring whose SQ is consumed by the kernel's SQPOLL
// thread: submits need no enter while it is awake.
func TestSQPoll(t *testing.T) {
	r, err := New(Params{Entries: 8, Flags: SetupSQPoll, SQThreadIdle: 10 * time.Millisecond})
	if err != nil {
		t.Skipf("SQPOLL unavailable: %v", err)
	}
	defer r.Close()
	for i := 0; i < 20; i++ {
		r.GetSQE().SetUserData(uint64(i)).PrepNop()
		c := waitOne(t, r)
		if c.UserData != uint64(i) || c.Res != 0 {
			t.Fatalf("CQE %+v", c)
		}
		if i == 10 {
			time.Sleep(30 * time.Millisecond) // let the SQPOLL thread sleep: needs a wakeup
		}
	}
}

// TestCQPendingSeesDeferredTaskwork: on a DEFER_TASKRUN|TASKRUN_FLAG ring a
// recv completed by arriving data is held as task_work, not posted to the
// CQ; CQPending sees it from user space (IORING_SQ_TASKRUN) with no
// syscall, and an enter without waiting brings the CQE in. This is what a
// loop's busy-poll before sleeping relies on.
func TestCQPendingSeesDeferredTaskwork(t *testing.T) {
	r, a := deferTaskrunRecv(t, 7)
	if _, err := r.Submit(); err != nil {
		t.Fatal(err)
	}
	if r.CQPending() {
		t.Fatal("CQPending before any data arrived")
	}
	if _, err := unix.Write(a, []byte("x")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !r.CQPending() {
		if time.Now().After(deadline) {
			t.Fatal("CQPending stayed false for 5 s after the data arrived")
		}
	}
	if n := r.CQReady(); n != 0 {
		t.Fatalf("CQReady = %d before any enter: the completion was not deferred", n)
	}
	if _, err := r.Submit(); err != nil { // GETEVENTS without waiting: runs the task_work
		t.Fatal(err)
	}
	var cqes [4]CQE
	n, err := r.Reap(cqes[:])
	if err != nil || n != 1 || cqes[0].UserData != 7 || cqes[0].Res != 1 {
		t.Fatalf("reap: n=%d err=%v cqe=%+v, want the recv of 1 byte", n, err, cqes[0])
	}
	if r.CQPending() {
		t.Fatal("CQPending after the CQ was reaped")
	}
}

// TestSubmitAndWaitHoldP: the raw wait returns when the completion arrives
// and, with none, when its timeout ends, like SubmitAndWait.
func TestSubmitAndWaitHoldP(t *testing.T) {
	r, a := deferTaskrunRecv(t, 9)
	go func() {
		time.Sleep(2 * time.Millisecond)
		unix.Write(a, []byte("hi"))
	}()
	var cqes [4]CQE
	got, calls := 0, 0
	for got == 0 && calls < 5 { // EINTR (a Go preemption signal) may end a wait early
		calls++
		if _, err := r.SubmitAndWaitHoldP(1, 500*time.Millisecond, 0); err != nil {
			t.Fatal(err)
		}
		got, _ = r.Reap(cqes[:])
	}
	if got != 1 || cqes[0].UserData != 9 || cqes[0].Res != 2 {
		t.Fatalf("after %d waits got %d CQEs, first %+v; want the recv of 2 bytes: the wait did not wait", calls, got, cqes[0])
	}
	_, idle := tcpPair(t)
	buf := make([]byte, 8)
	r.GetSQE().SetUserData(10).PrepRecv(idle, buf, 0) // never completes
	// A wait that EINTR (Go's preemption signal, frequent under load) ends
	// early is waited again, as the loop does; a wait that never sleeps
	// (min_complete 0) ends all five at once.
	var el time.Duration
	for calls = 0; calls < 5 && el < 2*time.Millisecond; calls++ {
		start := time.Now()
		if _, err := r.SubmitAndWaitHoldP(1, 3*time.Millisecond, 0); err != nil {
			t.Fatal(err)
		}
		if n, _ := r.Reap(cqes[:]); n != 0 {
			t.Fatalf("reaped %d CQEs from an idle ring", n)
		}
		el = time.Since(start)
	}
	if el > time.Second || el < 2*time.Millisecond {
		t.Fatalf("a 3 ms wait took %v (after %d tries)", el, calls)
	}
}

// deferTaskrunRecv locks the test's goroutine to its thread, sets up a
// SINGLE_ISSUER|DEFER_TASKRUN|TASKRUN_FLAG ring there and preps (without
// submitting) a recv of up to 8 bytes with user data ud on one end of a TCP
// pair; it returns the ring and the other end's fd. It skips the test
// without DEFER_TASKRUN; cleanup closes the ring and unlocks the thread.
func deferTaskrunRecv(t *testing.T, ud uint64) (*Ring, int) {
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	r, err := New(Params{Entries: 8, Flags: SetupSingleIssuer | SetupDeferTaskrun | SetupTaskrunFlag})
	if err != nil {
		t.Skipf("no DEFER_TASKRUN: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	a, b := tcpPair(t)
	buf := make([]byte, 8)
	t.Cleanup(func() { runtime.KeepAlive(buf) })
	r.GetSQE().SetUserData(ud).PrepRecv(b, buf, 0)
	return r, a
}

// TestSubmitAndWaitSubmitsBeforeSleeping: a wait with SQEs to submit first
// submits them (and runs the task_work they make) in an enter that does not
// sleep, and sleeps only if that left fewer than min_complete CQEs. Both
// halves keep SubmitAndWait's contract: enough CQEs from the submission
// end the call at once, too few make it wait out its timeout, and the
// SINGLE_ISSUER check still answers EEXIST on the submitting enter.
func TestSubmitAndWaitSubmitsBeforeSleeping(t *testing.T) {
	r, _ := deferTaskrunRecv(t, 1) // a recv that never completes
	var cqes [8]CQE
	for i := 0; i < 4; i++ {
		r.GetSQE().SetUserData(uint64(10 + i)).PrepNop()
	}
	before := r.Stats()
	start := time.Now()
	if _, err := r.SubmitAndWait(4, 5*time.Second, 0); err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	st := r.Stats()
	if n, _ := r.Reap(cqes[:]); n != 4 || el > time.Second {
		t.Fatalf("4 NOPs and a pending recv, waiting for 4: reaped %d after %v", n, el)
	}
	if got := st.SQEsSubmitted - before.SQEsSubmitted; got != 5 {
		t.Fatalf("submitted %d SQEs, want 5", got)
	}
	if got := st.Enters - before.Enters; got != 1 {
		t.Errorf("%d enters for a wait its submission satisfied, want 1 (no sleeping enter)", got)
	}

	r.GetSQE().SetUserData(20).PrepNop()
	start = time.Now()
	if _, err := r.SubmitAndWait(2, 40*time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	el = time.Since(start)
	if n, _ := r.Reap(cqes[:]); n != 1 || el < 35*time.Millisecond || el > 2*time.Second {
		t.Fatalf("a NOP and a pending recv, waiting for 2 for 40ms: reaped %d after %v", n, el)
	}

	// SQEs queued on a SINGLE_ISSUER ring by another thread.
	r.GetSQE().SetUserData(30).PrepNop()
	errc := make(chan error)
	go func() {
		runtime.LockOSThread() // not the ring's thread: the test's goroutine holds that one
		_, err := r.SubmitAndWait(1, 10*time.Millisecond, 0)
		errc <- err
	}()
	if err := <-errc; !errors.Is(err, syscall.EEXIST) {
		t.Fatalf("submitting wait from another thread: err = %v, want EEXIST", err)
	}
}
