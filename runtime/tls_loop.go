package uringrt

import (
	"crypto/tls"
	"errors"
	"io"
	"sync/atomic"
	"time"
)

// tlsState is a TLS connection's state beside its CallbackConn (loop-owned
// unless said otherwise). A connection without TLS has none.
type tlsState struct {
	tc    *tls.Conn
	rc    recordConn // (one allocation with the state)
	state uint8
	done  atomic.Bool // the handshake completed (TLSConnectionState, any goroutine)
	// raw: tlsHello, the first record so far; tlsOpen, a record not yet
	// whole (nil when none is).
	raw     []byte
	pend    []byte     // plaintext written before the handshake completed
	timer   *LoopTimer // the handshake timeout
	err     error      // OnClose's error after a failed handshake
	kept    bool       // StartTLS in OnData: the input it left is TLS's (afterCB)
	eof     bool       // the peer's close_notify was reported
	closeAt bool       // a Close waits for the handshake
	fin     bool       // the peer's FIN came during the handshake
	std     *stdTLS    // BackendStd's (tls_std.go)
}

// states of tlsState.state
const (
	tlsHello    = iota // waiting for the first record whole
	tlsShaking         // the handshake goroutine runs
	tlsOpen            // established, on the loop
	tlsDetached        // handed out (TLSConn)
	tlsFailed          // the handshake failed: the connection is closing
)

// deliver hands received bytes to the handler: through the TLS layer on
// a TLS connection.
func (c *CallbackConn) deliver(data []byte) {
	if t := c.tlsSt(); t != nil {
		c.tlsDeliver(data)
		return
	}
	c.deliverPlain(data) // op_cb.go
}

// readEOF handles the peer's FIN (recv returned 0): on a TLS connection
// the TLS layer says what it means first.
func (c *CallbackConn) readEOF() {
	if t := c.tlsSt(); t != nil && c.tlsFIN(t) {
		return
	}
	c.readEOFPlain() // op_cb.go
}

// tlsSt returns c's TLS state, or nil (any goroutine).
func (c *CallbackConn) tlsSt() *tlsState { return c.tlsp.Load() }

// startTLS sets c up as a TLS server connection (holding c's state, in
// its OnOpen or OnData).
func (c *CallbackConn) startTLS(cfg *tls.Config, timeout time.Duration) {
	t := &tlsState{rc: recordConn{c: c}}
	t.tc = tls.Server(&t.rc, cfg)
	t.kept = c.frame.rd != nil // OnData: what it leaves is ciphertext
	c.tlsp.Store(t)
	if timeout > 0 {
		t.timer = c.AfterFunc(timeout, func(c *CallbackConn) {
			if st := c.tlsSt(); st.state == tlsHello || st.state == tlsShaking {
				c.tlsFail(ErrTLSHandshakeTimeout)
			}
		})
	}
}

// tlsTakeKept hands the input an OnData left when it called StartTLS to
// the TLS layer (loop, after the callback).
func (c *CallbackConn) tlsTakeKept() {
	t := c.tlsSt()
	t.kept = false
	f := &c.frame
	if len(f.kept) == 0 {
		return
	}
	in := append([]byte(nil), f.kept...)
	f.kept = f.kept[:0]
	f.release()
	c.tlsDeliver(in)
}

// tlsDeliver takes bytes received on a TLS connection (loop).
func (c *CallbackConn) tlsDeliver(data []byte) {
	t := c.tlsSt()
	switch t.state {
	case tlsHello:
		c.tlsHello(t, data)
	case tlsShaking:
		if t.rc.push(data) > tlsMaxHandshakeInput {
			c.tlsFail(errTLSHandshakeInput)
		}
	case tlsOpen:
		c.tlsRecords(t, data)
	case tlsDetached:
		if t.rc.push(data) > detachedHigh {
			t.rc.mu.Lock()
			if !t.rc.paused {
				t.rc.paused = true
				c.rdPaused.Store(true)
				c.syncPause()
			}
			t.rc.mu.Unlock()
		}
	}
}

// tlsMaxHandshakeInput bounds the ciphertext buffered while the handshake
// goroutine runs (a client's certificate chain fits; a flood does not).
const tlsMaxHandshakeInput = 256 << 10

var errTLSHandshakeInput = errors.New("uringrt: TLS handshake input over 256 KiB")

