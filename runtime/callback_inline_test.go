package uringrt

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func inlineCounts(rt *Runtime) (runs, takeovers uint64) {
	st := rt.Stats()
	for _, l := range st.Loops {
		runs += l.InlineRuns
		takeovers += l.InlineTakeovers
	}
	return runs, takeovers
}

// replierPair serves inlineReplier on a one-loop runtime and dials two
// connections to it (deadlines 20 s away); onLoop counts the functions
// it queued.
func replierPair(t *testing.T) (rt *Runtime, onLoop *atomic.Int64, slow, fast net.Conn) {
	rt = newRT(t, Config{Loops: 1})
	onLoop = new(atomic.Int64)
	addr := serveCB(t, rt, inlineReplier(t, onLoop)).Addr().String()
	conns := dialStd(t, addr, 2)
	for _, c := range conns {
		c.SetDeadline(time.Now().Add(20 * time.Second))
	}
	return rt, onLoop, conns[0], conns[1]
}

// inlineReplier answers each line "<ms> <text>" from a function run on
// the loop: it sleeps ms milliseconds first (0: none), then writes
// "<text>\n" and, for text "close", closes the connection. The OnData
// write "ack " before it must arrive first.
func inlineReplier(t *testing.T, onLoop *atomic.Int64) HandlerFuncs {
	return HandlerFuncs{Data: func(c *CallbackConn, d []byte) {
		for _, line := range strings.Split(strings.TrimSpace(string(d)), "\n") {
			var ms int
			var text string
			fmt.Sscanf(line, "%d %s", &ms, &text)
			c.Write([]byte("ack "))
			fn := func() {
				if ms > 0 {
					time.Sleep(time.Duration(ms) * time.Millisecond)
				}
				c.Write([]byte(text + "\n"))
				if text == "close" {
					c.Close()
				}
			}
			if c.RunOnLoop(fn) {
				onLoop.Add(1)
			} else {
				go fn()
			}
		}
	}}
}

// TestRunOnLoop: functions queued from OnData run on the loop, their
// writes follow the callback's own in order, a Close from one ends the
// connection after its answer, and the runtime counts them.
func TestRunOnLoop(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	var onLoop atomic.Int64
	addr := serveCB(t, rt, inlineReplier(t, &onLoop)).Addr().String()
	conn := dialStd(t, addr, 1)[0]
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	for i := 0; i < 200; i++ {
		fmt.Fprintf(conn, "0 r%d\n", i)
		got, err := r.ReadString('\n')
		if want := fmt.Sprintf("ack r%d\n", i); err != nil || got != want {
			t.Fatalf("reply %d: %q, %v; want %q", i, got, err, want)
		}
	}
	fmt.Fprintf(conn, "0 close\n")
	rest, err := io.ReadAll(r)
	if err != nil || string(rest) != "ack close\n" {
		t.Fatalf("after close: %q, %v; want \"ack close\\n\" and EOF", rest, err)
	}
	// (No count of takeovers: a thread descheduled for a millisecond
	// under load is one.)
	if runs, _ := inlineCounts(rt); onLoop.Load() != 201 || runs != 201 {
		t.Fatalf("queued %d, InlineRuns %d; want 201, 201", onLoop.Load(), runs)
	}
}

// TestRunOnLoopTakeover: a function that sleeps 1 s on the loop of the
// only loop does not hold up another connection: the loop goes on in a new
// goroutine after about a millisecond, the sleeper's answer still comes,
// and a takeover is counted.
func TestRunOnLoopTakeover(t *testing.T) {
	rt, onLoop, slow, fast := replierPair(t)
	rs, rf := bufio.NewReader(slow), bufio.NewReader(fast)
	fmt.Fprintf(slow, "1000 slow\n")
	time.Sleep(20 * time.Millisecond) // the sleep has begun on the loop
	var worst time.Duration
	for i := 0; i < 20; i++ {
		t0 := time.Now()
		fmt.Fprintf(fast, "0 f%d\n", i)
		got, err := rf.ReadString('\n')
		if want := fmt.Sprintf("ack f%d\n", i); err != nil || got != want {
			t.Fatalf("fast reply %d: %q, %v; want %q", i, got, err, want)
		}
		worst = max(worst, time.Since(t0))
	}
	if worst > 500*time.Millisecond { // (behind the sleeper: about 1 s)
		t.Fatalf("a reply on the other connection took %v while a function slept on the loop", worst)
	}
	got, err := rs.ReadString('\n')
	if err != nil || got != "ack slow\n" {
		t.Fatalf("slow reply: %q, %v", got, err)
	}
	runs, takeovers := inlineCounts(rt)
	if takeovers < 1 || runs != uint64(onLoop.Load()) {
		t.Fatalf("InlineRuns %d (queued %d), InlineTakeovers %d; want a takeover", runs, onLoop.Load(), takeovers)
	}
}

