package uringrt

import (
	"bufio"
	"container/heap"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// openOne serves h on rt (or on Go's net for BackendStd runtimes: the same
// API) and dials one client; it returns the client and the server's conn.
func openOne(t *testing.T, rt *Runtime, h HandlerFuncs) (net.Conn, *CallbackConn) {
	t.Helper()
	opened := make(chan *CallbackConn, 1)
	open := h.Open
	h.Open = func(c *CallbackConn) {
		if open != nil {
			open(c)
		}
		opened <- c
	}
	addr := serveCB(t, rt, h).Addr().String()
	cl := dialStd(t, addr, 1)[0]
	select {
	case c := <-opened:
		return cl, c
	case <-time.After(10 * time.Second):
		t.Fatal("connection not opened")
	}
	return nil, nil
}

// TestCallbackTimerDueAtCall: a timer armed in a callback that then runs
// long is due d after the call, not d after the loop took it: it fires as
// soon as the callback returns.
func TestCallbackTimerDueAtCall(t *testing.T) {
	const d, stall = 500 * time.Millisecond, 800 * time.Millisecond
	rt := newRT(t, Config{Loops: 1})
	fired := make(chan time.Duration, 1)
	cl, _ := openOne(t, rt, HandlerFuncs{
		Data: func(c *CallbackConn, _ []byte) {
			start := time.Now()
			c.AfterFunc(d, func(*CallbackConn) { fired <- time.Since(start) })
			time.Sleep(stall) // the loop is busy: the timer comes due meanwhile
		},
	})
	cl.Write([]byte("x"))
	select {
	case got := <-fired:
		// Due at the call: it runs when the callback returns (stall). Due
		// when the loop took it: stall + d.
		if got >= stall+d*7/10 {
			t.Fatalf("timer armed in a callback fired %v after the call, want about %v (due %v after the call)", got, stall, d)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("timer never fired")
	}
}

// TestCallbackTimerExpiryBounded: 20,000 timers due at once (another
// connection stalled the loop past their due time) do not run in one pass
// of the loop: a request posted to the loop by the first of them is taken
// before the last runs.
func TestCallbackTimerExpiryBounded(t *testing.T) {
	const n = 20000
	rt := newRT(t, Config{Loops: 1})
	var ran atomic.Int32
	var between atomic.Bool
	done := make(chan bool, 1)
	h := HandlerFuncs{
		Data: func(c *CallbackConn, data []byte) {
			if data[0] == 'S' {
				time.Sleep(500 * time.Millisecond) // every timer comes due meanwhile
				return
			}
			f := func(c *CallbackConn) {
				switch ran.Add(1) {
				case 1:
					c.l.post(request{kind: reqFunc, fn: func() { between.Store(true) }})
				case n:
					done <- between.Load()
				}
			}
			for range n {
				c.AfterFunc(100*time.Millisecond, f)
			}
		},
	}
	cl, _ := openOne(t, rt, h)
	cl2 := dialStd(t, cl.RemoteAddr().String(), 1)[0]
	cl.Write([]byte("x"))
	time.Sleep(30 * time.Millisecond)
	cl2.Write([]byte("S"))
	select {
	case ok := <-done:
		if !ok {
			t.Fatalf("%d expired timers ran in one pass: the loop took no request between the first and the last", n)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("only %d of %d timers ran", ran.Load(), n)
	}
}

// TestCallbackTimerWaitBounded: an idle loop wakes for its next timer
// (the idle wait made an hour: a wait not bounded by the timer hangs),
// whether the timer was armed in a callback or posted from another
// goroutine.
func TestCallbackTimerWaitBounded(t *testing.T) {
	old := loopIdleWait
	loopIdleWait = time.Hour
	t.Cleanup(func() { loopIdleWait = old })
	for _, locked := range []bool{false, true} {
		rt := newRT(t, Config{Loops: 1, LockedLoops: locked})
		fired := make(chan time.Duration, 2)
		start := time.Now()
		_, c := openOne(t, rt, HandlerFuncs{
			Open: func(c *CallbackConn) {
				c.AfterFunc(300*time.Millisecond, func(*CallbackConn) { fired <- time.Since(start) })
			},
		})
		time.Sleep(50 * time.Millisecond) // the loop sleeps
		posted := time.Now()
		c.AfterFunc(100*time.Millisecond, func(*CallbackConn) { fired <- time.Since(posted) })
		for range 2 {
			select {
			case got := <-fired:
				if got > 5*time.Second {
					t.Errorf("locked %v: a timer fired %v after it was armed: the loop slept past it", locked, got)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("locked %v: timer never fired: the loop slept past it", locked)
			}
		}
	}
}

// timerGapRun runs the client of TestCallbackTimers100kEchoGap against
// addr in a child process (so that the client's goroutines neither load
// nor are loaded by the server's runtime): echo connections ping-pong
// while a trigger connection's message makes the server arm 100,000
// timers. It returns the longest gap any echo connection saw between two
// replies, from the trigger until every timer ran (fired counts them),
// and how long after the trigger the last one ran.
func timerGapRun(t *testing.T, addr string, fired *atomic.Int64, timers int64) (gap, all time.Duration) {
	t.Helper()
	before := fired.Load()
	cmd := exec.Command(os.Args[0], "-test.run=^TestTimerGapClient$")
	cmd.Env = append(os.Environ(), "URINGRT_TIMER_GAP_CLIENT="+addr)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	r := bufio.NewReader(stdout)
	if line, _ := r.ReadString('\n'); strings.TrimSpace(line) != "triggered" {
		t.Fatalf("client: %q", line)
	}
	triggered := time.Now()
	deadline := triggered.Add(30 * time.Second)
	for fired.Load()-before < timers && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	all = time.Since(triggered)
	time.Sleep(20 * time.Millisecond)
	stdin.Close()
	line, _ := r.ReadString('\n')
	if _, err := fmt.Sscanf(line, "gap %d", &gap); err != nil {
		t.Fatalf("client: %q", line)
	}
	if got := fired.Load() - before; got < timers {
		t.Fatalf("%d of %d timers ran", got, timers)
	}
	return gap, all
}

// TestTimerGapClient is the child process of timerGapRun (it runs only
// with URINGRT_TIMER_GAP_CLIENT set): 8 echo connections and a trigger;
// it prints "triggered", then, when its stdin closes, "gap <ns>".
func TestTimerGapClient(t *testing.T) {
	addr := os.Getenv("URINGRT_TIMER_GAP_CLIENT")
	if addr == "" {
		t.Skip("the child process of TestCallbackTimers100kEchoGap")
	}
	const echoes = 8
	cs := dialStd(t, addr, echoes+1)
	msg := []byte("0123456789abcdef")
	var stop, measuring atomic.Bool
	var wg sync.WaitGroup
	gaps := make([]time.Duration, echoes)
	for i := range echoes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := cs[i]
			buf := make([]byte, len(msg))
			last := time.Now()
			for !stop.Load() {
				c.SetDeadline(time.Now().Add(30 * time.Second))
				if _, err := c.Write(msg); err != nil {
					fmt.Println("error:", err)
					return
				}
				if _, err := io.ReadFull(c, buf); err != nil {
					fmt.Println("error:", err)
					return
				}
				now := time.Now()
				if measuring.Load() {
					gaps[i] = max(gaps[i], now.Sub(last))
				}
				last = now
			}
		}()
	}
	time.Sleep(100 * time.Millisecond) // warm up
	measuring.Store(true)
	cs[echoes].Write([]byte("T"))
	fmt.Println("triggered")
	io.Copy(io.Discard, os.Stdin)
	stop.Store(true)
	wg.Wait()
	var m time.Duration
	for _, g := range gaps {
		m = max(m, g)
	}
	fmt.Printf("gap %d\n", m)
}

// TestCallbackTimers100kEchoGap: 100,000 AfterFunc armed by one OnData,
// all due together, keep the longest echo gap of the loop's other
// connections within 2x what Go's net shows with time.AfterFunc from a
// handler goroutine, in the same run (rounds alternate; the median of each
// side is compared). It runs without the race detector only (which slows
// the loop's code, not Go's timers).
func TestCallbackTimers100kEchoGap(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("a measurement: without -race, not -short")
	}
	const timers = 100000
	const d = 100 * time.Millisecond
	var fired atomic.Int64
	count := func() { fired.Add(1) }
	cb := func(*CallbackConn) { fired.Add(1) }

	rt := newRT(t, Config{Loops: 1})
	uaddr := serveCB(t, rt, HandlerFuncs{
		Data: func(c *CallbackConn, data []byte) {
			if data[0] == 'T' {
				for range timers {
					c.AfterFunc(d, cb)
				}
				return
			}
			c.Write(data)
		},
	}).Addr().String()

	gln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer gln.Close()
	go func() {
		for {
			c, err := gln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					if buf[0] == 'T' {
						for range timers {
							time.AfterFunc(d, count)
						}
						continue
					}
					c.Write(buf[:n])
				}
			}()
		}
	}()
	gaddr := gln.Addr().String()

	var ours, gos, oursAll, gosAll []time.Duration
	for range 3 {
		runtime.GC()
		gap, all := timerGapRun(t, gaddr, &fired, timers)
		gos, gosAll = append(gos, gap), append(gosAll, all)
		runtime.GC()
		gap, all = timerGapRun(t, uaddr, &fired, timers)
		ours, oursAll = append(ours, gap), append(oursAll, all)
	}
	med := func(s []time.Duration) time.Duration {
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s[len(s)/2]
	}
	o, g := med(ours), med(gos)
	t.Logf("longest echo gap around 100k timers: uringrt %v (rounds %v), Go net %v (rounds %v); the last timer ran after: uringrt %v, Go %v", o, ours, g, gos, oursAll, gosAll)
	// Go's gap is floored at 5 ms: a gap of a few ms is the machine's
	// scheduling noise.
	if o > 2*max(g, 5*time.Millisecond) {
		t.Errorf("uringrt's longest echo gap %v > 2x Go net's %v", o, g)
	}
}

