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
// whole, and the handler copies nothing itself. For large frames see
// callback_kept.go: the buffer is pooled and grows geometrically, and the
// recv reads the rest of a frame straight into it.

// ErrNotInCallback is returned by Peek, Next and Discard when called
// other than from the connection's own OnData (another callback, another
// connection's callback, another goroutine).
var ErrNotInCallback = errors.New("uringrt: not called from the connection's OnData")

// ErrInboundFull is the error OnClose gets when a handler kept more than
// Config.MaxWriteBuffer bytes of unconsumed input when an OnData returned
// (a frame larger than any the server accepts, or a parser that never
// consumes): the connection is closed rather than buffering without
// bound. The cap counts what the handler kept, not the new bytes an
// OnData is given with it.
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
	want   int    // bytes a Peek or Next past the input asked for (callback_kept.go)
	pool   *keptPool

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
// OnData. A Peek past what is buffered also tells the runtime how many
// bytes the handler waits for (up to Config.MaxWriteBuffer): it makes
// room for them once and reads the rest of a large frame straight into
// that room, so a frame of any size costs about one copy per byte (the
// kernel's). From anywhere but the connection's OnData, another goroutine
// included, it returns nil, ErrNotInCallback.
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
		f.want = min(n, c.maxInbound()) // callback_kept.go
		return buf, io.ErrShortBuffer
	}
	return buf[:n:n], nil
}

// Next returns the next n bytes of input and consumes them (n < 0: all of
// it). Past what is buffered it consumes nothing and returns nil,
// io.ErrShortBuffer (and, as Peek does, tells the runtime how many bytes
// the handler waits for). The bytes are valid until OnData returns. From
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
		f.want = min(n, c.maxInbound()) // callback_kept.go
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
// bytes with data appended (copying data after them, unless a recv read
// it there).
func (f *frameState) join(data []byte) []byte {
	f.fresh, f.want = 0, 0
	switch {
	case f.inKept(data): // callback_kept.go: read straight into kept
		f.kept = f.kept[:len(f.kept)+len(data)]
	case len(f.kept) == 0:
		f.rd, f.joined = data, false
		return data
	default:
		f.need(len(data))
		f.kept = append(f.kept, data...)
	}
	f.rd, f.joined = f.kept, true
	return f.kept
}

// settle ends an OnData: the bytes left unconsumed of a call that used
// Peek, Next or Discard are kept, others are dropped. When the handler
// asked for more than it got (want), kept is made room for all of it.
func (f *frameState) settle() {
	if f.rd == nil {
		return
	}
	rd, off, used, joined := f.rd, f.off, f.used, f.joined
	f.rd, f.off, f.used, f.joined = nil, 0, false, false
	switch {
	case used && off == 0 && joined:
		// rd is kept and nothing was consumed: it stays as it is.
	case used && off < len(rd) && joined:
		f.kept = f.kept[:copy(f.kept, rd[off:])] // rd is kept: move the rest down
	case used && off < len(rd):
		f.kept = f.kept[:0]
		f.need(max(len(rd)-off, f.want))
		f.kept = append(f.kept, rd[off:]...)
	default:
		f.release()
	}
	if !used {
		f.want = 0
	}
	if f.want > len(f.kept) {
		f.need(f.want - len(f.kept)) // callback_kept.go: room for the frame
	}
}

// onData runs OnData for data (on the loop, or c's worker): joined with
// the input kept from the last call, if any.
func (c *CallbackConn) onData(data []byte) {
	if c.rdPaused.Load() {
		c.frame.stash(data) // callback_pause.go
		return
	}
	c.runOnData(c.frame.join(data))
	if len(c.frame.kept) > c.maxInbound() {
		c.inboundFull() // what the handler kept, not what it was given
	}
}

func (c *CallbackConn) runOnData(data []byte) {
	c.enterCB()
	defer c.exitCB()
	c.h.OnData(c, data)
}

func (c *CallbackConn) maxInbound() int {
	if c.std != nil {
		return c.sx.maxIn
	}
	return c.l.rt.cfg.MaxWriteBuffer
}

// inboundFull closes c for keeping too much input.
func (c *CallbackConn) inboundFull() {
	c.frame.kept = nil
	if c.std != nil {
		c.sx.err = ErrInboundFull
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
	c.stdRunOnData(c.frame.join(data))
	if len(c.frame.kept) > c.maxInbound() {
		c.inboundFull() // what the handler kept, not what it was given
	}
}

func (c *CallbackConn) stdRunOnData(data []byte) {
	if haveCurG {
		// What OnData writes stays contiguous: other writers wait.
		c.sx.wmu.Lock()
		defer c.sx.wmu.Unlock()
	}
	c.enterCB()
	c.h.OnData(c, data)
	c.leaveCB()
	c.frame.settle()
}
