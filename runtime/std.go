package uringrt

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

var timeZero time.Time

// stdListener is BackendStd's listener: Go's own, counting connections so
// Shutdown and Close reach them.
type stdListener struct {
	net.Listener
	rt     *Runtime
	served sync.WaitGroup

	closeMu   sync.Mutex
	closeDone chan struct{} // closed once Close closed the socket (made lazily: closedCh)
	closeOnce sync.Once
}

// closedCh is closed once Close has closed the listening socket.
func (l *stdListener) closedCh() chan struct{} {
	l.closeMu.Lock()
	defer l.closeMu.Unlock()
	if l.closeDone == nil {
		l.closeDone = make(chan struct{})
	}
	return l.closeDone
}

// Accept accepts through Go's net and applies Config.MaxConns.
func (l *stdListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if max := l.rt.cfg.MaxConns; max > 0 && l.rt.stdCount() >= max {
			c.Close()
			continue
		}
		return l.rt.trackStd(c), nil
	}
}

// Close closes Go's listener and forgets it. Go's Close returns once
// the socket is closed; so does Serve (closedCh).
func (l *stdListener) Close() error {
	l.rt.mu.Lock()
	delete(l.rt.listeners, l)
	l.rt.mu.Unlock()
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.closedCh()) })
	return err
}

func (rt *Runtime) stdCount() int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return len(rt.stdConns)
}

// stdConn is a Go net.Conn that leaves the runtime's set when closed.
type stdConn struct {
	net.Conn
	rt   *Runtime
	once sync.Once
	done chan struct{} // closed by Close
	to   stdTimeouts   // a callback connection's read and write timeouts (std_deadline.go)
}

func (rt *Runtime) trackStd(c net.Conn) net.Conn {
	sc := &stdConn{Conn: c, rt: rt, done: make(chan struct{})}
	rt.mu.Lock()
	rt.stdConns[sc] = struct{}{}
	late := rt.draining
	rt.mu.Unlock()
	if late {
		sc.drain(time.Now()) // as Shutdown did to the others
	}
	return sc
}

// Close closes the connection and forgets it.
func (c *stdConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		close(c.done)
		rt := c.rt
		rt.mu.Lock()
		delete(rt.stdConns, c)
		if rt.drained != nil && rt.connCountLocked() == 0 {
			close(rt.drained)
			rt.drained = nil
		}
		rt.mu.Unlock()
	})
	return err
}

// CloseWrite shuts down the writing side, as *net.TCPConn does.
func (c *stdConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.New("uringrt: CloseWrite unsupported on " + c.Conn.LocalAddr().Network())
}

// CloseRead shuts down the reading side, as *net.TCPConn does.
func (c *stdConn) CloseRead() error {
	if cr, ok := c.Conn.(interface{ CloseRead() error }); ok {
		return cr.CloseRead()
	}
	return errors.New("uringrt: CloseRead unsupported on " + c.Conn.LocalAddr().Network())
}

// serveStd runs the callback API over Go's net: a goroutine per connection
// reads into a buffer and calls h; Write writes through.
// Like the io_uring Serve, it returns once ln's socket is closed (so its
// port is free); the connections already accepted go on being served.
func (rt *Runtime) serveStd(ln *stdListener, h Handler) error {
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				// Accept may see the close before Close has closed the
				// socket.
				<-ln.closedCh()
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			// EMFILE and friends: back off 5 ms doubling to 1 s, as
			// net/http and the io_uring Serve do.
			if backoff == 0 {
				backoff = 5 * time.Millisecond
			} else if backoff *= 2; backoff > time.Second {
				backoff = time.Second
			}
			rt.logger.Warn("accept failed; backing off", "err", err, "backoff", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		ln.served.Add(1)
		go func() {
			defer ln.served.Done()
			rt.serveStdConn(c, h)
		}()
	}
}

