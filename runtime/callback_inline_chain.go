package uringrt

import (
	"sync"
	"sync/atomic"
)

// Off-loop chains: a connection's functions of RunOnLoop run in the order
// queued and one at a time, on the loop or off it. Once one of them runs
// off the loop (it lost the loop to a takeover, or was spilled), the
// functions the connection queues after it join its chain, which a
// goroutine runs in order: the function that lost the loop, when it
// returns, or a goroutine of the spill. A function holding the loop
// cannot overlap another of its connection (RunOnLoop is called from the
// connection's callbacks, on the loop's goroutine); one that lost it
// holds its connection's chain (holds) until it returns, so that nothing
// queued meanwhile overtakes it.

// offChain is one connection's functions waiting to run off the loop.
type offChain struct {
	q       []func()
	holds   int  // functions of the connection that lost the loop and have not returned
	running bool // a goroutine runs q
}

// loopChains is a loop's off-loop chains, by connection.
type loopChains struct {
	n  atomic.Int32 // chains in m (RunOnLoop's fast check)
	mu sync.Mutex
	m  map[*CallbackConn]*offChain
}

// chainLocked returns c's chain, made if it has none (mu held).
func (lc *loopChains) chainLocked(c *CallbackConn) *offChain {
	ch := lc.m[c]
	if ch == nil {
		if lc.m == nil {
			lc.m = make(map[*CallbackConn]*offChain)
		}
		ch = new(offChain)
		lc.m[c] = ch
		lc.n.Add(1)
	}
	return ch
}

// doneLocked forgets c's chain if nothing holds, runs or waits in it (mu
// held).
func (lc *loopChains) doneLocked(c *CallbackConn, ch *offChain) {
	if ch.holds == 0 && !ch.running && len(ch.q) == 0 {
		delete(lc.m, c)
		lc.n.Add(-1)
	}
}

// chainHold marks a function of c that just lost the loop (after the
// word's CAS that took it, before the loop goes on in a new goroutine, so
// before anything of c can be queued). The function may have returned
// already and released (holds went to -1): the hold then ends it.
func (l *loop) chainHold(c *CallbackConn) {
	lc := &l.chains
	lc.mu.Lock()
	ch := lc.chainLocked(c)
	ch.holds++
	if ch.holds == 0 {
		lc.doneLocked(c, ch) // nothing was queued: the loop had not gone on
	}
	lc.mu.Unlock()
}

// chainRelease ends the hold of a function of c that lost the loop and
// returned: the last one runs what was queued meanwhile, here (the caller
// is an ordinary goroutine now) or on a new goroutine. Before its hold
// (holds -1) it leaves that to chainHold.
func (l *loop) chainRelease(c *CallbackConn, here bool) {
	lc := &l.chains
	lc.mu.Lock()
	ch := lc.chainLocked(c)
	ch.holds--
	if ch.holds != 0 || ch.running {
		lc.mu.Unlock()
		return
	}
	if len(ch.q) == 0 {
		lc.doneLocked(c, ch)
		lc.mu.Unlock()
		return
	}
	ch.running = true
	lc.mu.Unlock()
	if here {
		l.chainRun(c, ch)
	} else {
		go l.chainRun(c, ch)
	}
}

// chainAdd queues fns on c's chain, started on a goroutine if nothing
// holds or runs it (a spill).
func (l *loop) chainAdd(c *CallbackConn, fns ...func()) {
	lc := &l.chains
	lc.mu.Lock()
	ch := lc.chainLocked(c)
	ch.q = append(ch.q, fns...)
	start := ch.holds == 0 && !ch.running
	ch.running = ch.running || start
	lc.mu.Unlock()
	if start {
		go l.chainRun(c, ch)
	}
}

// chainJoin queues fn on c's chain if c has one (RunOnLoop): true if it
// did. A loop with no chain pays one atomic load.
func (l *loop) chainJoin(c *CallbackConn, fn func()) bool {
	lc := &l.chains
	if lc.n.Load() == 0 {
		return false
	}
	lc.mu.Lock()
	ch := lc.m[c]
	if ch != nil {
		ch.q = append(ch.q, fn)
	}
	lc.mu.Unlock()
	return ch != nil
}

// chainRun runs c's chain until it is empty (ch.running set by the
// caller). A function that ends its goroutine (runtime.Goexit) leaves the
// rest to a new one.
func (l *loop) chainRun(c *CallbackConn, ch *offChain) {
	lc := &l.chains
	returned := false
	defer func() {
		if !returned {
			go l.chainRun(c, ch)
		}
	}()
	for {
		lc.mu.Lock()
		if len(ch.q) == 0 {
			ch.running = false
			lc.doneLocked(c, ch)
			lc.mu.Unlock()
			returned = true
			return
		}
		fn := ch.q[0]
		ch.q[0] = nil
		ch.q = ch.q[1:]
		lc.mu.Unlock()
		fn()
	}
}