// TestRunOnLoopLeaveLoop: a function that waits for what another
// connection's callback sends it hands the loop on first (LeaveLoop)
// and so gets it, without waiting for the monitor.
func TestRunOnLoopLeaveLoop(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	msgs := make(chan string, 1)
	var mu sync.Mutex
	var waiter *CallbackConn
	addr := serveCB(t, rt, HandlerFuncs{Data: func(c *CallbackConn, d []byte) {
		s := strings.TrimSpace(string(d))
		if s != "wait" {
			msgs <- s
			return
		}
		mu.Lock()
		waiter = c
		mu.Unlock()
		if !c.RunOnLoop(func() {
			c.LeaveLoop()
			c.Write([]byte(<-msgs + "\n"))
		}) {
			t.Error("RunOnLoop refused in OnData")
		}
	}}).Addr().String()
	conns := dialStd(t, addr, 2)
	for _, c := range conns {
		c.SetDeadline(time.Now().Add(10 * time.Second))
	}
	fmt.Fprintf(conns[0], "wait\n")
	time.Sleep(10 * time.Millisecond)
	fmt.Fprintf(conns[1], "hello\n")
	got, err := bufio.NewReader(conns[0]).ReadString('\n')
	if err != nil || got != "hello\n" {
		t.Fatalf("got %q, %v", got, err)
	}
	_, takeovers := inlineCounts(rt)
	if takeovers < 1 {
		t.Fatalf("InlineTakeovers %d, want 1", takeovers)
	}
	mu.Lock()
	w := waiter
	mu.Unlock()
	w.LeaveLoop() // elsewhere: nothing
	if _, after := inlineCounts(rt); after != takeovers {
		t.Fatalf("LeaveLoop off the loop took it over: InlineTakeovers %d, then %d", takeovers, after)
	}
}

// TestRunOnLoopRefused: RunOnLoop queues nothing outside the
// connection's own callback, nor on a locked loop.
func TestRunOnLoopRefused(t *testing.T) {
	for _, locked := range []bool{false, true} {
		rt := newRT(t, Config{Loops: 1, LockedLoops: locked})
		got := make(chan [2]bool, 1)
		addr := serveCB(t, rt, HandlerFuncs{Data: func(c *CallbackConn, d []byte) {
			in := c.RunOnLoop(func() {})
			out := make(chan bool)
			go func() { out <- c.RunOnLoop(func() {}) }()
			got <- [2]bool{in, <-out}
		}}).Addr().String()
		conn := dialStd(t, addr, 1)[0]
		conn.Write([]byte("x"))
		r := <-got
		if r[0] == locked || r[1] {
			t.Fatalf("LockedLoops %v: RunOnLoop in OnData %v, elsewhere %v", locked, r[0], r[1])
		}
	}
}

