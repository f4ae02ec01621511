package main

import (
	"time"

	"github.com/uringrt/uringrt/runtime"
)

// The active expiry: while some keys have a TTL, a loop timer of one
// client's connection deletes expired keys every 100 ms (keys read again
// are deleted on access anyway). It runs on that client's loop, so with
// one loop the unlocked store is touched by that loop only; it stops when
// no key has a TTL (a server without them keeps no timer, and its idle
// loop does not wake), ends with the connection, and OnClose hands it to
// another client.

// startSweep starts the sweep on cl's loop unless it runs.
func (s *server) startSweep(cl *client) {
	s.mu.Lock()
	if s.sweeper == nil {
		s.startSweepLocked(cl)
	}
	s.mu.Unlock()
}

// startSweepLocked starts the sweep on cl's loop (s.mu held, none running).
func (s *server) startSweepLocked(cl *client) {
	s.sweeper = cl
	s.sweeping.Store(true)
	s.sweepT = cl.c.Every(sweepEvery, func(*uringrt.CallbackConn) {
		s.st.sweep(nowNano())
		if s.st.ttlKeys() > 0 {
			return
		}
		s.mu.Lock()
		if s.sweeper == cl {
			// Stop, unless a key with a TTL came meanwhile: a SET that
			// stored one after the count above sees sweeping false and
			// starts a new sweep; one before it shows in the count.
			s.sweeping.Store(false)
			if s.st.ttlKeys() == 0 {
				s.sweepT.Stop()
				s.sweeper, s.sweepT = nil, nil
			} else {
				s.sweeping.Store(true)
			}
		}
		s.mu.Unlock()
	})
}

// sweepEvery is the active expiry's period.
const sweepEvery = 100 * time.Millisecond
