package runtime

import (
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/uringrt/uringrt/netpoll"
)

const sqeAsync = netpoll.SQEAsync

// listener is a uringrt net.Listener. Accept tries accept4(2) nonblocking
// and, on EAGAIN, parks on the loop's multishot poll of the listening
// socket. Serve instead arms a multishot accept on the loop.
type listener struct {
	fd     *netFD
	rt     *Runtime
	active atomic.Int64 // open connections accepted here (MaxConns)
	opts   *listenOpts  // from a ListenConfig (listenconfig.go); nil: defaults

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
		if fd.closing.Load() {
			return nil, fd.opError("accept", net.ErrClosed)
		}
		if fd.rdl.expired.Load() {
			return nil, fd.opError("accept", os.ErrDeadlineExceeded)
		}
		if !fd.incref() {
			continue
		}
		nfd, rsa, err := unix.Accept4(fd.fd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		fd.decref()
		if err == nil {
			c, ok := ln.newConn(nfd, rsa, false)
			if !ok {
				continue
			}
			return c, nil
		}
		switch err {
		case syscall.EAGAIN:
			fd.l.stats.acceptPollArmed.Add(1)
			fd.rearmPollIn()
			fd.rd.wait(fd.abortRead)
			continue
		case syscall.EINTR, syscall.ECONNABORTED:
			continue
		}
		errno := err.(syscall.Errno)
		ln.rt.countAcceptError(errno)
		return nil, fd.opError("accept", sysError("accept", errno))
	}
}

// newConn wraps an accepted fd whose peer address accept4 returned in rsa
// (nil after a multishot accept, which returns none: it is read here, and
// a connection whose peer reset it before it was accepted, so that it has
// no address any more, is closed unseen). False when MaxConns rejected it.
func (ln *listener) newConn(fd int, rsa unix.Sockaddr, callback bool) (*Conn, bool) {
	if max := ln.rt.cfg.MaxConns; max > 0 && ln.active.Load() >= int64(max) {
		unix.Close(fd)
		ln.rt.loops[0].stats.rejected.Add(1)
		return nil, false
	}
	if rsa == nil {
		var err error
		if rsa, err = unix.Getpeername(fd); err != nil {
			unix.Close(fd)
			return nil, false
		}
	}
	ln.active.Add(1)
	ln.initAccepted(fd) // sockopt.go: TCP_NODELAY, keep-alive
	l := ln.connLoop()
	var n *netFD
	if callback {
		n = newBareNetFD(ln.rt, l, fd, ln.fd.family, ln.fd.net)
		n.cb = true
	} else {
		n = newNetFD(ln.rt, l, fd, ln.fd.family, ln.fd.net)
	}
	n.ln = ln
	n.remot = sockaddrToAddr(ln.fd.net, rsa)
	n.local = ln.acceptedLocal(fd)
	ln.rt.track(n)
	l.stats.accepted.Add(1)
	if !callback {
		n.start(ln.rt.cfg.Pollable == PollHybrid)
	}
	return &Conn{fd: n}, true
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
	if sa, err := unix.Getsockname(fd); err == nil {
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
	fd.rdl.set(t, func() { fd.rd.interrupt() })
	return nil
}

// startServe arms the multishot accept for Serve (on the listener's loop).
func (l *loop) startServe(ln *listener) {
	ln.serving = true
	l.serving = append(l.serving, ln)
	ln.acceptOp = op{kind: opAcceptCB, fd: ln.fd.fd, ln: ln, nfd: ln.fd}
	ln.timerOp = op{kind: opTimer, ln: ln}
	l.arm(&ln.acceptOp)
}

func (l *loop) stopServe(ln *listener) {
	if !ln.serving {
		return
	}
	ln.serving = false
	l.cancelOp(&ln.acceptOp)
	l.cancelOp(&ln.timerOp)
	for i, s := range l.serving {
		if s == ln {
			l.serving = append(l.serving[:i], l.serving[i+1:]...)
			break
		}
	}
	if ln.served != nil {
		close(ln.served)
		ln.served = nil
	}
}

// onAccept runs for each multishot accept CQE.
func (ln *listener) onAccept(l *loop, o *op) {
	if o.res >= 0 && !ln.serving {
		// Accepted after Serve stopped (the multishot accept's cancel
		// was on its way): nobody serves it.
		unix.Close(int(o.res))
	} else if o.res >= 0 {
		ln.backoff = 0
		c, ok := ln.newConn(int(o.res), nil, true)
		if ok {
			cc := newCallbackConn(c.fd, ln.h, ln)
			c.fd.l.post(request{kind: reqRegisterCB, cc: cc})
		}
	} else if errno := ioErrno(o.res); errno != syscall.ECANCELED {
		ln.rt.countAcceptError(errno)
		if errno == syscall.EMFILE || errno == syscall.ENFILE || errno == syscall.ENOBUFS || errno == syscall.ENOMEM {
			// Out of descriptors: back off without spinning (5 ms doubling
			// to 1 s, as net/http does), then re-arm.
			if ln.backoff == 0 {
				ln.backoff = 5 * time.Millisecond
			} else if ln.backoff *= 2; ln.backoff > time.Second {
				ln.backoff = time.Second
			}
			ln.rt.logger.Warn("accept failed; backing off", "err", errno.Error(), "backoff", ln.backoff)
			if !o.armed && ln.serving {
				ln.timerOp.ts = netpoll.Timespec{Nsec: int64(ln.backoff)}
				if ln.backoff >= time.Second {
					ln.timerOp.ts = netpoll.Timespec{Sec: 1}
				}
				l.arm(&ln.timerOp)
			}
			return
		}
	}
	if !o.armed && ln.serving {
		l.arm(o)
	}
}

func (ln *listener) onTimer(l *loop, o *op) {
	if ln.serving && !ln.acceptOp.armed {
		l.arm(&ln.acceptOp)
	}
}