// TestRunOnLoopManyTakeovers: many connections whose functions each
// sleep a little, answered in order on each connection, with the loop
// taken over again and again; nothing is lost and the runtime closes.
func TestRunOnLoopManyTakeovers(t *testing.T) {
	rt := newRT(t, Config{Loops: 2})
	var onLoop atomic.Int64
	addr := serveCB(t, rt, inlineReplier(t, &onLoop)).Addr().String()
	conns := dialStd(t, addr, 16)
	var wg sync.WaitGroup
	for ci, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetDeadline(time.Now().Add(20 * time.Second))
			r := bufio.NewReader(c)
			for i := 0; i < 30; i++ {
				ms := 0
				if (i+ci)%5 == 0 {
					ms = 3
				}
				fmt.Fprintf(c, "%d c%dr%d\n", ms, ci, i)
				got, err := r.ReadString('\n')
				if want := fmt.Sprintf("ack c%dr%d\n", ci, i); err != nil || got != want {
					t.Errorf("conn %d reply %d: %q, %v; want %q", ci, i, got, err, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	if _, takeovers := inlineCounts(rt); takeovers == 0 {
		t.Fatal("no takeover with functions that sleep 3 ms")
	}
}

// TestRunOnLoopFromTimer: a function queued by a timer callback (which
// runs after the iteration's functions) runs in the next iteration, not
// after the loop's idle wait of a second.
func TestRunOnLoopFromTimer(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	addr := serveCB(t, rt, HandlerFuncs{Data: func(c *CallbackConn, d []byte) {
		c.AfterFunc(10*time.Millisecond, func(c *CallbackConn) {
			if !c.RunOnLoop(func() { c.Write([]byte("from the loop\n")) }) {
				c.Write([]byte("refused\n"))
			}
		})
	}}).Addr().String()
	conn := dialStd(t, addr, 1)[0]
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	for i := 0; i < 3; i++ {
		t0 := time.Now()
		conn.Write([]byte("x"))
		got, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil || got != "from the loop\n" {
			t.Fatalf("got %q, %v", got, err)
		}
		if d := time.Since(t0); d > 500*time.Millisecond {
			t.Fatalf("the function queued by a timer ran %v after the write (the timer: 10 ms)", d)
		}
	}
}

// TestRunOnLoopSpillAfterTakeover: functions queued behind one that lost
// the loop to the monitor do not each take the loop and lose it in turn:
// they run off the loop, a connection's in the order queued, and the
// loop's other connections are answered meanwhile.
func TestRunOnLoopSpillAfterTakeover(t *testing.T) {
	rt, _, slow, fast := replierPair(t)
	// One write, so one OnData queues all twenty (each sleeps 20 ms).
	var b strings.Builder
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&b, "20 s%d\n", i)
	}
	io.WriteString(slow, b.String())
	time.Sleep(5 * time.Millisecond)
	rf := bufio.NewReader(fast)
	for i := 0; i < 5; i++ {
		fmt.Fprintf(fast, "0 f%d\n", i)
		if got, err := rf.ReadString('\n'); err != nil || got != fmt.Sprintf("ack f%d\n", i) {
			t.Fatalf("fast reply %d: %q, %v", i, got, err)
		}
	}
	rs := bufio.NewReader(slow)
	var want strings.Builder
	for i := 0; i < 20; i++ {
		want.WriteString("ack ")
	}
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&want, "s%d\n", i)
	}
	got := make([]byte, want.Len())
	if _, err := io.ReadFull(rs, got); err != nil || string(got) != want.String() {
		t.Fatalf("slow replies %q, %v; want %q", got, err, want.String())
	}
	// Before: each of the twenty lost the loop in turn (twenty takeovers,
	// the fast connection waiting 1-2 ms for each). A descheduled thread
	// may add a spurious one.
	if _, takeovers := inlineCounts(rt); takeovers < 1 || takeovers > 5 {
		t.Fatalf("InlineTakeovers %d; want 1 (the rest run off the loop)", takeovers)
	}
}

// TestRunOnLoopRefusedAfterTakeover: for a while after the monitor took
// a loop from a function that blocked, RunOnLoop queues nothing there
// (the caller runs its function its own way), then queues again.
func TestRunOnLoopRefusedAfterTakeover(t *testing.T) {
	old := refuseMin
	refuseMin = 300 // looks (ms): wide enough for a loaded machine
	t.Cleanup(func() { refuseMin = old })
	rt := newRT(t, Config{Loops: 1})
	res := make(chan bool, 100)
	addr := serveCB(t, rt, HandlerFuncs{Data: func(c *CallbackConn, d []byte) {
		if string(d) == "block" {
			if !c.RunOnLoop(func() { time.Sleep(50 * time.Millisecond) }) {
				t.Error("RunOnLoop refused before any takeover")
			}
			return
		}
		res <- c.RunOnLoop(func() {})
	}}).Addr().String()
	conns := dialStd(t, addr, 2)
	conns[0].Write([]byte("block"))
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, takeovers := inlineCounts(rt); takeovers > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no takeover of a function that sleeps 50 ms")
		}
		time.Sleep(100 * time.Microsecond)
	}
	conns[1].Write([]byte("x"))
	if <-res {
		t.Fatal("RunOnLoop queued a function right after a takeover")
	}
	for {
		time.Sleep(20 * time.Millisecond)
		conns[1].Write([]byte("x"))
		if <-res {
			break // the window closed
		}
		if time.Now().After(deadline) {
			t.Fatal("RunOnLoop still refused 10 s after the takeover")
		}
	}
}

