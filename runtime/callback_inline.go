package uringrt

import (
	"sync/atomic"
	"time"
)

// Functions run on a loop between its batches (RunOnLoop), and the
// takeover of a loop whose function does not return.
//
// A request-reply protocol that parses on the loop and answers off it
// pays a goroutine hand-off per batch and a send(2) (or a post) per
// answer; run on the loop, the answers of a batch go out together in the
// loop's next submission. The loop runs the queued functions at the top
// of its iteration, after the posted requests and before the flush of the
// connections' output. The hazard is a function that blocks (a sleep, a
// lock, a database call): every other connection of the loop would wait.
// So the loop's goroutine is not the loop: a monitor looks at each loop
// every inlineTick, and when one function has been running for a whole
// tick it hands the loop to a new goroutine (takeover), which goes on
// with the next function. The old goroutine finishes its function as an
// ordinary goroutine and ends; it touches nothing of the loop's after
// the takeover. A function that knows it is about to wait calls LeaveLoop
// first and hands the loop over at once.
//
// What the function may touch of the loop's own state while it runs on the
// loop is what a write or close of a callback connection of that loop
// touches (post, AsyncClose): those take the loop-owned path (no copy into
// a posted request, no mutex) while inlineHold holds. The loop's state word
// (inlState: the function's sequence number and one of the states below)
// makes the takeover and those holds exclude each other:
//
//   - the loop stores seq|inlRun before each function;
//   - a hold moves inlRun to inlBusy (a CAS), checks that its goroutine
//     still runs the loop, and stores inlRun back when done;
//   - the monitor moves inlRun (never inlBusy) to inlStolen, only when the
//     word is unchanged since its last look;
//   - after the function the loop moves seq|inlRun to seq|inlNone; if it finds
//     another word (inlStolen, or a later sequence number of the new
//     goroutine) the loop was taken over and the old goroutine returns.
//
// The new goroutine stores its identity (inlG) before it runs anything of
// the loop's or stores a word, and a hold reads the word before inlG: a
// hold of the old goroutine that began before the takeover has ended (the
// monitor's CAS needs inlRun, not inlBusy), and one that begins after
// finds either a word that is not inlRun or inlG changed. The waits for
// inlBusy in set and end, and the second look at inlG in inlineHold, are
// kept as a guard; by that order they never find anything.

// loop states (inlState's low two bits)
const (
	inlNone   = iota // no function of RunOnLoop is running
	inlRun           // one is running on the loop's goroutine
	inlBusy          // that goroutine holds the loop-owned state for a write or close
	inlStolen        // the loop was handed to another goroutine while one ran
)

// inlineTick is how often the monitor looks at the loops: a function that
// has run for a whole tick (between one and two ticks) loses the loop.
const inlineTick = time.Millisecond

// inlineBatch is how long the functions queued in one iteration may hold
// the loop between them: past it, those left run off the loop.
const inlineBatch = time.Millisecond

// loopInline is a loop's RunOnLoop state.
type loopInline struct {
	q    []inlFn // queued functions (loop-owned), from q[head]
	head int
	seq  uint64         // the last function's sequence number (loop-owned)
	word atomic.Uint64  // seq<<2 | state
	g    atomic.Uintptr // the goroutine running the loop (curG)
	// cur is the connection of the function running (stored before its
	// word): a takeover holds its chain (callback_inline_chain.go).
	cur  atomic.Pointer[CallbackConn]
	seen uint64 // the word at the monitor's last look (monitor-owned)
	// runs, takeovers: functions run, and loops handed to a new goroutine
	runs, takeovers atomic.Uint64
	// refuse: RunOnLoop queues nothing on this loop (its caller runs fn
	// its own way), set by the monitor when it took the loop from a
	// function and cleared after refuseLeft looks. backoff is the length
	// of the last such window in looks, doubled by a takeover within
	// twice its length of the one before (at lastTO); monitor-owned.
	refuse              atomic.Bool
	refuseLeft, backoff int
	lastTO              time.Time
}

// inlFn is a queued function of RunOnLoop and its connection.
type inlFn struct {
	c  *CallbackConn
	fn func()
}

// Refusal after a takeover: the first window is refuseMin looks (ticks);
// a takeover within twice the last window's length of the one before
// doubles it, up to refuseMax.
// (Variables for the tests.)
var (
	refuseMin = 8
	refuseMax = 1024
)

