package uringrt

import (
	"io"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The graceful close of a BackendStd callback connection, as the io_uring
// backend's (callback_linger.go's account): Close and AsyncClose refuse
// the writes that follow them, let the Write under way finish (one Write is
// all or nothing: closing the socket under it would send the peer part of
// it, then an orderly end), send the FIN after the output (CloseWrite),
// drop what the peer sends meanwhile (the reader reads on, calling no
// OnData) and close once the peer has acknowledged the output and the FIN,
// has sent its own FIN, or took none of it for lingerMax. close(2) with
// input unread or output unacknowledged would reset the connection, and a
// reset drops what the socket still held to send. Config.CloseTimeout
// bounds it all; past it the connection is reset (SO_LINGER 0) and OnClose
// gets ErrCloseTimeout. OnClose comes after the socket's close.

// stdClose is the close state of a BackendStd callback connection.
type stdClose struct {
	gone chan struct{} // closed once the linger closed the socket
	eof  chan struct{} // closed by the reader when it read the peer's FIN while closing
}

// closeStdGraceful is Close and AsyncClose on BackendStd: it begins the
// linger on a goroutine of its own and returns nil.
func (c *CallbackConn) closeStdGraceful() error {
	sx := c.sx
	if !sx.closing.CompareAndSwap(false, true) {
		return nil
	}
	c.stdEndTimers()
	sx.closeOne.Do(func() { close(sx.closed) })
	go c.stdLinger()
	return nil
}

// stdLinger waits for the Write under way, sends the FIN and waits for the
// peer (see above), then closes the socket.
func (c *CallbackConn) stdLinger() {
	sx := c.sx
	defer close(sx.cl.gone)
	var end <-chan time.Time
	if sx.closeTO > 0 {
		t := time.NewTimer(sx.closeTO)
		defer t.Stop()
		end = t.C
	}
	if !sx.wmu.TryLock() {
		got := make(chan struct{})
		go func() {
			sx.wmu.Lock()
			close(got)
		}()
		select {
		case <-got:
		case <-end:
			c.stdReset(ErrCloseTimeout) // the Write under way fails
			<-got
			sx.wmu.Unlock()
			return
		}
	}
	if t := c.tlsSt(); t != nil && t.done.Load() && !t.std.clear.Load() && t.std.closed.CompareAndSwap(false, true) {
		t.tc.CloseWrite() // tls_std.go: close_notify before the FIN
	}
	if cw, ok := c.std.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	sx.wmu.Unlock()
	tick := time.NewTicker(lingerCheck)
	defer tick.Stop()
	last, still := -1, time.Duration(0)
	for {
		out, ok := stdOutQueued(c.std)
		if !ok || out == 0 {
			break
		}
		if out != last {
			last, still = out, 0
		} else if still += lingerCheck; still >= lingerMax {
			break
		}
		select {
		case <-sx.cl.eof:
			c.std.Close()
			return
		case <-tick.C:
		case <-end:
			c.stdReset(ErrCloseTimeout)
			return
		}
	}
	c.std.Close()
}

// stdReset closes c's socket with a reset; OnClose gets err.
func (c *CallbackConn) stdReset(err error) {
	c.sx.err = err
	if sc, ok := c.std.(*stdConn); ok {
		if tc, ok := sc.Conn.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
	}
	c.std.Close()
}

// stdReaderEnd is called by the reader as it ends: during a linger it
// waits for the linger's close (after telling it of the peer's FIN, err
// io.EOF); otherwise it closes the socket at once.
func (c *CallbackConn) stdReaderEnd(err error) {
	sx := c.sx
	if sx.closing.CompareAndSwap(false, true) {
		c.closeStd()
		return
	}
	if err == io.EOF {
		sx.eofOnce.Do(func() { close(sx.cl.eof) })
	}
	<-sx.cl.gone
}

// stdOutQueued returns the bytes of c's socket not yet acknowledged by the
// peer (SIOCOUTQ; the FIN counts one); ok false: no such socket.
func stdOutQueued(c net.Conn) (n int, ok bool) {
	if sc, isStd := c.(*stdConn); isStd {
		c = sc.Conn
	}
	s, isSys := c.(syscall.Conn)
	if !isSys {
		return 0, false
	}
	rc, err := s.SyscallConn()
	if err != nil {
		return 0, false
	}
	var qerr error
	if err := rc.Control(func(fd uintptr) { n, qerr = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ) }); err != nil || qerr != nil {
		return 0, false
	}
	return n, true
}
