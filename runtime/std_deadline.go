package uringrt

import (
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// The callback API's SetReadTimeout and SetWriteTimeout under BackendStd:
// deadlines on the Go net.Conn that its reader goroutine and its writers
// move as bytes come and go, so that a program closes the same idle and
// stalled connections on both backends.
//
//   - Read: the deadline is the time the reader last went into Read (after
//     the bytes of the last one were handled, or a pause) plus the timeout;
//     when it passes, the reader looks at that time again (SetReadTimeout
//     may have moved it) and closes the connection with ErrReadTimeout, or
//     sets the deadline again from it; the close is a reset.
//   - Write: a blocked Write's deadline comes every quarter of the timeout;
//     a Write that timed out having written something made progress and
//     goes on with the rest, one that wrote nothing for the timeout closes
//     the connection with ErrWriteTimeout and a reset (its output is cut:
//     the peer must not take it for an orderly end).
//
// Shutdown's read deadline of now wins over these: once it was set
// (stdConn.drain), no other read deadline is.

// stdTimeouts is a BackendStd connection's timeout state.
type stdTimeouts struct {
	mu       sync.Mutex // orders deadline changes: SetXTimeout, the reader, a writer, Shutdown
	draining bool       // Shutdown gave the connection a read deadline of now (under mu)
	rdl      time.Time  // the read deadline set by the timeout, or zero (under mu)
	wdl      time.Time  // the write deadline likewise (under mu)

	readTO    atomic.Int64 // ns; 0: off
	writeTO   atomic.Int64
	lastRead  atomic.Int64 // monoNow of the reader's last going into Read, or of SetReadTimeout
	lastWrite atomic.Int64 // monoNow of the last write progress, or of SetWriteTimeout
	timedOut  atomic.Pointer[error]
}

// drain sets the connection's read deadline to now for Shutdown: a
// reader blocked in Read returns, and timeouts set no later deadline.
func (c *stdConn) drain(now time.Time) {
	c.to.mu.Lock()
	c.to.draining = true
	c.Conn.SetReadDeadline(now)
	c.to.mu.Unlock()
}

// stdSetTimeout is setDeadline under BackendStd (any goroutine).
func (c *CallbackConn) stdSetTimeout(d time.Duration, write bool) error {
	sc, ok := c.std.(*stdConn)
	if !ok {
		return errors.ErrUnsupported
	}
	d = max(d, 0)
	s := &sc.to
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if write {
		s.writeTO.Store(int64(d))
		s.lastWrite.Store(monoNow())
		if d > 0 && (s.wdl.IsZero() || s.wdl.After(now.Add(d))) {
			// A Write blocked without a deadline (or a far one) sees
			// the new timeout within d.
			s.wdl = now.Add(d)
			sc.Conn.SetWriteDeadline(s.wdl)
		}
		return nil
	}
	s.readTO.Store(int64(d))
	s.lastRead.Store(monoNow())
	if d > 0 && !s.draining && (s.rdl.IsZero() || s.rdl.After(now.Add(d))) {
		s.rdl = now.Add(d)
		sc.Conn.SetReadDeadline(s.rdl)
	}
	return nil
}

// noteRead stamps the reader going into Read (see above).
func (sc *stdConn) noteRead() {
	if sc.to.readTO.Load() > 0 {
		sc.to.lastRead.Store(monoNow())
	}
}

// stdReadExpired is called by the reader when a Read failed with a
// timeout: it reports true when the connection is to end (Shutdown's
// deadline, or the read timeout passed: then err is ErrReadTimeout),
// false when the reader reads on (the deadline was moved).
func (sc *stdConn) readExpired() (end bool, err error) {
	s := &sc.to
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		return true, nil
	}
	to := s.readTO.Load()
	if to == 0 {
		s.rdl = time.Time{}
		sc.Conn.SetReadDeadline(s.rdl)
		return false, nil
	}
	idle := monoNow() - s.lastRead.Load()
	if idle >= to {
		return true, ErrReadTimeout
	}
	s.rdl = time.Now().Add(time.Duration(to - idle))
	sc.Conn.SetReadDeadline(s.rdl)
	return false, nil
}

// stdWrite is Write under BackendStd: it writes all of p to the net.Conn
// (writers take turns on sx.mu), under the write timeout if one is set.
func (c *CallbackConn) stdWritePlain(p []byte) (int, error) {
	sc, ok := c.std.(*stdConn)
	if !ok {
		c.sx.mu.Lock()
		defer c.sx.mu.Unlock()
		return c.std.Write(p)
	}
	n, err := c.stdWriteTimed(sc, p)
	if err == ErrWriteTimeout {
		c.stdTimeout(sc, err) // not under sx.mu, which the close takes
		err = net.ErrClosed
	}
	return n, err
}

// stdWriteTimed writes p under sx.mu; ErrWriteTimeout: it stalled.
func (c *CallbackConn) stdWriteTimed(sc *stdConn, p []byte) (int, error) {
	c.sx.mu.Lock()
	defer c.sx.mu.Unlock()
	s := &sc.to
	if to := s.writeTO.Load(); to > 0 {
		// Nothing of ours is pending (writers take turns): the stall,
		// if any, starts now.
		s.lastWrite.Store(monoNow())
		s.mu.Lock()
		if now := time.Now(); s.wdl.IsZero() || !s.wdl.After(now) {
			s.wdl = now.Add(stdWritePeriod(to))
			sc.Conn.SetWriteDeadline(s.wdl)
		}
		s.mu.Unlock()
	}
	done := 0
	for {
		n, err := c.std.Write(p[done:])
		done += n
		if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
			return done, err
		}
		if !sc.writeMayGoOn(n > 0) {
			return done, ErrWriteTimeout
		}
	}
}

// stdWritePeriod is how often a blocked Write checks its progress.
func stdWritePeriod(to int64) time.Duration {
	return max(time.Duration(to/4), time.Millisecond)
}

// writeMayGoOn is called by a Write that failed with a timeout, having
// written something (progress) or not: it reports whether the Write goes
// on, with a new deadline.
func (sc *stdConn) writeMayGoOn(progress bool) bool {
	s := &sc.to
	s.mu.Lock()
	defer s.mu.Unlock()
	now := monoNow()
	if progress {
		s.lastWrite.Store(now)
	}
	to := s.writeTO.Load()
	if to == 0 {
		s.wdl = time.Time{}
		sc.Conn.SetWriteDeadline(s.wdl)
		return true
	}
	if now-s.lastWrite.Load() >= to {
		return false
	}
	s.wdl = time.Now().Add(stdWritePeriod(to))
	sc.Conn.SetWriteDeadline(s.wdl)
	return true
}

// stdTimeout closes c for a timeout: OnClose gets err. The connection is
// reset (SO_LINGER 0), its output cut, as on io_uring: the peer sees an
// error, not an orderly end.
func (c *CallbackConn) stdTimeout(sc *stdConn, err error) {
	sc.to.timedOut.CompareAndSwap(nil, &err)
	if tc, ok := sc.Conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.closeStd()
}

// stdTimedOut is the timeout that closed c, or nil.
func (c *CallbackConn) stdTimedOut() error {
	if sc, ok := c.std.(*stdConn); ok {
		if p := sc.to.timedOut.Load(); p != nil {
			return *p
		}
	}
	return nil
}
