package uringrt

import (
	"errors"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// reuseListener is a ReusePort group: one SO_REUSEPORT listening socket
// per loop. Serve arms a multishot accept on each loop's own socket; Accept
// takes connections from whichever socket has one (a goroutine per socket,
// started on the first Accept, waits in that socket's Accept).
type reuseListener struct {
	rt   *Runtime
	subs []*listener

	startOnce sync.Once
	// mu orders the start of the accept goroutines (wg.Add) before
	// Close's wg.Wait: a group closed first starts none.
	mu        sync.Mutex
	closed    bool
	conns     chan acceptResult
	done      chan struct{} // closed by Close
	closeOnce sync.Once
	wg        sync.WaitGroup

	dlMu sync.Mutex
	dl   time.Time
	wake chan struct{} // SetDeadline moved the deadline
}

type acceptResult struct {
	c   net.Conn
	err error
}

// Accept waits for and returns the next connection from any of the
// group's sockets; the connection belongs to the loop whose socket
// accepted it. After Close it returns an error wrapping net.ErrClosed;
// after the deadline one wrapping os.ErrDeadlineExceeded; accept4(2)
// errors (EMFILE, ...) as the single-socket Accept.
func (rl *reuseListener) Accept() (net.Conn, error) {
	rl.startOnce.Do(rl.startAccepting)
	for {
		rl.dlMu.Lock()
		dl := rl.dl
		rl.dlMu.Unlock()
		var timer *time.Timer
		var timeout <-chan time.Time
		if !dl.IsZero() {
			d := time.Until(dl)
			if d <= 0 {
				return nil, rl.opError(os.ErrDeadlineExceeded)
			}
			timer = time.NewTimer(d)
			timeout = timer.C
		}
		var r acceptResult
		got, closed := false, false
		select {
		case r = <-rl.conns:
			got = true
		case <-rl.done:
			closed = true
		case <-timeout:
		case <-rl.wake:
		}
		if timer != nil {
			timer.Stop()
		}
		switch {
		case got:
			return r.c, r.err
		case closed:
			return nil, rl.opError(net.ErrClosed)
		}
	}
}

func (rl *reuseListener) startAccepting() {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	rl.conns = make(chan acceptResult) // nil would block Accept's select too; made either way
	if rl.closed {
		return // Accept sees done
	}
	for _, ln := range rl.subs {
		rl.wg.Add(1)
		go rl.acceptLoop(ln)
	}
}

// acceptLoop hands the connections ln accepts to Accept callers.
func (rl *reuseListener) acceptLoop(ln *listener) {
	defer rl.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil && errors.Is(err, net.ErrClosed) {
			return
		}
		select {
		case rl.conns <- acceptResult{c, err}:
		case <-rl.done:
			if c != nil {
				c.Close()
			}
			return
		}
	}
}

// Close closes every socket of the group; a blocked Accept returns
// net.ErrClosed. Accepted connections stay open.
func (rl *reuseListener) Close() error {
	err := error(nil)
	first := false
	rl.closeOnce.Do(func() {
		first = true
		rl.mu.Lock()
		rl.closed = true
		rl.mu.Unlock()
		close(rl.done)
		for _, ln := range rl.subs {
			ln.Close()
		}
		rl.wg.Wait()
		rl.rt.mu.Lock()
		delete(rl.rt.listeners, rl)
		rl.rt.mu.Unlock()
	})
	if !first {
		err = rl.opError(net.ErrClosed)
		err.(*net.OpError).Op = "close"
	}
	return err
}

// Addr returns the group's listening address.
func (rl *reuseListener) Addr() net.Addr { return rl.subs[0].Addr() }

// SetDeadline sets the deadline for Accept, as *net.TCPListener does; a
// zero t clears it.
func (rl *reuseListener) SetDeadline(t time.Time) error {
	rl.dlMu.Lock()
	rl.dl = t
	rl.dlMu.Unlock()
	select {
	case rl.wake <- struct{}{}:
	default:
	}
	return nil
}

// SyscallConn returns the first loop's listening socket's RawConn.
func (rl *reuseListener) SyscallConn() (syscall.RawConn, error) { return rl.subs[0].SyscallConn() }

// File returns a duplicate of the first loop's listening socket.
func (rl *reuseListener) File() (*os.File, error) { return rl.subs[0].File() }

func (rl *reuseListener) opError(err error) error {
	fd := rl.subs[0].fd
	return &net.OpError{Op: "accept", Net: fd.net, Addr: fd.laddr(), Err: err}
}

// serve runs Serve on every socket of the group, each on its own loop, and
// returns when all have stopped.
func (rl *reuseListener) serve(rt *Runtime, h Handler) error {
	errs := make([]error, len(rl.subs))
	var wg sync.WaitGroup
	for i, ln := range rl.subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = rt.Serve(ln, h)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
