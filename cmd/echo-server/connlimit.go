package main

import (
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
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
//  2. a silent connection: no byte of it read by the server nor waiting
//     in its socket (a flood, or a client that connected and has not
//     written yet);
//  3. a connection that has sent part of a request, or a whole one not
//     yet parsed (http.StateNew): a slow-drip (slowloris) client, or a
//     probe whose request the server has not read yet;
//  4. a connection whose request is being served (http.StateActive), only
//     when every slot is busy: a client that pipelines and never reads.
//
// Class 2 apart from 3 is what keeps probes answered under a reconnect
// flood (clients that connect again as soon as they are evicted): a probe
// sends its request as soon as it connects, but a server goroutine may
// read it only after many newer connects, and the oldest connection
// without a parsed request would then be the probe.
//
// The http.Server reports each connection's state through connState (its
// ConnState hook). Descriptors held: at most max + 1 (the new connection,
// before its victim is closed).
type evictingListener struct {
	net.Listener
	max int

	mu      sync.Mutex
	conns   map[net.Conn]*connSlot
	seq     uint64 // orders connections by their last state change
	evicted uint64 // connections closed to make room (tests)
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
		l.evicted++
	}
	l.seq++
	hc := &heardConn{Conn: c}
	l.conns[hc] = &connSlot{state: http.StateNew, seq: l.seq}
	l.mu.Unlock()
	if victim != nil {
		victim.Close() // its server goroutine sees the error and reports StateClosed
	}
	return hc, nil
}

// heardConn is an accepted connection that notes when the server first
// reads a byte of it.
type heardConn struct {
	net.Conn
	heard atomic.Bool
}

func (c *heardConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.heard.Load() {
		c.heard.Store(true)
	}
	return n, err
}

// CloseWrite lets the http.Server half-close, as it does a *net.TCPConn.
func (c *heardConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}

// silent reports whether nothing of c was read and nothing waits in its
// socket (SIOCINQ: one ioctl(2)).
func (c *heardConn) silent() bool {
	if c.heard.Load() {
		return false
	}
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	inq := 0
	if rc.Control(func(fd uintptr) { inq, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ) }) != nil {
		return true
	}
	return inq == 0
}

// victimLocked picks the connection to close (l.mu held, l.conns not
// empty): the oldest idle one, else the oldest silent one (asking the
// kernel about the new connections oldest first, until one is silent),
// else the oldest new one, else the oldest.
func (l *evictingListener) victimLocked() net.Conn {
	type cand struct {
		c   net.Conn
		seq uint64
	}
	var idle, oldest cand
	news := make([]cand, 0, len(l.conns))
	for c, s := range l.conns {
		switch s.state {
		case http.StateIdle:
			if idle.c == nil || s.seq < idle.seq {
				idle = cand{c, s.seq}
			}
		case http.StateNew:
			news = append(news, cand{c, s.seq})
		}
		if oldest.c == nil || s.seq < oldest.seq {
			oldest = cand{c, s.seq}
		}
	}
	if idle.c != nil {
		return idle.c
	}
	if len(news) == 0 {
		return oldest.c
	}
	slices.SortFunc(news, func(a, b cand) int {
		if a.seq < b.seq {
			return -1
		}
		return 1
	})
	for _, n := range news {
		if hc, ok := n.c.(*heardConn); !ok || hc.silent() {
			return n.c
		}
	}
	return news[0].c
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

// evictions returns how many connections were closed to make room (for
// tests).
func (l *evictingListener) evictions() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.evicted
}

// open returns how many connections are open (for tests).
func (l *evictingListener) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// deferAccept sets TCP_DEFER_ACCEPT to secs on a TCP listener (see
// metricsDeferAccept); other listeners are left as they are, and an error
// only costs the protection.
func deferAccept(ln net.Listener, secs int) {
	sc, ok := ln.(syscall.Conn)
	if !ok {
		return
	}
	if rc, err := sc.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) {
			unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_DEFER_ACCEPT, secs)
		})
	}
}
