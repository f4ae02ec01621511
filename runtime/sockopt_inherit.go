package uringrt

import "golang.org/x/sys/unix"

// initAccepted prepares a socket this listener accepted (TCP_NODELAY,
// keep-alive from its ListenConfig or Go's defaults). Linux copies a
// listening socket's TCP_NODELAY and keep-alive settings (SO_KEEPALIVE,
// with its timer started, TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT) into
// every socket accepted from it (sk_clone_lock, tcp_create_openreq_child),
// so prepareInherit sets them once on the listener and the first accepted
// socket is checked with getsockopt: if it has them, later accepts make
// none of the five setsockopt(2) calls Go's net makes per connection
// (about a tenth of a connection's server CPU under connection churn,
// BENCHMARKS.md); if not (another kernel, or a Control that changed
// them), every accepted socket gets them as before.
func (ln *listener) initAccepted(fd int) {
	if ln.fd.family == unix.AF_UNIX {
		return
	}
	switch ln.inherit.Load() {
	case inheritYes:
		return
	case inheritUnknown:
		if ln.inherited(fd) {
			ln.inherit.Store(inheritYes)
			return
		}
		ln.inherit.Store(inheritNo)
	}
	initTCP(fd, ln.fd.family, ln.keepAlive())
}

// Whether accepted sockets inherit the listener's TCP options
// (listener.inherit).
const (
	inheritUnknown = iota // no connection accepted yet
	inheritYes
	inheritNo
)

func (ln *listener) keepAlive() keepAliveOpts {
	if ln.opts != nil {
		return ln.opts.keepAlive
	}
	return keepAliveOpts{}
}

// prepareInherit sets TCP_NODELAY and the keep-alive options on the
// listening socket itself, for its accepted sockets to inherit.
func (ln *listener) prepareInherit() {
	if ln.fd.family == unix.AF_UNIX {
		return
	}
	initTCP(ln.fd.fd, ln.fd.family, ln.keepAlive())
}

// inherited reports whether accepted socket fd already has what initTCP
// would set.
func (ln *listener) inherited(fd int) bool {
	get := func(level, opt int) int {
		v, err := unix.GetsockoptInt(fd, level, opt)
		if err != nil {
			return -1
		}
		return v
	}
	if get(unix.IPPROTO_TCP, unix.TCP_NODELAY) != 1 {
		return false
	}
	cfg, on := ln.keepAlive().config()
	if !on || !cfg.Enable {
		return get(unix.SOL_SOCKET, unix.SO_KEEPALIVE) == 0
	}
	if get(unix.SOL_SOCKET, unix.SO_KEEPALIVE) != 1 {
		return false
	}
	if cfg.Idle >= 0 && get(unix.IPPROTO_TCP, unix.TCP_KEEPIDLE) != keepAliveSecs(cfg.Idle, DefaultKeepAliveIdle) {
		return false
	}
	if cfg.Interval >= 0 && get(unix.IPPROTO_TCP, unix.TCP_KEEPINTVL) != keepAliveSecs(cfg.Interval, DefaultKeepAliveInterval) {
		return false
	}
	n := cfg.Count
	if n == 0 {
		n = DefaultKeepAliveCount
	}
	return n < 0 || get(unix.IPPROTO_TCP, unix.TCP_KEEPCNT) == n
}
