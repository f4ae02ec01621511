package uringrt

import "crypto/tls"

// TLSConn hands c's established TLS connection to the caller's
// goroutines, for a protocol served the blocking way (an HTTP/2 server
// after ALPN chose "h2"): it returns the *tls.Conn, whose Read, Write,
// deadlines and Close then work as on any tls.Conn, blocking in the
// calling goroutine while c's loop moves the ciphertext (reading pauses
// while 64 KiB wait unread; a Write waits while c's output is over
// Config.MaxWriteBuffer, polling every 2 ms, up to its deadline). From the
// call on, no OnData comes for c and its handler must not write to c;
// OnClose still comes once the connection ends (the tls.Conn's Close, the
// peer's close or reset). Call it in one of c's callbacks (OnTLSHandshake,
// OnData) after the handshake completed; elsewhere it returns nil,
// ErrNotInCallback, and ErrTLS without a completed handshake. With
// BackendStd the tls.Conn is the one over Go's net.Conn, and c's reader
// goroutine stops reading.
func (c *CallbackConn) TLSConn() (*tls.Conn, error) {
	t := c.tlsSt()
	if c.std != nil {
		if t == nil || t.state != tlsOpen {
			return nil, ErrTLS
		}
		t.state = tlsDetached
		return t.tc, nil
	}
	if !c.hold() {
		return nil, ErrNotInCallback
	}
	defer c.unhold()
	if t == nil || t.state != tlsOpen || c.closing || c.closeReq {
		return nil, ErrTLS
	}
	t.state = tlsDetached
	c.l.tlsUnlendRaw(t.tc) // (OnData runs between two records of a batch)
	rc := &t.rc
	rc.mode = rcDetached
	rc.sig = make(chan struct{}, 1)
	if len(t.raw) > 0 {
		rc.in = append(rc.in, t.raw...) // a record not yet whole
		t.raw = nil
	}
	return t.tc, nil
}
