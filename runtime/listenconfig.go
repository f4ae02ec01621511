package uringrt

import (
	"context"
	"math"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ListenConfig holds options for listening, shaped like net.ListenConfig.
// The zero value listens as Listen does, on the default runtime:
// one listening socket on the first loop, accepted connections spread
// over the loops round robin, each with TCP_NODELAY and Go's keep-alive
// defaults. Networks: "tcp", "tcp4", "tcp6", "unix".
type ListenConfig struct {
	// Runtime listens on this runtime; nil means Default().
	Runtime *Runtime

	// Control, if not nil, runs after the listening socket is created and
	// before it is bound, with network "tcp4", "tcp6" or "unix" and the
	// address; an error aborts Listen. With ReusePort it runs once per
	// socket.
	Control func(network, address string, c syscall.RawConn) error
	// KeepAlive is the keep-alive idle time and interval of accepted TCP
	// connections; 0 means Go's defaults (15 s), negative turns keep-alive
	// off. Ignored when KeepAliveConfig.Enable is true.
	KeepAlive time.Duration
	// KeepAliveConfig, when Enable is true, sets accepted connections'
	// keep-alive probes (zero fields: Go's defaults; negative: the
	// kernel's).
	KeepAliveConfig net.KeepAliveConfig
	// ReusePort gives each loop its own listening socket on the address,
	// bound with SO_REUSEPORT (Linux 3.9+): the kernel spreads incoming
	// connections over them by a hash of the connection's addresses, each
	// loop accepts on its own socket (Serve: a multishot accept per loop)
	// and keeps the connections it accepted, so no connection is handed
	// from one loop to another. TCP only; the same as Config.ReusePort for
	// one listener. A connection still queued on a socket when it closes is
	// reset (the kernel does not move it to another socket of the group).
	ReusePort bool
	// DeferAccept, when positive, sets TCP_DEFER_ACCEPT on the listening
	// TCP socket (Linux 2.6.32+; ignored for "unix"): the kernel completes
	// the handshake but hands a connection to Accept or Serve only once its
	// first bytes have arrived. For a protocol whose client speaks first
	// (HTTP) the server is then woken once per connection, with the request
	// already readable, instead of once for the connection and once for its
	// request (on loopback both wake-ups are paid by the client's CPU). A client that connects and sends nothing sees its connect
	// succeed at once, but the server gets the connection only after about
	// DeferAccept, when the client answers a retransmitted SYN-ACK: the
	// kernel counts the time in SYN-ACK retransmissions (1 s, then 2 s, 4 s
	// ... apart), so it is rounded up to whole seconds and then to 1, 3, 7,
	// 15, 31 ... s. Not for protocols whose server speaks first (SMTP, a
	// database's greeting), whose clients would wait that long; past the
	// kernel's SYN-ACK retries (net.ipv4.tcp_synack_retries, 5 by default:
	// about a minute) a silent client's connection is dropped unseen.
	// 0 leaves the kernel's default (off). Listen fails with a
	// *net.OpError (Op "listen") if setsockopt(2) refuses it.
	DeferAccept time.Duration

	mptcp bool
}

// SetMultipathTCP asks for MPTCP listening sockets (Linux 5.6+; TCP where
// the kernel refuses), as net.ListenConfig.SetMultipathTCP.
func (lc *ListenConfig) SetMultipathTCP(use bool) { lc.mptcp = use }

// MultipathTCP reports whether SetMultipathTCP(true) was called.
func (lc *ListenConfig) MultipathTCP() bool { return lc.mptcp }

// Listen announces on the local address, as net.ListenConfig.Listen. The
// listener's Accept returns *Conn values (Go's connections with
// BackendStd); it also has SyscallConn and File. ctx bounds only the
// setup. Errors are *net.OpError with Op "listen" (EADDRINUSE, EACCES,
// net.ErrClosed after the runtime closed), or Default()'s error.
func (lc *ListenConfig) Listen(ctx context.Context, network, address string) (net.Listener, error) {
	rt := lc.Runtime
	if rt == nil {
		var err error
		if rt, err = Default(); err != nil {
			return nil, err
		}
	}
	return rt.listen(ctx, lc, network, address)
}

// std is lc as a net.ListenConfig (setsockopt SO_REUSEPORT first when
// reuse).
func (lc *ListenConfig) std(reuse bool) *net.ListenConfig {
	nl := &net.ListenConfig{}
	if lc == nil {
		lc = &ListenConfig{}
	}
	nl.KeepAlive, nl.KeepAliveConfig = lc.KeepAlive, lc.KeepAliveConfig
	nl.SetMultipathTCP(lc.mptcp)
	ctrl := lc.Control
	if secs := deferAcceptSecs(lc.DeferAccept); secs > 0 {
		// Set before bind and listen(2), which keep it, and before the
		// caller's Control, which may change it.
		user := ctrl
		ctrl = func(network, address string, c syscall.RawConn) error {
			if network != "unix" {
				var serr error
				if err := c.Control(func(fd uintptr) {
					serr = setsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_DEFER_ACCEPT, secs)
				}); err != nil {
					return err
				}
				if serr != nil {
					return serr
				}
			}
			if user != nil {
				return user(network, address, c)
			}
			return nil
		}
	}
	if reuse {
		nl.Control = func(network, address string, c syscall.RawConn) error {
			var serr error
			if err := c.Control(func(fd uintptr) {
				serr = setsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
			}); err != nil {
				return err
			}
			if serr != nil {
				return serr
			}
			if ctrl != nil {
				return ctrl(network, address, c)
			}
			return nil
		}
	} else {
		nl.Control = ctrl
	}
	return nl
}