// stateCount counts live handler states: each is registered with a
// cleanup that counts it freed.
type stateCount struct{ made, freed atomic.Int64 }

func (s *stateCount) new(size int) []byte {
	b := make([]byte, size)
	s.made.Add(1)
	runtime.AddCleanup(&b[0], func(*stateCount) { s.freed.Add(1) }, s)
	return b
}

// TestCallbackClosedConnTimersReleased: connections closed with a timer
// pending (AfterFunc of 10 minutes whose function holds the handler's
// state) keep none of it: 20,000 of them hold under 1 MiB of their state
// after a GC, on every backend.
func TestCallbackClosedConnTimersReleased(t *testing.T) {
	for _, b := range []Backend{BackendUring, BackendStd} {
		t.Run(b.String(), func(t *testing.T) { testClosedConnTimersReleased(t, b) })
	}
}

func testClosedConnTimersReleased(t *testing.T, backend Backend) {
	n, batch := 20000, 250
	if raceEnabled {
		n = 5000
	}
	const stateSize = 4 << 10
	rt := newRT(t, Config{Loops: 1, Backend: backend})
	var states stateCount
	opened := make(chan struct{}, batch)
	closed := make(chan struct{}, batch)
	addr := serveCB(t, rt, HandlerFuncs{
		Open: func(c *CallbackConn) {
			state := states.new(stateSize)
			c.AfterFunc(10*time.Minute, func(c *CallbackConn) { c.Write(state[:1]) })
			c.Every(10*time.Minute, func(c *CallbackConn) { c.Write(state[1:2]) })
			opened <- struct{}{}
		},
		Close: func(c *CallbackConn, err error) { closed <- struct{}{} },
	}).Addr().String()
	wait := func(ch chan struct{}, what string) {
		for range batch {
			select {
			case <-ch:
			case <-time.After(20 * time.Second):
				t.Fatalf("connections not %s", what)
			}
		}
	}
	heap := func() int64 {
		for range 3 {
			runtime.GC()
			time.Sleep(10 * time.Millisecond) // cleanups run on their own goroutine
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	var base int64
	for done := -batch; done < n; done += batch {
		if done == 0 {
			base = heap() // after a first batch: the loop's structures warmed up
		}
		cs := make([]net.Conn, 0, batch)
		for range batch {
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			cs = append(cs, c)
		}
		wait(opened, "opened")
		time.Sleep(time.Millisecond) // the timers armed from OnOpen are in place
		for _, c := range cs {
			c.Close() // the server's conn ends at the peer's FIN
		}
		wait(closed, "closed")
	}
	growth := heap() - base
	t.Logf("heap growth over %d closed connections: %d KiB", n, growth>>10)
	live := states.made.Load() - states.freed.Load()
	if held := live * stateSize; held >= 1<<20 {
		t.Fatalf("%d connections closed with a pending timer hold %d of their states (%d KiB); want under 1 MiB", n, live, held>>10)
	}
	// What they hold besides: under 1 KiB a closed connection (generous:
	// other tests' runtimes may still be ending; the heap grows by 5.6 KiB
	// a connection when its timers keep it).
	if growth > int64(n)<<10 {
		t.Fatalf("heap grew by %d KiB over %d closed connections: %d bytes each", growth>>10, n, growth/int64(n))
	}
}

// runLog records the start and end of each run of a timer.
type runLog struct {
	mu         sync.Mutex
	starts     []time.Time
	ends       []time.Time
	afterAStop int // runs started after stopped was set
	stopped    bool
}

func (r *runLog) start() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		r.afterAStop++
	}
	r.starts = append(r.starts, time.Now())
	return len(r.starts)
}

