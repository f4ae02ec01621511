package uringrt

import (
	"crypto/tls"
	"net"
	"sync/atomic"
	"time"
)

// TLS with BackendStd: the connection's reader goroutine runs the
// handshake (bounded by the timeout, as a deadline) and then reads through
// the tls.Conn; writes go through it too (crypto/tls orders them).

// stdTLS is what a BackendStd TLS connection keeps beside tlsState.
type stdTLS struct {
	timeout time.Duration
	shaken  bool        // the reader ran the handshake
	clear   atomic.Bool // the handshake failed: writes go in the clear
	closed  atomic.Bool // Close began (close_notify once)
}

// stdStartTLS is StartTLS with BackendStd (on the reader goroutine, in
// OnOpen or OnData).
func (c *CallbackConn) stdStartTLS(cfg *tls.Config, timeout time.Duration) error {
	if c.tlsSt() != nil {
		return ErrTLS
	}
	t := &tlsState{std: &stdTLS{timeout: timeout}}
	raw := &stdRaw{c: c}
	if f := &c.frame; f.rd != nil {
		raw.pre = append([]byte(nil), f.rd[f.off:]...) // STARTTLS: what OnData leaves is TLS's
		f.off = len(f.rd)
	}
	t.tc = tls.Server(raw, cfg)
	if timeout > 0 {
		c.std.SetDeadline(time.Now().Add(timeout))
	}
	c.tlsp.Store(t)
	return nil
}

// stdRaw is a BackendStd TLS connection's transport: the net.Conn, after
// the input an OnData left at STARTTLS.
type stdRaw struct {
	net.Conn
	c   *CallbackConn
	pre []byte
}

func (r *stdRaw) Read(p []byte) (int, error) {
	if len(r.pre) > 0 {
		n := copy(p, r.pre)
		r.pre = r.pre[n:]
		return n, nil
	}
	return r.c.std.Read(p)
}

func (r *stdRaw) Write(p []byte) (int, error)        { return r.c.stdWritePlain(p) }
func (r *stdRaw) Close() error                       { return r.c.closeStdRaw() }
func (r *stdRaw) LocalAddr() net.Addr                { return r.c.std.LocalAddr() }
func (r *stdRaw) RemoteAddr() net.Addr               { return r.c.std.RemoteAddr() }
func (r *stdRaw) SetDeadline(t time.Time) error      { return r.c.std.SetDeadline(t) }
func (r *stdRaw) SetReadDeadline(t time.Time) error  { return r.c.std.SetReadDeadline(t) }
func (r *stdRaw) SetWriteDeadline(t time.Time) error { return r.c.std.SetWriteDeadline(t) }

// stdTLSStep runs, on the reader goroutine after OnOpen and each OnData,
// what a StartTLS asked: the handshake, then reads through the tls.Conn
// (*rd). It returns the handshake's error, or ok false when the tls.Conn
// was handed out (the reader stops reading).
func (c *CallbackConn) stdTLSStep(rd *net.Conn) (ok bool, err error) {
	t := c.tlsSt()
	if t == nil {
		return true, nil
	}
	if t.state == tlsDetached {
		return false, nil
	}
	if t.std.shaken {
		return true, nil
	}
	t.std.shaken = true
	err = t.tc.Handshake()
	if t.std.timeout > 0 {
		c.std.SetDeadline(time.Time{})
	}
	hs, isHS := c.h.(TLSHandshaker)
	if err != nil {
		t.std.clear.Store(true)
		t.state, t.err = tlsFailed, err
		if isHS {
			c.stdRunCB(func(c *CallbackConn) { hs.OnTLSHandshake(c, err) })
		}
		return true, err
	}
	t.state = tlsOpen
	t.done.Store(true)
	*rd = t.tc
	if isHS {
		c.stdRunCB(func(c *CallbackConn) { hs.OnTLSHandshake(c, nil) })
		if t.state == tlsDetached {
			return false, nil
		}
	}
	return true, nil
}

// stdRunCB runs fn as a callback of a BackendStd connection (its reader).
func (c *CallbackConn) stdRunCB(fn func(*CallbackConn)) {
	c.enterCB()
	defer c.leaveCB()
	fn(c)
}

// stdWrite writes p to a BackendStd connection: sealed by its tls.Conn
// once StartTLS was called (unless the handshake failed).
func (c *CallbackConn) stdWrite(p []byte) (int, error) {
	if t := c.tlsSt(); t != nil && !t.std.clear.Load() {
		return t.tc.Write(p)
	}
	return c.stdWritePlain(p)
}

// closeStd closes a BackendStd connection: a TLS one with its
// close_notify first (unless a write is blocked: crypto/tls then closes
// at once).
func (c *CallbackConn) closeStd() error {
	if t := c.tlsSt(); t != nil && t.done.Load() && !t.std.clear.Load() && t.std.closed.CompareAndSwap(false, true) {
		return t.tc.Close() // (closes through stdRaw: closeStdRaw)
	}
	return c.closeStdRaw()
}

// stdDetached waits, on the reader goroutine of a BackendStd connection
// whose tls.Conn was handed out (not ok), until the connection closes.
func (c *CallbackConn) stdDetached(ok bool) {
	if ok {
		return
	}
	var gone chan struct{}
	if sc, isSC := c.std.(*stdConn); isSC {
		gone = sc.done
	}
	select {
	case <-c.sx.closed:
	case <-gone:
	}
}
