package main

import (
	"net"
	"net/http"
	"sync"
)

// evictingListener caps the metrics server's open connections without
// ever making a new one wait: a connection that arrives at the cap is
// accepted, and the open connection that matters least is closed to make
// room. A cap that makes new connections wait in the accept backlog (as
// golang.org/x/net/netutil.LimitListener does) lets a client that opens the
// cap's worth of keep-alive connections and idles, or floods the port,
// starve the kubelet's probes until the idle timeout; here a probe, which
// sends its request as soon as it connects, always gets a slot.
//
// The victim, oldest first within each class:
//  1. an idle keep-alive connection (http.StateIdle): it costs its client
//     only a reconnect;
//  2. a connection that has not sent a whole request yet (http.StateNew):
//     a flood, a slow-drip (slowloris) client, or a scrape that has just
//     connected;
//  3. a connection whose request is being served (http.StateActive), only
//     when every slot is busy: a client that pipelines and never reads.
//
// The http.Server reports each connection's state through connState (its
// ConnState hook). Descriptors held: at most max + 1 (the new connection,
// before its victim is closed).
type evictingListener struct {
	net.Listener
	max int

	mu    sync.Mutex
	conns map[net.Conn]*connSlot
	seq   uint64 // orders connections by their last state change
}

// connSlot is what the listener knows of one open connection.
type connSlot struct {
	state http.ConnState
	seq   uint64 // when it entered state
}

func newEvictingListener(ln net.Listener, max int) *evictingListener {
	return &evictingListener{Listener: ln, max: max, conns: make(map[net.Conn]*connSlot)}
}

// Accept accepts the next connection; at the cap it closes a victim first.
func (l *evictingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	var victim net.Conn
	if len(l.conns) >= l.max {
		victim = l.victimLocked()
		delete(l.conns, victim)
	}
	l.seq++
	l.conns[c] = &connSlot{state: http.StateNew, seq: l.seq}
	l.mu.Unlock()
	if victim != nil {
		victim.Close() // its server goroutine sees the error and reports StateClosed
	}
	return c, nil
}

// victimLocked picks the connection to close (l.mu held, l.conns not empty).
func (l *evictingListener) victimLocked() net.Conn {
	rank := func(s http.ConnState) int {
		switch s {
		case http.StateIdle:
			return 0
		case http.StateNew:
			return 1
		}
		return 2
	}
	var best net.Conn
	var bestSlot *connSlot
	for c, s := range l.conns {
		if best == nil || rank(s.state) < rank(bestSlot.state) ||
			rank(s.state) == rank(bestSlot.state) && s.seq < bestSlot.seq {
			best, bestSlot = c, s
		}
	}
	return best
}

// connState is the http.Server's ConnState hook: it tracks each
// connection's state and forgets closed (and hijacked) ones.
func (l *evictingListener) connState(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch s {
	case http.StateClosed, http.StateHijacked:
		delete(l.conns, c)
	default:
		if slot, ok := l.conns[c]; ok && slot.state != s {
			l.seq++
			slot.state, slot.seq = s, l.seq
		}
	}
}

// open returns how many connections are open (for tests).
func (l *evictingListener) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}
