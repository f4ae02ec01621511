package uringrt

import (
	"net"
)

// Handler is the callback API, the fastest path: the runtime reads each
// connection with multishot recv into a provided buffer ring and calls
// OnData on the connection's loop with bytes that are valid only during the
// call. Writes through the CallbackConn are queued and sent in batches, one
// send per connection per loop iteration.
//
// Callbacks of one connection never run concurrently and keep their order.
// They run on the loop goroutine, so they must not block; a handler that may
// block implements MayBlocker and is then run on a sched fixed worker chosen
// by connection (SubmitKey), which keeps that order.
type Handler interface {
	// OnOpen is called once when the connection is accepted. Its
	// LocalAddr and RemoteAddr are captured then and stay valid through
	// OnClose; a connection its peer reset before it was accepted (so
	// that it has no peer address any more) is closed without OnOpen.
	OnOpen(c *CallbackConn)
	// OnData is called with the bytes received; data is valid only until
	// OnData returns (copy what must outlive it).
	OnData(c *CallbackConn, data []byte)
	// OnClose is called once when the connection is gone: err is nil after a
	// local Close, io.EOF after the peer's orderly close, or the error that
	// ended it (a *net.OpError wrapping ECONNRESET, ...). After the peer's
	// FIN, output already queued is sent before the connection closes and
	// OnClose(c, io.EOF) runs (a HalfCloser can keep it open for writing).
	OnClose(c *CallbackConn, err error)
}

// HalfCloser is implemented by handlers that serve half-closed
// connections, as HTTP/1.0-style clients and `nc -N` expect: the client
// sends a request, shuts down its writing side (FIN), and waits for the
// reply.
type HalfCloser interface {
	// OnReadEOF is called once when the peer closed its writing side (the
	// read returned end of stream; no OnData follows). Returning true keeps
	// the connection open for writing: it closes when the handler calls
	// Close or AsyncClose (OnClose follows with a nil error), when a write
	// fails, or at Shutdown. Returning false closes it as for a handler
	// without OnReadEOF: once the queued output is sent, with
	// OnClose(c, io.EOF).
	OnReadEOF(c *CallbackConn) (keepOpen bool)
}

// MayBlocker is implemented by handlers whose callbacks may block; their
// callbacks then run on the runtime's fixed worker pool, one worker per
// connection key, instead of on the loop.
type MayBlocker interface {
	MayBlock() bool
}

// HandlerFuncs adapts functions to Handler; nil functions are skipped.
type HandlerFuncs struct {
	// Open is OnOpen.
	Open func(c *CallbackConn)
	// Data is OnData: data is valid only during the call.
	Data func(c *CallbackConn, data []byte)
	// Close is OnClose: err is nil, io.EOF or the error that ended the
	// connection.
	Close func(c *CallbackConn, err error)
	// ReadEOF, when set, is OnReadEOF (see HalfCloser): it is called on
	// the peer's FIN and the connection stays open for writing until it is
	// closed. When nil, the peer's FIN closes the connection.
	ReadEOF func(c *CallbackConn)
	// Blocking marks the callbacks as possibly blocking (see MayBlocker).
	Blocking bool
}

// OnOpen calls h.Open if set.
func (h HandlerFuncs) OnOpen(c *CallbackConn) {
	if h.Open != nil {
		h.Open(c)
	}
}

// OnData calls h.Data if set.
func (h HandlerFuncs) OnData(c *CallbackConn, data []byte) {
	if h.Data != nil {
		h.Data(c, data)
	}
}

// OnClose calls h.Close if set.
func (h HandlerFuncs) OnClose(c *CallbackConn, err error) {
	if h.Close != nil {
		h.Close(c, err)
	}
}

// OnReadEOF calls h.ReadEOF if set and then keeps the connection
// half-open; without it the connection closes (see HalfCloser).
func (h HandlerFuncs) OnReadEOF(c *CallbackConn) bool {
	if h.ReadEOF == nil {
		return false
	}
	h.ReadEOF(c)
	return true
}

// MayBlock reports h.Blocking.
func (h HandlerFuncs) MayBlock() bool { return h.Blocking }

var _ net.Addr = (*net.TCPAddr)(nil)