func (r *runLog) end() {
	r.mu.Lock()
	r.ends = append(r.ends, time.Now())
	r.mu.Unlock()
}

func (r *runLog) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.starts)
}

// TestCallbackEveryLateRunNoBunching: after a late run of Every (the loop
// was stalled by another connection) or a long one (its own function ran
// 3 periods, on the loop, on a MayBlocker's worker, or on BackendStd's
// goroutine), the next run does not follow at once: two runs start at
// least d/2 apart (d/4 here, for the scheduler's noise) and the run after
// a late or long one starts at least d/2 after it ended.
func TestCallbackEveryLateRunNoBunching(t *testing.T) {
	const d = 40 * time.Millisecond
	cases := []struct {
		name     string
		backend  Backend
		blocking bool
		stallBy  string // "self": the 2nd run lasts 3d; "other": another conn stalls the loop 3d
	}{
		{"loop/long", BackendUring, false, "self"},
		{"loop/late", BackendUring, false, "other"},
		{"worker/long", BackendUring, true, "self"},
		{"std/long", BackendStd, false, "self"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := newRT(t, Config{Loops: 1, Backend: tc.backend})
			var log runLog
			var stalled time.Time
			done := make(chan struct{})
			var tm *LoopTimer
			cl, _ := openOne(t, rt, HandlerFuncs{
				Blocking: tc.blocking,
				Open: func(c *CallbackConn) {
					if tm != nil {
						return // the stalling connection
					}
					tm = c.Every(d, func(c *CallbackConn) {
						k := log.start()
						if k == 2 && tc.stallBy == "self" {
							time.Sleep(3 * d)
						}
						log.end()
						if k == 8 {
							close(done)
						}
					})
				},
				Data: func(c *CallbackConn, _ []byte) {
					stalled = time.Now()
					time.Sleep(3 * d) // the loop (one loop) is stalled
				},
			})
			if tc.stallBy == "other" {
				for log.count() < 2 {
					time.Sleep(time.Millisecond)
				}
				cl2 := dialStd(t, cl.RemoteAddr().String(), 1)[0]
				cl2.Write([]byte("x"))
			}
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatalf("%d runs", log.count())
			}
			tm.Stop()
			log.mu.Lock()
			defer log.mu.Unlock()
			for k := 1; k < len(log.starts) && k < 8; k++ {
				gap := log.starts[k].Sub(log.starts[k-1])
				sinceEnd := log.starts[k].Sub(log.ends[k-1])
				long := log.ends[k-1].Sub(log.starts[k-1]) > d
				late := !stalled.IsZero() && log.starts[k-1].After(stalled) && log.starts[k-1].Sub(stalled) < 4*d
				if gap < d/4 {
					t.Errorf("runs %d and %d started %v apart (d %v)", k, k+1, gap, d)
				}
				if (long || late) && sinceEnd < d/2 {
					t.Errorf("run %d started %v after run %d ended, which was long (%v) or late: want at least %v", k+1, sinceEnd, k, long, d/2)
				}
			}
			if t.Failed() {
				var gaps []string
				for k := 1; k < len(log.starts); k++ {
					gaps = append(gaps, fmt.Sprint(log.starts[k].Sub(log.starts[k-1]).Round(time.Millisecond)))
				}
				t.Logf("gaps between starts: %v", gaps)
			}
		})
	}
}