// tlsHello collects the first record; once it is whole and a handshake
// record, the handshake starts on a goroutine. Any other first record is
// refused by crypto/tls from its header, on the loop.
func (c *CallbackConn) tlsHello(t *tlsState, data []byte) {
	t.raw = append(t.raw, data...)
	if len(t.raw) < recordHeader {
		return
	}
	h := t.raw
	n := recordLen(h)
	if h[0] == 22 && h[1] < 0x10 && n <= maxCiphertext {
		if len(t.raw) < recordHeader+n {
			return // at most one record is held
		}
		t.state = tlsShaking
		t.rc.mode = rcShake
		t.rc.sig = make(chan struct{}, 1)
		t.rc.in, t.raw = t.raw, nil
		go c.tlsShake(t)
		return
	}
	t.rc.feed = h[:recordHeader]
	err := t.tc.Handshake()
	t.rc.feed = nil
	if err == nil {
		err = errors.New("uringrt: TLS handshake from a header") // (cannot happen)
	}
	c.tlsFail(err)
}

// tlsShake runs the handshake (its own goroutine) and hands the outcome
// back to the loop.
func (c *CallbackConn) tlsShake(t *tlsState) {
	err := t.tc.Handshake()
	c.l.post(request{kind: reqFunc, fn: func() { c.tlsShaken(t, err) }})
}

// tlsShaken ends the handshake on the loop: on success the writes made
// meanwhile are sealed, the handler told, and the bytes received after the
// client's last handshake record decrypted.
func (c *CallbackConn) tlsShaken(t *tlsState, err error) {
	if t.state != tlsShaking || c.finalized {
		return
	}
	if err != nil {
		c.tlsFail(err)
		return
	}
	rc := &t.rc
	rc.mu.Lock()
	rest := rc.in[rc.r:]
	rc.in, rc.r, rc.mode = nil, 0, rcLoop
	rc.sig = nil // (made again for a detached conn)
	rc.mu.Unlock()
	t.timer.Stop()
	t.timer = nil
	t.state = tlsOpen
	t.done.Store(true)
	c.l.tlsShrinkHandshake(t.tc) // tls_guts.go
	if len(t.pend) > 0 {
		p := t.pend
		t.pend = nil
		c.tlsSeal(t, p)
		c.posted.Add(-int64(len(p))) // (counted by tlsQueue)
		c.markDirty()
	}
	if hs, ok := c.h.(TLSHandshaker); ok {
		c.runCB(func(c *CallbackConn) { hs.OnTLSHandshake(c, nil) })
	}
	if c.closing {
		return
	}
	if len(rest) > 0 {
		c.tlsDeliver(rest) // (records, or a detached conn's input)
	}
	switch {
	case c.closing:
	case t.fin && t.state == tlsDetached:
		t.rc.end(false)
	case t.fin:
		c.readEOF()
	case t.closeAt:
		c.closeOnLoop(nil)
	}
}

// tlsFail ends a handshake that failed or timed out: crypto/tls's alert
// (queued already) and what a TLSHandshaker writes are sent, then the
// connection closes and OnClose gets err.
func (c *CallbackConn) tlsFail(err error) {
	t := c.tlsSt()
	if t.state == tlsFailed || t.state == tlsOpen || c.finalized {
		return
	}
	t.state = tlsFailed
	t.err = err
	t.rc.end(true)
	t.raw, t.pend = nil, nil
	if hs, ok := c.h.(TLSHandshaker); ok && !c.closing {
		c.runCB(func(c *CallbackConn) { hs.OnTLSHandshake(c, err) })
	}
	c.closeOnLoop(nil)
}

