package uringrt

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"time"
)

// TLS on the callback API. crypto/tls does every byte of the protocol: the
// handshake, the record layer, the ciphers and the alerts. The runtime
// only moves ciphertext between the socket and a tls.Conn (tls.Server)
// whose transport is an internal net.Conn (recordConn, tls_conn.go):
//
//   - Until the first record (the ClientHello) has arrived whole, the
//     connection is an ordinary one holding the bytes received so far
//     (at most one record, 18 KiB), and a timer: no goroutine. A first
//     record that is no handshake is refused by crypto/tls from its header
//     alone, on the loop.
//   - Then the handshake runs on a goroutine of its own, in
//     tls.Conn.Handshake, reading what the loop feeds it and posting its
//     flights to the loop; it ends within the handshake timeout.
//   - After it the connection lives on the loop again, with no goroutine:
//     each record received whole is handed to tls.Conn.Read, which decrypts
//     it into the loop's buffer for OnData; a partial record waits in the
//     connection. Every write path (Write, WriteNoCopy, AsyncWrite, from
//     any goroutine) is sealed by tls.Conn.Write where its bytes join the
//     connection's output queue, on the loop, so the records leave in the
//     order they were sealed whoever wrote them.

// ErrTLSHandshakeTimeout is the error OnClose (and a TLSHandshaker) gets
// when a connection's TLS handshake did not complete within the timeout
// given to StartTLS. It wraps os.ErrDeadlineExceeded.
var ErrTLSHandshakeTimeout = fmt.Errorf("uringrt: TLS handshake timeout: %w", os.ErrDeadlineExceeded)

// ErrTLS is returned by StartTLS on a connection that already started TLS
// or that cannot (a MayBlocker handler, a closing connection), and by
// TLSConn on a connection whose handshake has not completed.
var ErrTLS = errors.New("uringrt: TLS not possible in this state")

// TLSHandshaker is implemented by a Handler that wants to know when a
// connection's TLS handshake (StartTLS) ends.
type TLSHandshaker interface {
	// OnTLSHandshake is called, as a callback of c, once the handshake
	// ended: err is nil when it completed (TLSConnectionState tells
	// what was negotiated; OnData follows with plaintext), else what
	// crypto/tls reported (a *tls.RecordHeaderError for a first record
	// that is no TLS handshake, an alert, io.EOF) or
	// ErrTLSHandshakeTimeout. After a failure the connection is closing:
	// what the callback writes is sent as it is, unencrypted (a server
	// answers a plaintext HTTP request so), and OnClose follows with err.
	OnTLSHandshake(c *CallbackConn, err error)
}

// StartTLS makes c a TLS server connection under cfg (see tls.Server):
// the bytes received from now on are TLS records, OnData gets their
// plaintext and every write is sealed into records. Call it from c's
// OnOpen, or from an OnData (STARTTLS): then the input that OnData left
// unconsumed (Peek, Next, Discard) is taken as the first TLS bytes, and
// what was written before the call is sent in the clear.
//
// The handshake runs on a goroutine of its own from the moment the
// client's first record (its ClientHello) has arrived whole; until then
// the connection holds only the bytes received (at most 18 KiB). It must
// end within timeout (<= 0: no limit), or the connection is closed and
// OnClose gets ErrTLSHandshakeTimeout; a failed handshake closes it with
// crypto/tls's error (after the alert crypto/tls sends). A Handler that
// implements TLSHandshaker is told either way. Writes made before the
// handshake completed are sealed and sent after it, in their order; a
// Close made meanwhile waits for the handshake. After the handshake the
// connection holds no goroutine and no buffer while idle: only
// crypto/tls's per-connection state (about 3 KiB: the Conn and its two
// ciphers), records being decrypted use the loop's buffers, and a record
// split across receives is kept until it is whole.
//
// What TLS costs on the loop: the ciphers, one copy of each record in
// and out, and a record's framing (up to 29 bytes of output each). A
// graceful Close sends a close_notify alert first; the peer's
// close_notify is the end of input (OnClose gets io.EOF; a HalfCloser is
// asked), a TCP end inside a record is io.ErrUnexpectedEOF. PauseRead
// pauses the handshake too. Peek, Next and Discard see plaintext;
// WriteNoCopy copies. Errors: ErrNotInCallback outside c's own OnOpen or
// OnData, ErrTLS when TLS already started, c is closing or its handler is
// a MayBlocker. With BackendStd the handshake runs on the connection's
// reader goroutine, before the first OnData.
func (c *CallbackConn) StartTLS(cfg *tls.Config, timeout time.Duration) error {
	if cfg == nil {
		return errors.New("uringrt: StartTLS with a nil tls.Config")
	}
	if c.std != nil {
		return c.stdStartTLS(cfg, timeout) // tls_std.go
	}
	if c.blocking {
		return ErrTLS
	}
	if !c.hold() {
		return ErrNotInCallback
	}
	defer c.unhold()
	if c.tlsSt() != nil || c.closing || c.closeReq {
		return ErrTLS
	}
	c.startTLS(cfg, timeout) // tls_loop.go
	return nil
}

// TLSConnectionState returns what the TLS handshake of c negotiated
// (version, cipher suite, ALPN protocol, server name, the client's
// certificates), and true once it completed; the zero value and false
// before, or without StartTLS. It may be called anywhere.
func (c *CallbackConn) TLSConnectionState() (tls.ConnectionState, bool) {
	t := c.tlsSt()
	if t == nil || !t.done.Load() {
		return tls.ConnectionState{}, false
	}
	return t.tc.ConnectionState(), true
}