// TestCallbackTimerStopMayBlocker: with a MayBlocker handler, no run of a
// timer starts on the worker after Stop returned true, even runs the loop
// had already handed to the worker; a one-shot timer whose run waits on
// the worker is still stoppable (Stop true, and it never runs).
func TestCallbackTimerStopMayBlocker(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	var every, once runLog
	release := make(chan struct{})
	started := make(chan struct{})
	_, c := openOne(t, rt, HandlerFuncs{Blocking: true})
	et := c.Every(5*time.Millisecond, func(*CallbackConn) {
		if every.start() == 1 {
			close(started)
			<-release // the worker is busy: later runs wait behind this one
		}
		every.end()
	})
	<-started
	ot := c.AfterFunc(time.Millisecond, func(*CallbackConn) { once.start() })
	time.Sleep(60 * time.Millisecond) // the loop hands the due runs to the busy worker
	if !et.Stop() {
		t.Error("Every's Stop = false while the timer was active")
	}
	every.mu.Lock()
	every.stopped = true
	every.mu.Unlock()
	if !ot.Stop() {
		t.Error("AfterFunc's Stop = false while its run had not started")
	}
	once.mu.Lock()
	once.stopped = true
	once.mu.Unlock()
	close(release)
	time.Sleep(100 * time.Millisecond)
	every.mu.Lock()
	defer every.mu.Unlock()
	once.mu.Lock()
	defer once.mu.Unlock()
	if every.afterAStop > 0 || once.afterAStop > 0 {
		t.Errorf("runs started after Stop returned true: Every %d, AfterFunc %d", every.afterAStop, once.afterAStop)
	}
}

