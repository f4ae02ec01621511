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
//
// # Porting a gnet server
//
// gnet's OnBoot/OnShutdown are the code around Runtime.Serve; OnOpen,
// OnClose and OnTraffic are OnOpen, OnClose and OnData. What differs:
//
// Framing. OnData gets the bytes as its data argument; a handler that
// consumes all of them (an echo, a proxy) needs nothing else. A parser uses
// the gnet methods instead, in OnData only: Peek(n), Next(n), Discard(n)
// and InboundBuffered(). Once it calls one of the first three in an OnData,
// the bytes it did not consume by Next or Discard stay with the connection
// and the next OnData's data starts with them, joined with the new bytes
// (the runtime copies them once; the handler copies nothing). Errors:
// io.ErrShortBuffer when n passes what is buffered (wait for the next
// OnData); ErrNotInCallback from anywhere but the connection's OnData;
// kept input over Config.MaxWriteBuffer closes the connection with
// ErrInboundFull.
//
// Writes from anywhere. Write, WriteNoCopy, AsyncWrite, Close and
// AsyncClose work from any callback of any connection on any loop and from
// any goroutine (gnet: Write in OnTraffic, AsyncWrite elsewhere). In the
// connection's own callback Write queues at once; elsewhere it posts a copy
// to the connection's loop. Each writer's bytes leave in its
// order, and what one callback of the connection writes leaves contiguous,
// whatever other writers do; nothing races. A MayBlocker callback's writes
// are sent when it returns. Errors: net.ErrClosed once the connection is
// closing.
//
// Backpressure. Each connection's queued output is capped by
// Config.MaxWriteBuffer and all queues together by MaxBufferedBytes: past
// the cap a write returns ErrWriteBufferFull (nothing queued, the
// connection stays open). OutboundBuffered() tells the queued bytes; a
// handler implementing Drainer (or HandlerFuncs.Drained) gets
// OnDrained(c) when the queue falls to its low-water mark (SetLowWater),
// so a publisher pauses for a slow subscriber or drops it. The runtime
// stops reading a connection whose own queue passes 64 KiB (half of
// MaxWriteBuffer when smaller), so an echo needs nothing. A proxy, whose
// writes go to another connection, pauses its source with PauseRead when
// the destination's OutboundBuffered passes a mark and resumes it with
// ResumeRead from the destination's OnDrained: the peer is then slowed by
// TCP flow control, with nothing lost and little held.
//
// Timers. c.AfterFunc(d, f) and c.Every(d, f) (gnet: OnTick, or a
// goroutine) run f as a callback of c on its loop, so f writes directly;
// LoopTimer.Stop cancels, and every timer ends when the connection begins
// closing. c.SetReadTimeout(d) closes a connection that received nothing
// for d, OnClose getting ErrReadTimeout; c.SetWriteTimeout(d) one whose
// queued output made no progress for d (a peer that stopped reading),
// OnClose getting ErrWriteTimeout. Both wrap os.ErrDeadlineExceeded, and
// both reset the connection, so its peer sees an error, not an orderly
// end. Config.IdleTimeout closes any connection idle both ways
// (ErrIdleTimeout); Config.CloseTimeout bounds a Close that waits for its
// output to be sent (ErrCloseTimeout).
//
// The package's examples show a broadcast chat, a pub/sub with a slow
// subscriber and a length-prefixed protocol.
type Handler interface {
	// OnOpen is called once when the connection is accepted. Its
	// LocalAddr and RemoteAddr are captured then and stay valid through
	// OnClose; a connection its peer reset before it was accepted (so
	// that it has no peer address any more) is closed without OnOpen.
	OnOpen(c *CallbackConn)
	// OnData is called with the bytes received; data is valid only until
	// OnData returns (copy what must outlive it). When the last OnData
	// left input unconsumed (framing: Peek, Next, Discard), data starts
	// with it.
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
	// Drained, when set, is OnDrained (see Drainer).
	Drained func(c *CallbackConn)
	// Blocking marks the callbacks as possibly blocking (see MayBlocker).
	Blocking bool
	// TLSHandshake, when set, is OnTLSHandshake (see TLSHandshaker).
	TLSHandshake func(c *CallbackConn, err error)
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

// OnDrained calls h.Drained if set (see Drainer).
func (h HandlerFuncs) OnDrained(c *CallbackConn) {
	if h.Drained != nil {
		h.Drained(c)
	}
}

// OnTLSHandshake calls h.TLSHandshake if set (see TLSHandshaker).
func (h HandlerFuncs) OnTLSHandshake(c *CallbackConn, err error) {
	if h.TLSHandshake != nil {
		h.TLSHandshake(c, err)
	}
}

// MayBlock reports h.Blocking.
func (h HandlerFuncs) MayBlock() bool { return h.Blocking }

var _ net.Addr = (*net.TCPAddr)(nil)
