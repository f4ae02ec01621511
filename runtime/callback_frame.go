package uringrt

import (
	"errors"
	"io"
)

// Framing: input a handler leaves unconsumed stays with the connection and
// comes back, joined with the next bytes received, in the next OnData.
//
// A handler that never calls Peek, Next or Discard consumes all of every
// OnData's data (it is gone when OnData returns). Once it calls one of them
// in an OnData, that call's bytes not consumed by Next or Discard when
// OnData returns are kept: the runtime copies them once into the
// connection's own buffer, appends the next bytes received after them and
// passes the joined bytes to the next OnData (whose data then starts with
// the kept bytes). A frame split across receives thus reaches the parser
// whole, and the handler copies nothing itself.

// ErrNotInCallback is returned by Peek, Next and Discard when called
// other than from the connection's own OnData (another callback, another
// connection's callback, another goroutine).
var ErrNotInCallback = errors.New("uringrt: not called from the connection's OnData")

// ErrInboundFull is the error OnClose gets when a handler kept more than
// Config.MaxWriteBuffer bytes of unconsumed input (a frame larger than any
// the server accepts, or a parser that never consumes): the connection is
// closed rather than buffering without bound.
var ErrInboundFull = errors.New("uringrt: unconsumed input over MaxWriteBuffer")

// keptMaxIdle is the largest kept-input buffer a connection keeps once
// everything in it was consumed (bytes); a larger one goes to the GC.
const keptMaxIdle = 4 << 10

// frameState is a connection's framing state (touched by the goroutine that
// runs its callbacks, or a holder of its state).
type frameState struct {
	kept   []byte // input left unconsumed, to be joined with the next
	rd     []byte // the data of the OnData in progress (nil outside one)
	off    int    // bytes of rd consumed by Next and Discard
	used   bool   // Peek, Next or Discard was called: keep rd[off:]
	joined bool   // rd is kept with new bytes appended
	fresh  int    // bytes at the end of kept received while paused, not yet delivered

	// eofHeld is a MayBlocker connection's FIN that came while paused,
	// run after the stash on resume (callback_pause.go).
	eofHeld func()
}

// holdInput holds c's callback state for a framing method called in c's
// OnData and marks the input as used (what Next and Discard leave stays
// for the next OnData); the caller unholds. It reports false, holding
// nothing, anywhere else.
func (c *CallbackConn) holdInput() (*frameState, bool) {
	if !c.holdWait() {
		return nil, false
	}
	f := &c.frame
	if f.rd == nil {
		c.unhold()
		return nil, false
	}
	f.used = true
	return f, true
}

// Peek returns the next n bytes of input without consuming them (n < 0:
// all of it). Past what is buffered it returns all that is buffered and
// io.ErrShortBuffer. The bytes are valid until OnData returns; calling Peek
// makes the bytes not consumed by Next or Discard stay for the next
// OnData. From anywhere but the connection's OnData it returns nil,
// ErrNotInCallback.
func (c *CallbackConn) Peek(n int) ([]byte, error) {
	f, ok := c.holdInput()
	if !ok {
		return nil, ErrNotInCallback
	}
	defer c.unhold()
	buf := f.rd[f.off:]
	if n < 0 {
		return buf, nil
	}
	if n > len(buf) {
		return buf, io.ErrShortBuffer
	}
	return buf[:n:n], nil
}

// Next returns the next n bytes of input and consumes them (n < 0: all of
// it). Past what is buffered it consumes nothing and returns nil,
// io.ErrShortBuffer. The bytes are valid until OnData returns. From
// anywhere but the connection's OnData it returns nil, ErrNotInCallback.
func (c *CallbackConn) Next(n int) ([]byte, error) {
	f, ok := c.holdInput()
	if !ok {
		return nil, ErrNotInCallback
	}
	defer c.unhold()
	buf := f.rd[f.off:]
	if n < 0 {
		n = len(buf)
	}
	if n > len(buf) {
		return nil, io.ErrShortBuffer
	}
	f.off += n
	return buf[:n:n], nil
}