// TestCallbackTimerNoRunAfterClose: with a MayBlocker handler, the runs
// of timers already handed to the busy worker do not start once Close
// returned.
func TestCallbackTimerNoRunAfterClose(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	release := make(chan struct{})
	started := make(chan struct{})
	var once sync.Once
	var log runLog
	cl, c := openOne(t, rt, HandlerFuncs{
		Blocking: true,
		Data: func(c *CallbackConn, _ []byte) {
			once.Do(func() { close(started) })
			<-release // the worker is busy
		},
	})
	cl.Write([]byte("x"))
	<-started
	c.AfterFunc(time.Millisecond, func(*CallbackConn) { log.start() })
	c.Every(5*time.Millisecond, func(*CallbackConn) { log.start() })
	time.Sleep(60 * time.Millisecond) // the loop hands the due runs to the worker
	c.Close()
	log.mu.Lock()
	log.stopped = true
	log.mu.Unlock()
	close(release)
	time.Sleep(100 * time.Millisecond)
	log.mu.Lock()
	defer log.mu.Unlock()
	if log.afterAStop > 0 {
		t.Errorf("%d timer runs started after Close returned", log.afterAStop)
	}
}

// TestCallbackTimerStopAfterRuntimeClose: Stop reports false for the
// timers of a connection the runtime's Close ended, armed before the
// Close or after it, on every backend.
func TestCallbackTimerStopAfterRuntimeClose(t *testing.T) {
	for _, b := range []Backend{BackendUring, BackendStd} {
		for _, blocking := range []bool{false, true} {
			t.Run(fmt.Sprint(b, "/blocking=", blocking), func(t *testing.T) {
				rt := newRT(t, Config{Loops: 1, Backend: b})
				_, c := openOne(t, rt, HandlerFuncs{Blocking: blocking})
				f := func(*CallbackConn) {}
				before := []*LoopTimer{c.AfterFunc(time.Hour, f), c.Every(time.Hour, f)}
				rt.Close()
				after := []*LoopTimer{c.AfterFunc(time.Hour, f), c.Every(time.Hour, f)}
				for i, tm := range append(before, after...) {
					if tm.Stop() {
						t.Errorf("timer %d (armed %s the runtime closed): Stop = true", i, map[bool]string{true: "before", false: "after"}[i < 2])
					}
				}
			})
		}
	}
}