// TestRunOnLoopGoexit: a function that ends its goroutine
// (runtime.Goexit) on the loop hands the loop on, which goes on serving.
func TestRunOnLoopGoexit(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	addr := serveCB(t, rt, HandlerFuncs{Data: func(c *CallbackConn, d []byte) {
		if string(d) == "exit" {
			c.RunOnLoop(func() { runtime.Goexit() })
			return
		}
		c.RunOnLoop(func() { c.Write(d) })
	}}).Addr().String()
	conns := dialStd(t, addr, 2)
	conns[0].Write([]byte("exit"))
	c := conns[1]
	c.SetDeadline(time.Now().Add(10 * time.Second))
	b := make([]byte, 4)
	for i := 0; i < 10; i++ {
		c.Write([]byte("ping"))
		if _, err := io.ReadFull(c, b); err != nil || string(b) != "ping" {
			t.Fatalf("echo %d after a Goexit on the loop: %q, %v", i, b, err)
		}
	}
	if _, takeovers := inlineCounts(rt); takeovers != 1 {
		t.Fatalf("InlineTakeovers %d, want 1", takeovers)
	}
}

// TestRunOnLoopBatchBudget: functions queued together that each work a
// little (under the monitor's tick, so none is taken over) hold the loop
// for about a millisecond between them, not for the sum of their waits:
// the rest run off the loop, in order. Before: all twenty ran on the
// loop, one after the other (6 ms and more).
func TestRunOnLoopBatchBudget(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	addr := serveCB(t, rt, HandlerFuncs{Data: func(c *CallbackConn, d []byte) {
		for _, line := range strings.Fields(string(d)) {
			if !c.RunOnLoop(func() {
				// Work for 300 us (a sleep that short can last a
				// millisecond, and be taken over).
				for t0 := time.Now(); time.Since(t0) < 300*time.Microsecond; {
				}
				c.Write([]byte(line + "\n"))
			}) {
				t.Error("RunOnLoop refused")
			}
		}
	}}).Addr().String()
	c := dialStd(t, addr, 1)[0]
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var b, want strings.Builder
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&b, "m%d ", i)
		fmt.Fprintf(&want, "m%d\n", i)
	}
	io.WriteString(c, b.String())
	got := make([]byte, want.Len())
	if _, err := io.ReadFull(c, got); err != nil || string(got) != want.String() {
		t.Fatalf("replies %q, %v; want %q", got, err, want.String())
	}
	if runs, _ := inlineCounts(rt); runs > 10 {
		t.Fatalf("InlineRuns %d of 20 functions of 300 us each; want the rest off the loop after about 1 ms", runs)
	}
}

// TestRunOnLoopOrderAfterLeave: a connection's functions run in the order
// queued, one at a time, also when one of them leaves the loop and waits:
// what the connection queues meanwhile runs after it returns. Before: the
// next ran on the loop's new goroutine at once, overtaking it.
func TestRunOnLoopOrderAfterLeave(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	var mu sync.Mutex
	var order []string
	addr := serveCB(t, rt, HandlerFuncs{Data: func(c *CallbackConn, d []byte) {
		for _, line := range strings.Fields(string(d)) {
			c.RunOnLoop(func() {
				if line == "a" {
					c.LeaveLoop()
					time.Sleep(50 * time.Millisecond)
				}
				mu.Lock()
				order = append(order, line)
				mu.Unlock()
				c.Write([]byte(line))
			})
		}
	}}).Addr().String()
	c := dialStd(t, addr, 1)[0]
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "a")
	time.Sleep(10 * time.Millisecond)
	io.WriteString(c, "b c")
	got := make([]byte, 3)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "abc" {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("replies %q, %v (run order %v); want \"abc\"", got, err, order)
	}
}
