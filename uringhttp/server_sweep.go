package uringhttp

import "time"

// The timeout sweep: one goroutine per server checks every connection's
// phase stamps every quarter of the shortest timeout (at least 5 ms, at
// most 1 s). A request pays two atomic stores of a coarse clock; no timer
// is armed per request or per connection.

func (s *Server) sweepPeriod() time.Duration {
	d := time.Duration(0)
	for _, t := range []time.Duration{s.ReadHeaderTimeout, s.ReadTimeout, s.WriteTimeout, s.IdleTimeout} {
		if t > 0 && (d == 0 || t < d) {
			d = t
		}
	}
	if d == 0 {
		return 0
	}
	return min(max(d/4, 5*time.Millisecond), time.Second)
}

func (s *Server) sweeping() bool { return s.sweepOn.Load() }

func (s *Server) coarseNow() int64 { return s.clock.Load() }

func (s *Server) startSweep() {
	p := s.sweepPeriod()
	if p == 0 {
		return
	}
	s.sweepOnce.Do(func() {
		s.clock.Store(monoNow())
		s.sweepOn.Store(true)
		s.sweepStop = make(chan struct{})
		go s.sweep(p, s.sweepStop)
	})
}

func (s *Server) stopSweep() {
	s.mu.Lock()
	if s.sweepStop != nil {
		close(s.sweepStop)
		s.sweepStop = nil
	}
	s.mu.Unlock()
}

func (s *Server) sweep(p time.Duration, stop chan struct{}) {
	t := time.NewTicker(p)
	defer t.Stop()
	var conns []*hconn
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		now := monoNow()
		s.clock.Store(now)
		conns = conns[:0]
		s.mu.Lock()
		for h := range s.conns {
			conns = append(conns, h)
		}
		s.mu.Unlock()
		for _, h := range conns {
			// Stamps are taken from the coarse clock, up to p behind the
			// real time: a timeout counts from the stamp plus p, so that
			// it never fires early.
			s.check(h, now-int64(p))
		}
		clear(conns)
	}
}

// check applies the timeouts to one connection.
func (s *Server) check(h *hconn, now int64) {
	since := now - h.since.Load()
	rht := s.ReadHeaderTimeout
	if rht <= 0 {
		rht = s.ReadTimeout
	}
	idle := s.IdleTimeout
	if idle <= 0 {
		idle = s.ReadTimeout
	}
	switch h.phase.Load() {
	case phaseNew, phaseHead:
		if rht > 0 && since > int64(rht) {
			h.timeoutClose()
		}
	case phaseIdle:
		if idle > 0 && since > int64(idle) {
			h.timeoutClose()
		}
	case phaseActive:
		at := now - h.reqAt.Load()
		if s.ReadTimeout > 0 && at > int64(s.ReadTimeout) && !h.dlIs(dlRexp|dlRown) {
			h.dlSet(dlRexp, true)
			h.mu.Lock()
			h.wakeAll()
			h.mu.Unlock()
		}
		if s.WriteTimeout > 0 && at > int64(s.WriteTimeout) && !h.dlIs(dlWexp|dlWown) {
			h.dlSet(dlWexp, true)
			h.mu.Lock()
			h.wakeAll()
			h.mu.Unlock()
		}
	}
}

// timeoutClose closes a connection whose head or idle time ran out,
// without an answer (as net/http: a read timeout is not answered).
func (h *hconn) timeoutClose() {
	h.mu.Lock()
	if h.busy || h.hj != nil || h.dead {
		h.mu.Unlock()
		return
	}
	h.dead = true
	partial := h.buffered()+int(h.kept) > 0
	h.mu.Unlock()
	if partial {
		// net/http answers a head cut by its deadline with 400.
		h.errorReply(protoError("timeout"), true)
		return
	}
	h.c.Close()
}