// TestLoopTimersHeap: the loop's timer heap against a sorted list, through
// random pushes, removals from any place and pops; each timer knows its
// place.
func TestLoopTimersHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h loopTimers
	live := map[*LoopTimer]bool{}
	check := func() {
		for i, e := range h {
			if int(e.t.hidx) != i+1 || e.when != e.t.when {
				t.Fatalf("entry %d: hidx %d, when %d/%d", i, e.t.hidx, e.when, e.t.when)
			}
			if i > 0 && h[(i-1)/4].when > e.when {
				t.Fatalf("entry %d before its parent", i)
			}
		}
		if len(h) != len(live) {
			t.Fatalf("heap %d, live %d", len(h), len(live))
		}
	}
	for step := range 20000 {
		switch r := rng.IntN(10); {
		case r < 5 || len(live) == 0:
			tm := &LoopTimer{when: rng.Int64N(1000)}
			h.push(tm)
			live[tm] = true
		case r < 8:
			for tm := range live { // any one
				h.remove(tm)
				if tm.hidx != 0 {
					t.Fatal("removed timer keeps its place")
				}
				delete(live, tm)
				break
			}
		default:
			least := int64(1 << 62)
			for tm := range live {
				least = min(least, tm.when)
			}
			tm := h.pop()
			if tm.when != least {
				t.Fatalf("step %d: pop %d, want %d", step, tm.when, least)
			}
			delete(live, tm)
		}
		if step%97 == 0 {
			check()
		}
	}
	check()
}

// TestEveryNextDue: the schedule of Every (its doc).
func TestEveryNextDue(t *testing.T) {
	const d = 100
	for _, c := range []struct{ slot, start, end, want int64 }{
		{1000, 1000, 1010, 1100}, // on time: the schedule holds
		{1000, 1040, 1045, 1100}, // a little late: still
		{1000, 1050, 1055, 1100}, // d/2 late: still d/2 before the next
		{1000, 1051, 1056, 1156}, // more than d/2 late: restarts from its end
		{1000, 1300, 1301, 1401}, // runs missed: skipped
		{1000, 1000, 1090, 1100}, // long, but ended before the next
		{1000, 1000, 1250, 1350}, // longer than d: a full d after its end
	} {
		if got := nextDue(c.slot, c.start, c.end, d); got != c.want {
			t.Errorf("nextDue(%d, %d, %d, %d) = %d, want %d", c.slot, c.start, c.end, d, got, c.want)
		}
	}
}

// BenchmarkTimerHeap: 100,000 timers armed with due times in call order
// (as a burst of AfterFunc of one duration), a tenth stopped, the rest
// expired: the loop's 4-ary heap with each timer's place, against a
// binary heap through container/heap (the structure before).
func BenchmarkTimerHeap(b *testing.B) {
	const n = 100000
	ts := make([]*LoopTimer, n)
	for i := range ts {
		ts[i] = &LoopTimer{when: int64(i)}
	}
	b.Run("4ary", func(b *testing.B) {
		for b.Loop() {
			var h loopTimers
			for _, t := range ts {
				h.push(t)
			}
			for i := 0; i < n; i += 10 {
				h.remove(ts[i])
			}
			for len(h) > 0 {
				h.pop()
			}
		}
	})
	b.Run("binary", func(b *testing.B) {
		for b.Loop() {
			var h binTimers
			for _, t := range ts {
				heap.Push(&h, t)
			}
			for i := 0; i < n; i += 10 {
				heap.Remove(&h, int(ts[i].hidx))
			}
			for h.Len() > 0 {
				heap.Pop(&h)
			}
		}
	})
}

// binTimers is a binary heap of timers through container/heap.
type binTimers []*LoopTimer

func (h binTimers) Len() int           { return len(h) }
func (h binTimers) Less(i, j int) bool { return h[i].when < h[j].when }
func (h binTimers) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].hidx, h[j].hidx = int32(i), int32(j)
}
func (h *binTimers) Push(x any) {
	t := x.(*LoopTimer)
	t.hidx = int32(len(*h))
	*h = append(*h, t)
}
func (h *binTimers) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return t
}

// BenchmarkCallbackTimers100k: one OnData arms 100,000 AfterFunc(1ms) on
// its loop; an op is the arming plus every run (ns/op / 100,000 is one
// timer's life on the loop).
func BenchmarkCallbackTimers100k(b *testing.B) {
	const n = 100000
	rt := newRT(b, Config{Loops: 1})
	var ran atomic.Int64
	done := make(chan struct{}, 1)
	f := func(*CallbackConn) {
		if ran.Add(1)%n == 0 {
			done <- struct{}{}
		}
	}
	addr := serveCB(b, rt, HandlerFuncs{
		Data: func(c *CallbackConn, _ []byte) {
			for range n {
				c.AfterFunc(time.Millisecond, f)
			}
		},
	}).Addr().String()
	cl := dialStd(b, addr, 1)[0]
	for b.Loop() {
		cl.Write([]byte("x"))
		<-done
	}
}