// RunOnLoop queues fn to run on the goroutine of the connection's loop,
// after the loop has handled the completions it is working through and
// before it sends the connections' queued output (a function queued from
// a timer or OnDrained callback, which run after that point, runs in the
// loop's next iteration): what fn writes to connections of that loop
// (Write, AsyncWrite) and a Close it makes are taken without a copy into
// a posted request, when nothing of that connection posted before is
// still on its way, and leave with the loop's next submission, together
// with the answers of the other functions of the batch. fn is not a
// callback of the connection: the connection's callbacks may run
// meanwhile (on the loop once fn has lost it), and its writes are those
// of any goroutine. A Close from fn may run the connection's OnClose
// before it returns, on fn's goroutine: fn must not hold a lock OnClose
// takes.
//
// fn must not wait for the loop (for a callback of one of its
// connections, a drain of its output): a function about to wait calls
// LeaveLoop first. Should fn not return within one to two milliseconds
// (it blocks, works long, or its thread is descheduled), the loop goes on
// in a new goroutine and fn finishes on its own one, as if started with
// go; the loop's other connections then waited that long. That needs a P
// for the runtime's monitor: with every P busy (GOMAXPROCS=1 and fn
// computing), it comes at Go's forced preemption, about 10 ms. The
// functions queued behind one that lost the loop this way do not wait for
// the loop's next turn: they run off the loop, on goroutines; so do those
// left when the functions queued in one iteration have together held the
// loop for a millisecond. And for a while after such a takeover (8 ms,
// doubling with each takeover that follows soon, up to about a second)
// RunOnLoop queues nothing on that loop (it returns false), so functions
// that block do not stall it one after another. Stats.InlineTakeovers
// counts takeovers. A function that ends its goroutine (runtime.Goexit)
// hands the loop on at once. A panic in fn is not recovered (as in a
// goroutine of its own).
//
// One connection's functions run in the order queued and one at a time,
// on the loop or off it: once one of them runs off the loop (it lost the
// loop, or was moved off it), those the connection queues after it wait
// for it and run after it, off the loop, until none is left. So a
// function that waits for a later function of its own connection waits
// for ever, as a goroutine serving the connection's requests in turn
// would: what it waits for must come from a callback, or from another
// connection's function.
//
// It reports whether fn was queued: only from the connection's own
// callback on a loop that waits in Go's netpoller (the default, when the
// kernel lets Go's netpoller wait on the ring), on amd64 or arm64, and not
// in the while after a takeover above unless one of the connection's
// functions is still to run; false with Config.LockedLoops (a ring used
// from one thread only), a MayBlocker handler, BackendStd, or elsewhere,
// when the caller runs fn some other way.
func (c *CallbackConn) RunOnLoop(fn func()) bool {
	if !haveCurG || c.std != nil || c.blocking || c.l.gw == nil || !c.hold() {
		return false
	}
	l := c.l
	if l.chainJoin(c, fn) {
		return true // after c's functions running off the loop
	}
	if l.inl.refuse.Load() && !l.inl.queuedFor(c) {
		return false // (one of c's still queued: fn must not overtake it)
	}
	l.inl.q = append(l.inl.q, inlFn{c, fn})
	return true
}

// queuedFor reports whether a function of c waits in the loop's queue
// (loop only).
func (in *loopInline) queuedFor(c *CallbackConn) bool {
	for _, e := range in.q[in.head:] {
		if e.c == c {
			return true
		}
	}
	return false
}

// LeaveLoop, called by a function of RunOnLoop while it runs on the loop
// of c, hands that loop to a new goroutine at once: the caller goes on as
// an ordinary goroutine and may block. Elsewhere it does nothing. A
// function that must wait for input or a drain calls it before waiting
// (for what a callback of the connection delivers: a later function of
// the same connection runs only after this one returns).
func (c *CallbackConn) LeaveLoop() {
	if !haveCurG || c.std != nil {
		return
	}
	l := c.l
	in := &l.inl
	// The word before the goroutine: a takeover's goroutine stores its
	// identity before its first word, so a caller that lost the loop
	// cannot take the new goroutine's function for its own.
	w := in.word.Load()
	if w&3 != inlRun || in.g.Load() != curG() {
		return
	}
	if in.word.CompareAndSwap(w, w&^3|inlStolen) {
		l.takeover(false, in.cur.Load())
	}
}

// empty reports whether no function waits to run (loop only).
func (in *loopInline) empty() bool { return in.head == len(in.q) }
