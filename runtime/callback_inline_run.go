package uringrt

import (
	"runtime"
	"time"
)

// Running the functions of RunOnLoop on the loop: the batch of an
// iteration, one function under the loop's state word, and the takeover
// that hands the loop to a new goroutine (spilling what was queued behind
// a function that blocked).

// runFrom runs the loop on this goroutine: the loop's own at its start
// (run), or a takeover's. A takeover's goroutine first hands queued
// functions off the loop: all of them (spill: the function that lost the
// loop blocked), or those of stolen's connection, which must wait for it.
func (l *loop) runFrom(spill bool, stolen *CallbackConn) {
	if haveCurG {
		// A takeover's goroutine first of all.
		l.inl.g.Store(curG())
	}
	if spill {
		l.spillInline(nil)
	} else if stolen != nil {
		l.spillInline(stolen)
	}
	l.iterate()
}

// takeover starts a new goroutine running the loop (the word is
// inlStolen, set by the caller).
//
// spill: the function blocked (the monitor took the loop from it), so the
// new goroutine hands the functions queued behind it to goroutines
// (spillInline) instead of running them on the loop.
// stolen: the connection of the function that lost the loop and goes on
// (nil for one that ended its goroutine): its chain is held until the
// function returns, and its functions still queued join that chain.
func (l *loop) takeover(spill bool, stolen *CallbackConn) {
	l.inl.takeovers.Add(1)
	if stolen != nil {
		l.chainHold(stolen)
	}
	go l.runFrom(spill, stolen)
}

// spillInline runs the queued functions off the loop, each connection's
// on its chain (in order, after one of its that lost the loop), on a
// goroutine (the new goroutine of a takeover, before it runs anything else
// of the loop's, or the loop when a batch ran past inlineBatch).
//
// only: spill only that connection's functions (those of a function that
// left the loop), the others staying queued for the loop.
func (l *loop) spillInline(only *CallbackConn) {
	in := &l.inl
	rest := in.q[in.head:]
	for i, e := range rest {
		if e.fn == nil || only != nil && e.c != only {
			continue // taken with an earlier one of its connection, or not spilled
		}
		fns := []func(){e.fn}
		for j := i + 1; j < len(rest); j++ {
			if rest[j].c == e.c && rest[j].fn != nil {
				fns = append(fns, rest[j].fn)
				rest[j].fn = nil
			}
		}
		l.chainAdd(e.c, fns...) // after a function of e.c that lost the loop, if one did
	}
	if only != nil {
		// Keep the others, in order.
		n := 0
		for _, e := range rest {
			if e.fn != nil && e.c != only {
				rest[n] = e
				n++
			}
		}
		clear(rest[n:])
		in.q = in.q[:in.head+n]
		return
	}
	clear(in.q)
	in.q, in.head = in.q[:0], 0
}

// runOne runs fn, the function seq, and reports whether the loop is still
// this goroutine's. A function that ends its goroutine (runtime.Goexit)
// hands the loop to a new one at once, as LeaveLoop does.
func (l *loop) runOne(c *CallbackConn, fn func(), seq uint64) bool {
	returned := false
	defer func() {
		if !returned {
			in := &l.inl
			w := seq<<2 | inlRun
			if in.word.CompareAndSwap(w, w&^3|inlStolen) {
				l.takeover(false, nil)
			} else {
				l.chainRelease(c, false) // it had lost the loop: its hold
			}
		}
	}()
	fn()
	returned = true
	if l.inl.end(seq) {
		return true
	}
	// It lost the loop: what its connection queued meanwhile runs now,
	// on this goroutine.
	l.chainRelease(c, true)
	return false
}

// runInline runs the queued functions. It reports false when the loop
// was handed to another goroutine during one of them: the caller then
// returns at once, touching nothing of the loop's.
func (l *loop) runInline() bool {
	in := &l.inl
	if in.head == len(in.q) {
		return true
	}
	start := time.Now()
	for in.head < len(in.q) {
		if in.head > 0 && time.Since(start) > inlineBatch {
			// The batch has held the loop long enough (functions that
			// each wait a little, under the takeover's tick): the rest
			// run off the loop.
			l.spillInline(nil)
			in.cur.Store(nil)
			return true
		}
		e := in.q[in.head]
		in.q[in.head] = inlFn{}
		in.head++
		in.seq++
		seq := in.seq
		in.cur.Store(e.c)
		in.set(seq<<2 | inlRun)
		// After the word: a monitor parking meanwhile either sees it or
		// is woken here (it stores parked before it looks).
		l.rt.inlMon.start(l.rt)
		in.runs.Add(1)
		if !l.runOne(e.c, e.fn, seq) {
			return false
		}
	}
	clear(in.q)
	in.q, in.head = in.q[:0], 0
	in.cur.Store(nil) // (no connection kept reachable by the last function)
	return true
}

// set stores w as the word, waiting out a hold should one be under way
// (see above: none can be, by the order of the loads).
func (in *loopInline) set(w uint64) {
	for {
		cur := in.word.Load()
		if cur&3 == inlBusy {
			runtime.Gosched()
			continue
		}
		if in.word.CompareAndSwap(cur, w) {
			return
		}
	}
}

// end marks the function seq done; false if the loop was taken over.
func (in *loopInline) end(seq uint64) bool {
	for {
		cur := in.word.Load()
		switch {
		case cur&3 == inlBusy:
			runtime.Gosched()
		case cur != seq<<2|inlRun:
			return false // inlStolen, or the new goroutine's later word
		case in.word.CompareAndSwap(cur, seq<<2|inlNone):
			return true
		}
	}
}
