package uringrt

// A loop's timer heap, on its own: ordering by due time and each timer's
// place in it, so that arming and stopping cost O(log n).

// timerEntry is a timer in the loop's heap, its due time kept beside it
// so that ordering reads no timer.
type timerEntry struct {
	when int64
	t    *LoopTimer
}

// loopTimers is a loop's timer heap: a 4-ary min-heap on when (loop-owned).
type loopTimers []timerEntry

func (h *loopTimers) push(t *LoopTimer) {
	*h = append(*h, timerEntry{t.when, t})
	h.up(len(*h) - 1)
}

// pop takes out the earliest timer.
func (h *loopTimers) pop() *LoopTimer {
	t := (*h)[0].t
	h.removeAt(0)
	return t
}

// remove takes t out (t.hidx > 0).
func (h *loopTimers) remove(t *LoopTimer) { h.removeAt(int(t.hidx) - 1) }

func (h *loopTimers) removeAt(i int) {
	s := *h
	s[i].t.hidx = 0
	last := len(s) - 1
	if i != last {
		s[i] = s[last]
	}
	s[last] = timerEntry{}
	s = s[:last]
	*h = s
	if i < last {
		if i > 0 && s[i].when < s[(i-1)/4].when {
			h.up(i)
		} else {
			h.down(i)
		}
	}
}

func (h loopTimers) up(i int) {
	e := h[i]
	for i > 0 {
		p := (i - 1) / 4
		if h[p].when <= e.when {
			break
		}
		h[i] = h[p]
		h[i].t.hidx = int32(i + 1)
		i = p
	}
	h[i] = e
	e.t.hidx = int32(i + 1)
}

func (h loopTimers) down(i int) {
	n := len(h)
	e := h[i]
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m, w := c, h[c].when
		for j := c + 1; j < c+4 && j < n; j++ {
			if h[j].when < w {
				m, w = j, h[j].when
			}
		}
		if w >= e.when {
			break
		}
		h[i] = h[m]
		h[i].t.hidx = int32(i + 1)
		i = m
	}
	h[i] = e
	e.t.hidx = int32(i + 1)
}

// shrink gives back the memory of a heap that emptied (after a burst of
// timers), keeping room for a few.
func (h *loopTimers) shrink() {
	if c := cap(*h); c > 256 && len(*h) < c/8 {
		*h = append(make(loopTimers, 0, c/4), *h...)
	}
}
