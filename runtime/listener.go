package uringrt

import (
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// listener is a uringrt net.Listener. Accept tries accept4(2) nonblocking
// and, on EAGAIN, parks on the loop's multishot poll of the listening
// socket. Serve instead arms a multishot accept on the loop.
type listener struct {
	fd     *netFD
	rt     *Runtime
	active *atomic.Int64 // open connections accepted here (MaxConns); shared by a ReusePort group
	opts   *listenOpts   // from a ListenConfig (listenconfig.go); nil: defaults
	// inherit: whether accepted sockets inherit the listener's TCP
	// options (sockopt.go); inheritUnknown until the first accept
	inherit atomic.Int32
	// plainAccepts: the listening socket is TCP, not MPTCP, with SO_LINGER
	// off after its Control hook (checked once by listenOn), so sockets
	// accepted from it are too (Linux copies both into them); netFD.plainTCP.
	plainAccepts bool

	serveMu sync.Mutex // guards h, served and closed against Serve/Close
	closed  bool
	// Serve state (loop-owned once Serve posted it)
	h        Handler
	acceptOp op
	timerOp  op
	backoff  time.Duration
	serving  bool
	served   chan error
}

var _ net.Listener = (*listener)(nil)

// Accept waits for and returns the next connection. After Close it returns
// an error wrapping net.ErrClosed. Errors from accept4(2) (EMFILE, ENFILE,
// ...) are returned as *net.OpError; callers back off as net/http does.
func (ln *listener) Accept() (net.Conn, error) {
	fd := ln.fd
	fd.rmu.Lock()
	defer fd.rmu.Unlock()
	for {
		var nfd int
		var rsa unix.RawSockaddrAny
		var errno syscall.Errno
		err := fd.rawIO(false, func(sysfd int) rawResult {
			var err error
			nfd, err = accept4Raw(sysfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, &rsa)
			switch err {
			case nil:
			case syscall.EAGAIN:
				fd.l.stats.acceptPollArmed.Add(1)
				return rawWait
			case syscall.EINTR, syscall.ECONNABORTED:
				return rawMore
			default:
				errno = err.(syscall.Errno)
			}
			return rawDone
		})
		switch {
		case err != nil:
			return nil, fd.opError("accept", err)
		case errno != 0:
			ln.rt.countAcceptError(errno)
			return nil, fd.opError("accept", sysError("accept", errno))
		}
		if c, ok := ln.newConn(nfd, rawToAddr(ln.fd.net, &rsa), false); ok {
			return c, nil
		}
	}
}

// newConn wraps an accepted fd whose peer address accept4 returned in
// remote (nil after a multishot accept, which returns none: it is read
// here, and a connection whose peer reset it before it was accepted, so
// that it has no address any more, is closed unseen). False when MaxConns
// rejected it.
func (ln *listener) newConn(fd int, remote net.Addr, callback bool) (*Conn, bool) {
	if !ln.reserveConn() { // listenconfig.go: MaxConns, exact across a ReusePort group's loops
		unix.Close(fd)
		ln.rt.loops[0].stats.rejected.Add(1)
		return nil, false
	}
	if remote == nil {
		rsa, err := getpeername(fd)
		if err != nil {
			ln.active.Add(-1)
			unix.Close(fd)
			return nil, false
		}
		remote = sockaddrToAddr(ln.fd.net, rsa)
	}
	ln.initAccepted(fd) // sockopt.go: TCP_NODELAY, keep-alive
	l := ln.connLoop(callback)
	var c *Conn
	var n *netFD
	if callback {
		n = newBareNetFD(ln.rt, l, fd, ln.fd.family, ln.fd.net)
		n.cb = true
		c = &Conn{fd: n}
	} else {
		c = newNetConn(ln.rt, l, fd, ln.fd.family, ln.fd.net)
		n = c.fd
	}
	n.ln = ln
	n.plainTCP = ln.plainAccepts
	n.remot = remote
	n.local = ln.acceptedLocal(fd)
	ln.rt.track(n)
	l.stats.accepted.Add(1)
	if !callback {
		n.startConn()
	}
	return c, true
}

// acceptedLocal is the local address of a connection accepted on ln: ln's
// own when it is bound to one address (no syscall), else getsockname's.
func (ln *listener) acceptedLocal(fd int) net.Addr {
	switch a := ln.fd.local.(type) {
	case *net.TCPAddr:
		if !a.IP.IsUnspecified() {
			return a
		}
	case *net.UnixAddr:
		return a
	}
	if sa, err := getsockname(fd); err == nil {
		return sockaddrToAddr(ln.fd.net, sa)
	}
	return nil
}

// Close stops listening; a blocked Accept returns net.ErrClosed. Accepted
// connections stay open.
func (ln *listener) Close() error {
	ln.serveMu.Lock()
	ln.closed = true
	serving := ln.h != nil
	ln.serveMu.Unlock()
	if serving {
		done := make(chan struct{})
		ln.fd.l.post(request{kind: reqFunc, fn: func() { ln.fd.l.stopServe(ln); close(done) }})
		select {
		case <-done:
		case <-ln.fd.l.done: // the runtime closed: its loop stopped serving
		}
	}
	ln.rt.mu.Lock()
	delete(ln.rt.listeners, ln)
	ln.rt.mu.Unlock()
	if err := ln.fd.close(); err != nil {
		return ln.fd.opError("close", err)
	}
	return nil
}

// Addr returns the listening address.
func (ln *listener) Addr() net.Addr { return ln.fd.laddr() }

// SetDeadline sets a deadline for Accept, as *net.TCPListener does.
func (ln *listener) SetDeadline(t time.Time) error {
	fd := ln.fd
	fd.rdl.set(t, func() {
		fd.rd.interrupt()
		if fd.gp.Load() != 0 {
			fd.goPollExpire()
		}
	})
	return nil
}

// SyscallConn returns the listening socket's syscall.RawConn; Read waits
// for a pending connection through the loop.
func (ln *listener) SyscallConn() (syscall.RawConn, error) {
	return rawConn{fd: ln.fd}, nil
}

// File returns a duplicate of the listening socket's descriptor, as
// *net.TCPListener.File does.
func (ln *listener) File() (*os.File, error) { return ln.fd.dupFile(false) }