func (rt *Runtime) serveStdConn(c net.Conn, h Handler) {
	cc := &CallbackConn{std: c, h: h}
	cc.stdInit()
	rt.runStdCallback(cc)
}

// stdInit makes a BackendStd connection's state and channels (before any of its
// methods may be called).
func (c *CallbackConn) stdInit() {
	c.sx = &stdCB{closed: make(chan struct{}), resume: make(chan struct{}, 1),
		cl: stdClose{gone: make(chan struct{}), eof: make(chan struct{})}}
}

// runStdCallback reads cc's connection in this goroutine and calls its
// handler until the connection ends.
func (rt *Runtime) runStdCallback(cc *CallbackConn) {
	c, h := cc.std, cc.h
	sc, _ := c.(*stdConn)
	if cc.sx == nil {
		cc.stdInit()
	}
	cc.sx.maxIn = rt.cfg.MaxWriteBuffer
	cc.sx.closeTO = rt.cfg.CloseTimeout
	cc.frame.pool = &rt.kept
	var closeErr, readErr error
	defer func() {
		if v := recover(); v != nil {
			rt.handlerPanic(v)
			closeErr = errHandlerPanic
		}
		cc.stdReaderEnd(readErr)
		if err := cc.stdTimedOut(); err != nil {
			closeErr = err
		}
		if cc.sx.err != nil {
			closeErr = cc.sx.err
		}
		h.OnClose(cc, closeErr)
	}()
	h.OnOpen(cc)
	rd := c // the net.Conn, or its tls.Conn after StartTLS (tls_std.go)
	if ok, err := cc.stdTLSStep(&rd); err != nil || !ok {
		closeErr = err
		cc.stdDetached(ok)
		return
	}
	buf := make([]byte, rt.cfg.BufferSize)
	resumed := true // the reader starts a Read after doing something else
	for {
		if cc.rdPaused.Load() {
			resumed = true // a pause is not silence: the timeout counts after it
		}
		if !cc.stdWaitRead() { // callback_pause.go: PauseRead
			return
		}
		if resumed && sc != nil {
			// The read timeout counts the silence while the reader
			// waits in Read: not the handler's time, nor a pause.
			sc.noteRead()
		}
		resumed = true
		rbuf := buf
		if room := cc.directRoom(); room != nil {
			rbuf = room // callback_kept.go: a large frame, straight into the kept input
		}
		n, err := rd.Read(rbuf)
		if cc.sx.closing.Load() {
			// Closing: what the peer sends is dropped until its FIN
			// or the linger's close (std_close.go).
			if err != nil {
				readErr = err
				return
			}
			continue
		}
		if n > 0 {
			cc.stdOnData(rbuf[:n])
			if ok, err := cc.stdTLSStep(&rd); err != nil || !ok {
				closeErr = err
				cc.stdDetached(ok)
				return
			}
		}
		if err != nil {
			readErr = err
			if sc != nil && errors.Is(err, os.ErrDeadlineExceeded) {
				// A timeout's deadline (read on, or close), or Shutdown's.
				end, terr := sc.readExpired()
				if !end {
					resumed = false
					continue
				}
				if terr != nil {
					cc.stdTimeout(sc, terr)
					return
				}
			}
			if err == io.EOF && !cc.stdWaitRead() {
				return // closed while paused: the FIN is not reported
			}
			if err != io.EOF && !errors.Is(err, net.ErrClosed) {
				closeErr = err
			} else if err == io.EOF {
				closeErr = io.EOF
				if hc, ok := h.(HalfCloser); ok && hc.OnReadEOF(cc) {
					// Half-open: the handler writes on until it closes
					// (or Shutdown/Close closes the connection).
					var gone chan struct{}
					if sc, ok := c.(*stdConn); ok {
						gone = sc.done
					}
					select {
					case <-cc.sx.closed:
					case <-gone:
					}
					closeErr = nil
				}
			}
			return
		}
	}
}