// tlsRecords decrypts the whole records of data (after the partial one
// kept, if any) and hands their plaintext to OnData; the bytes of a record
// not yet whole are kept (loop).
func (c *CallbackConn) tlsRecords(t *tlsState, data []byte) {
	src := data
	if len(t.raw) > 0 {
		t.raw = append(t.raw, data...)
		src = t.raw
	}
	l := c.l
	plain := l.tlsPlainBuf()
	l.tlsLendRaw(t.tc) // tls_guts.go: crypto/tls reads into the loop's buffer
	off := 0
	for !c.closing && t.state == tlsOpen && !t.eof {
		rest := src[off:]
		if len(rest) < recordHeader {
			break
		}
		size := recordHeader + recordLen(rest)
		if recordLen(rest) > maxCiphertext {
			size = recordHeader // crypto/tls refuses it from the header
		}
		if len(rest) < size {
			break
		}
		t.rc.feed = rest[:size]
		off += size
		n, err := t.tc.Read(plain)
		t.rc.feed = nil
		if n > 0 {
			c.deliverPlain(plain[:n])
		}
		if err == nil || err == errWouldBlock {
			continue
		}
		if err == io.EOF { // the peer's close_notify
			t.eof = true
			c.readEOFPlain()
			break
		}
		// crypto/tls queued its alert: it is sent, then the connection
		// closes with err.
		t.state, t.err = tlsFailed, err
		c.closeOnLoop(nil)
		break
	}
	if t.state != tlsDetached { // (TLSConn took the buffer back)
		l.tlsUnlendRaw(t.tc)
	}
	l.tlsPlainDone(plain)
	left := src[off:]
	if t.state == tlsDetached && len(left) > 0 {
		t.rc.push(left) // OnData handed the connection out (TLSConn)
	}
	switch {
	case len(left) == 0 || c.closing || t.state != tlsOpen || t.eof:
		t.raw = nil // an idle connection holds no record buffer
	case len(t.raw) > 0:
		t.raw = t.raw[:copy(t.raw, left)]
	default:
		t.raw = append(make([]byte, 0, max(len(left), 512)), left...)
	}
}

// tlsQueue takes plaintext written to a TLS connection where it joins the
// output queue (loop, or the holder of c's state): it is sealed here, so
// records leave in the order they were sealed, whoever wrote them. Before
// the handshake completed it waits, counted as posted (the caps).
func (c *CallbackConn) tlsQueue(t *tlsState, p []byte) {
	switch t.state {
	case tlsOpen:
		c.tlsSeal(t, p)
	case tlsHello, tlsShaking:
		t.pend = append(t.pend, p...)
		c.posted.Add(int64(len(p)))
	default: // detached (the records of the tls.Conn), failed (in the clear)
		c.outq.write(c.l, p)
	}
}

// tlsSeal seals p into records on c's output queue.
func (c *CallbackConn) tlsSeal(t *tlsState, p []byte) {
	if _, err := t.tc.Write(p); err != nil && !c.closing {
		c.fail(err) // crypto/tls failed the connection (a local error)
	}
}

// queueRecords puts records crypto/tls wrote on c's output queue (loop).
func (c *CallbackConn) queueRecords(b []byte) {
	if c.finalized || c.failed() {
		return
	}
	c.outq.write(c.l, b)
	c.markDirty()
}

// tlsClose is the TLS part of a close (loop): a graceful close of an
// established connection sends close_notify first; one made before the
// handshake completed, with writes waiting for it, waits for it (it
// reports true: the close is deferred). Otherwise a handshake in progress
// ends.
func (c *CallbackConn) tlsClose(t *tlsState, err error) bool {
	switch {
	case t.state == tlsOpen && gracefulErr(err):
		t.tc.CloseWrite() // close_notify (tls.Conn.Close would close the conn)
	case (t.state == tlsHello || t.state == tlsShaking) && gracefulErr(err) && len(t.pend) > 0:
		t.closeAt = true
		c.shutWrites()
		return true
	case t.state == tlsHello || t.state == tlsShaking:
		t.state = tlsFailed
		t.rc.end(true)
		t.pend = nil
	case t.state == tlsDetached:
		t.rc.end(true)
	}
	return false
}

// tlsFIN handles the peer's FIN on a TLS connection (loop); it reports
// true when that is all to do.
func (c *CallbackConn) tlsFIN(t *tlsState) bool {
	switch t.state {
	case tlsHello:
		c.tlsFail(io.EOF)
		return true
	case tlsShaking, tlsDetached:
		t.fin = true
		c.rdEOF = true
		t.rc.end(false)
		return t.state == tlsShaking
	case tlsOpen:
		if t.eof {
			return true // reported at the close_notify
		}
		if len(t.raw) > 0 {
			c.closeOnLoop(io.ErrUnexpectedEOF) // the end came inside a record
			return true
		}
	}
	return false
}

// tlsClosed drops c's TLS buffers at its final close (loop).
func (c *CallbackConn) tlsClosed(t *tlsState) {
	t.rc.end(true)
	t.raw, t.pend = nil, nil
}
