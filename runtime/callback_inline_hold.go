package uringrt

// A write or close made by a function of RunOnLoop while it runs on its
// connection's loop: it takes the loop-owned path under a hold of the
// loop's state word, which a takeover cannot pass.

// inlineHold takes the loop-owned state of l for a write or close made by
// a function of RunOnLoop on l's goroutine, and returns the word to give
// back with inlineUnhold; ok is false anywhere else.
func (l *loop) inlineHold() (w uint64, ok bool) {
	if !haveCurG {
		return 0, false
	}
	in := &l.inl
	g := curG()
	w = in.word.Load() // before the goroutine, as in LeaveLoop
	if w&3 != inlRun || in.g.Load() != g || !in.word.CompareAndSwap(w, w&^3|inlBusy) {
		return 0, false
	}
	if in.g.Load() != g { // taken over before the CAS: not ours
		in.word.Store(w)
		return 0, false
	}
	return w, true
}

func (l *loop) inlineUnhold(w uint64) { l.inl.word.Store(w) }

// inlineDo runs do holding c's loop-owned state when a function of
// RunOnLoop on c's loop calls, and nothing of c posted before is still on
// its way (it must go first); it reports whether it ran do.
func (c *CallbackConn) inlineDo(do func()) bool {
	l := c.l
	w, ok := l.inlineHold()
	if !ok {
		return false
	}
	// Deferred: a do that ends its goroutine (runtime.Goexit in an OnClose
	// it runs) gives the word back, and the function's own Goexit hand-off
	// then finds it.
	defer l.inlineUnhold(w)
	done := c.pendingWrites.Load() == 0 && !c.blocking
	if done {
		do()
	}
	return done
}

// postOnLoop takes a write of p (its bytes counted by reserve) into c's
// output queue for a function of RunOnLoop (inlineDo).
func (c *CallbackConn) postOnLoop(p []byte) bool {
	return c.inlineDo(func() {
		c.pendingWrites.Add(1) // queueAsync's count
		c.queueAsync(p)
	})
}

// closeOnLoopInline is AsyncClose for a function of RunOnLoop (inlineDo).
func (c *CallbackConn) closeOnLoopInline() bool {
	return c.inlineDo(func() {
		c.closeOnLoop(nil) // (shutWrites: wrClosed under the loop's mutex, as post reads it)
	})
}