// deferAcceptSecs is d rounded up to whole seconds (TCP_DEFER_ACCEPT's
// unit), 0 for d <= 0, at most math.MaxInt32 (setsockopt's int; the
// kernel caps it by its SYN-ACK retries anyway).
func deferAcceptSecs(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	secs := d / time.Second
	if d%time.Second != 0 {
		secs++
	}
	return int(min(secs, math.MaxInt32))
}

func (lc *ListenConfig) opts(reuse bool) *listenOpts {
	o := &listenOpts{reuse: reuse}
	if lc != nil {
		o.keepAlive = keepAliveOpts{idle: lc.KeepAlive, cfg: lc.KeepAliveConfig}
	}
	return o
}

// listen is Listen with a ListenConfig's options (lc nil: the zero one).
// The sockets are made by Go's net (address parsing, dual stack,
// SO_REUSEADDR, the Control hook) and then driven by this runtime's loops;
// with BackendStd it is Go's listener itself.
func (rt *Runtime) listen(ctx context.Context, lc *ListenConfig, network, address string) (net.Listener, error) {
	switch network {
	case "tcp", "tcp4", "tcp6", "unix":
	default:
		return nil, &net.OpError{Op: "listen", Net: network, Err: net.UnknownNetworkError(network)}
	}
	rt.mu.Lock()
	closed := rt.closed
	rt.mu.Unlock()
	if closed {
		return nil, &net.OpError{Op: "listen", Net: network, Err: net.ErrClosed}
	}
	reuse := network != "unix" && (rt.cfg.ReusePort || (lc != nil && lc.ReusePort))
	if rt.backend == BackendStd {
		gl, err := lc.std(reuse).Listen(ctx, network, address)
		if err != nil {
			return nil, err
		}
		sl := &stdListener{Listener: gl, rt: rt}
		rt.mu.Lock()
		rt.listeners[sl] = struct{}{}
		rt.mu.Unlock()
		return sl, nil
	}
	if reuse {
		return rt.listenReuse(ctx, lc, network, address)
	}
	return rt.listenOn(ctx, lc, rt.loops[0], false, network, address)
}

// listenOn makes one listening socket driven by loop l.
func (rt *Runtime) listenOn(ctx context.Context, lc *ListenConfig, l *loop, reuse bool, network, address string) (*listener, error) {
	gl, err := lc.std(reuse).Listen(ctx, network, address)
	if err != nil {
		return nil, err
	}
	fd, family, unlink, err := detachListener(gl)
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: network, Err: err}
	}
	nfd := newNetFD(rt, l, fd, family, network)
	nfd.unlinkPath = unlink
	nfd.captureLocal()
	ln := &listener{fd: nfd, rt: rt, opts: lc.opts(reuse), active: new(atomic.Int64)}
	ln.prepareInherit()
	ln.plainAccepts = plainTCPSocket(fd, family)
	if !rt.goPoll || !nfd.goPollOpen() { // Accept waits in Go's netpoller, or on the loop's poll
		nfd.start(true)
	}
	rt.mu.Lock()
	rt.listeners[ln] = struct{}{}
	rt.mu.Unlock()
	return ln, nil
}

// reserveConn counts a new connection against Config.MaxConns; false (and
// nothing counted) when the listener, or its ReusePort group, is full. A
// compare-and-swap, so loops accepting at once never pass the cap.
func (ln *listener) reserveConn() bool {
	max := int64(ln.rt.cfg.MaxConns)
	for {
		n := ln.active.Load()
		if max > 0 && n >= max {
			return false
		}
		if ln.active.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// listenReuse makes a SO_REUSEPORT socket per loop: the first binds the
// address (and picks the port for ":0"), the others bind what it got.
func (rt *Runtime) listenReuse(ctx context.Context, lc *ListenConfig, network, address string) (net.Listener, error) {
	rl := &reuseListener{rt: rt, done: make(chan struct{}), wake: make(chan struct{}, 1)}
	for i, l := range rt.loops {
		ln, err := rt.listenOn(ctx, lc, l, true, network, address)
		if err != nil {
			rl.Close()
			return nil, err
		}
		if i == 0 {
			address = ln.Addr().String()
		} else {
			// Config.MaxConns caps the group's open connections, as one
			// listener's (nothing was accepted yet: no Accept or Serve).
			ln.active = rl.subs[0].active
		}
		rl.subs = append(rl.subs, ln)
	}
	// The runtime's Close and Shutdown close the group, which closes its
	// sockets and wakes its Accept callers.
	rt.mu.Lock()
	for _, ln := range rl.subs {
		delete(rt.listeners, ln)
	}
	rt.listeners[rl] = struct{}{}
	rt.mu.Unlock()
	return rl, nil
}