// Discard consumes the next n bytes of input (n < 0: all of it) and
// returns how many it consumed: past what is buffered it consumes all of
// it and returns that count and io.ErrShortBuffer. From anywhere but the
// connection's OnData it returns 0, ErrNotInCallback.
func (c *CallbackConn) Discard(n int) (int, error) {
	f, ok := c.holdInput()
	if !ok {
		return 0, ErrNotInCallback
	}
	defer c.unhold()
	left := len(f.rd) - f.off
	if n < 0 || n > left {
		f.off = len(f.rd)
		if n > left {
			return left, io.ErrShortBuffer
		}
		return left, nil
	}
	f.off += n
	return n, nil
}

// InboundBuffered returns the bytes of input not yet consumed (by Next or
// Discard) in the OnData in progress: the kept bytes and the new ones. It
// consumes nothing and, alone, does not make bytes stay. Outside the
// connection's OnData it returns 0.
func (c *CallbackConn) InboundBuffered() int {
	if !c.holdWait() {
		return 0
	}
	defer c.unhold()
	f := &c.frame
	if f.rd == nil {
		return 0
	}
	return len(f.rd) - f.off
}

// join returns the data for the next OnData: data itself, or the kept
// bytes with data appended (copying data after them). It reports false
// when the joined input would pass max bytes.
func (f *frameState) join(data []byte, max int) ([]byte, bool) {
	f.fresh = 0
	if len(f.kept) == 0 {
		f.rd, f.joined = data, false
		return data, true
	}
	if len(f.kept)+len(data) > max {
		return nil, false
	}
	f.kept = append(f.kept, data...)
	f.rd, f.joined = f.kept, true
	return f.kept, true
}

// settle ends an OnData: the bytes left unconsumed of a call that used
// Peek, Next or Discard are kept, others are dropped.
func (f *frameState) settle() {
	if f.rd == nil {
		return
	}
	rd, off, used, joined := f.rd, f.off, f.used, f.joined
	f.rd, f.off, f.used, f.joined = nil, 0, false, false
	switch {
	case used && off < len(rd) && joined:
		f.kept = f.kept[:copy(f.kept, rd[off:])] // rd is kept: move the rest down
	case used && off < len(rd):
		f.kept = append(f.kept[:0], rd[off:]...)
	case cap(f.kept) > keptMaxIdle:
		f.kept = nil
	default:
		f.kept = f.kept[:0]
	}
}

// onData runs OnData for data (on the loop, or c's worker): joined with
// the input kept from the last call, if any.
func (c *CallbackConn) onData(data []byte) {
	if c.rdPaused.Load() {
		c.frame.stash(data) // callback_pause.go
		return
	}
	data, ok := c.frame.join(data, c.maxInbound())
	if !ok {
		c.inboundFull()
		return
	}
	c.enterCB()
	defer c.exitCB()
	c.h.OnData(c, data)
}

func (c *CallbackConn) maxInbound() int {
	if c.std != nil {
		return c.stdMaxIn
	}
	return c.l.rt.cfg.MaxWriteBuffer
}

// inboundFull closes c for keeping too much input.
func (c *CallbackConn) inboundFull() {
	c.frame.kept = nil
	if c.std != nil {
		c.stdErr = ErrInboundFull
		c.closeStd()
		return
	}
	if c.blocking {
		c.l.post(request{kind: reqFunc, fn: func() { c.closeOnLoop(ErrInboundFull) }})
		return
	}
	c.closeOnLoop(ErrInboundFull)
}

// stdOnData is onData for a BackendStd connection, on its reader
// goroutine (a panic goes up to that goroutine's recover).
func (c *CallbackConn) stdOnData(data []byte) {
	if c.rdPaused.Load() {
		c.frame.stash(data) // callback_pause.go
		return
	}
	data, ok := c.frame.join(data, c.maxInbound())
	if !ok {
		c.inboundFull()
		return
	}
	if haveCurG {
		// What OnData writes stays contiguous: other writers wait.
		c.stdWMu.Lock()
		defer c.stdWMu.Unlock()
	}
	c.enterCB()
	c.h.OnData(c, data)
	c.leaveCB()
	c.frame.settle()
}
