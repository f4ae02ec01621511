package uringhttp

import (
	"errors"
	"io"
	"net/http"
	"time"

	uringrt "github.com/uringrt/uringrt/runtime"
)

// ErrNoTakeOver is returned by TakeOver when the connection cannot move
// to a handler of the callback API: the ResponseWriter is not one of
// this package's, or the server's runtime uses Go's net (BackendStd).
// Hijack still works there.
var ErrNoTakeOver = errors.New("uringhttp: connection cannot be taken over")

// TakeOverShutdowner is implemented by a handler given to TakeOver that
// ends its connection gracefully: Server.Shutdown calls OnShutdown once
// (on Shutdown's goroutine) and waits for the connection to close,
// bounded by Shutdown's context; for a handler without it, Shutdown
// closes the connection. A WebSocket sends its close frame (1001 Going
// Away) there.
type TakeOverShutdowner interface {
	OnShutdown(c *uringrt.CallbackConn)
}

// takeover is a connection handed to a callback handler (hijackConn.tk).
type takeover struct {
	h       uringrt.Handler
	started bool // what came before the routing was handed over (mu)
	eof     bool // the peer's FIN came before that (mu)
	shut    bool // OnShutdown was called (mu)
}

// TakeOver ends HTTP on the connection of the request w answers and
// hands the connection to a handler of the callback API, on its loop,
// as Hijack hands it to a goroutine: a protocol parsed on the loop (a
// WebSocket) then holds no goroutine and no buffer while idle.
//
// What the response wrote is sent, then head (the 101 answer of an
// upgrade, say); newHandler is called with the connection and returns
// the handler, whose OnOpen then runs once on the calling goroutine
// before any other of its callbacks (input arriving meanwhile waits).
// Then, on the loop, OnData gets the bytes the client sent after the
// request, if any (that OnData is not the runtime's, so Peek, Next and
// Discard return ErrNotInCallback in it and the handler keeps what it
// does not consume itself), then OnData, OnClose and, when implemented,
// OnDrained and OnReadEOF come as for a connection of Runtime.Serve. A
// connection that ended before OnOpen returned gets OnClose on the
// calling goroutine. The request's handler may return at once or go on
// writing to the connection; the ResponseWriter must not be used after
// the call. The server's timeouts no longer apply; Server.Close closes
// the connection and Server.Shutdown waits for it (see
// TakeOverShutdowner).
//
// Errors: ErrNoTakeOver (nothing was done: use Hijack), http.ErrHijacked
// after Hijack or TakeOver, or the error of writing head.
func TakeOver(w http.ResponseWriter, head []byte, newHandler func(c *uringrt.CallbackConn) uringrt.Handler) (*uringrt.CallbackConn, error) {
	rw := unwrapResponse(w)
	if rw == nil || rw.handlerDone.Load() {
		return nil, ErrNoTakeOver
	}
	if rw.hijacked {
		return nil, http.ErrHijacked
	}
	h := rw.h
	if rt, err := h.srv.s.runtime(); err != nil || rt.Backend() == uringrt.BackendStd {
		return nil, ErrNoTakeOver
	}
	rw.disableWriteContinue()
	rw.flushForHandOver()
	if hc := h.hc; hc != nil && (hc.rdTimer != nil || hc.wrTimer != nil) {
		h.setDeadline(time.Time{}, false)
		h.setDeadline(time.Time{}, true)
	}
	h.dlSet(dlRexp|dlWexp|dlRown|dlWown, false)
	h.werr = nil
	if len(head) > 0 {
		if err := h.send(head); err != nil {
			return nil, err
		}
	}
	tk := &takeover{h: newHandler(h.c)}
	// Input that arrives meanwhile waits with the connection (busy).
	tk.h.OnOpen(h.c)
	h.phase.Store(phaseHijacked)
	hc := h.hijackConn()
	hc.tk = tk
	h.mu.Lock()
	h.hj = hc
	rw.hijacked = true
	h.busy = false
	closed, rdErr := h.closed, h.rdErr
	pending := !closed && (h.buffered() > 0 || rdErr == io.EOF)
	tk.eof = rdErr == io.EOF
	tk.started = !pending
	if !pending {
		h.releaseIn()
	}
	h.mu.Unlock()
	h.setState(http.StateHijacked)
	if closed {
		// OnClose ran before the routing: it comes here.
		tk.h.OnClose(h.c, rdErr)
	} else if pending {
		// Handed over as a callback of the connection, on its loop.
		h.c.AfterFunc(0, h.startTakeover)
	}
	return h.c, nil
}

// unwrapResponse finds this package's response behind w (middleware
// wrappers with an Unwrap method, as http.ResponseController follows).
func unwrapResponse(w http.ResponseWriter) *response {
	for {
		switch v := w.(type) {
		case *response:
			return v
		case interface{ Unwrap() http.ResponseWriter }:
			w = v.Unwrap()
		default:
			return nil
		}
	}
}

// startTakeover hands the taken-over handler the bytes read after the
// request, and the peer's FIN that came with them (a callback of c, or
// OnClose's caller).
func (h *hconn) startTakeover(c *uringrt.CallbackConn) {
	h.mu.Lock()
	tk := h.hj.tk
	if tk.started {
		h.mu.Unlock()
		return
	}
	tk.started = true
	in, r := h.in, h.r
	h.in, h.r = nil, 0
	paused, eof := h.paused, tk.eof
	h.paused = false
	h.mu.Unlock()
	if in != nil {
		if len(in) > r {
			tk.h.OnData(c, in[r:])
		}
		putBuf(in)
	}
	if paused {
		resumeRead(c)
	}
	if eof {
		if hc, ok := tk.h.(uringrt.HalfCloser); !ok || !hc.OnReadEOF(c) {
			c.Close()
		}
	}
}

// takeoverData routes OnData to the taken-over handler (h.mu held on
// entry, released); bytes that come before those read with the request
// were handed over wait with the connection.
func (h *hconn) takeoverData(c *uringrt.CallbackConn, data []byte) {
	tk := h.hj.tk
	if !tk.started {
		h.appendIn(data)
		if !h.paused && h.buffered() > inHighWater {
			h.paused = true
			pauseRead(c)
		}
		h.mu.Unlock()
		return
	}
	h.mu.Unlock()
	tk.h.OnData(c, data)
}

// takeoverEOF routes OnReadEOF (h.mu held on entry, released).
func (h *hconn) takeoverEOF(c *uringrt.CallbackConn) bool {
	tk := h.hj.tk
	if !tk.started {
		tk.eof = true
		h.mu.Unlock()
		return true // until the bytes before it were handed over
	}
	h.mu.Unlock()
	if hc, ok := tk.h.(uringrt.HalfCloser); ok {
		return hc.OnReadEOF(c)
	}
	return false
}

// takeoverClose routes OnClose, after what was read before it.
func (h *hconn) takeoverClose(c *uringrt.CallbackConn, err error) {
	h.startTakeover(c)
	h.hj.tk.h.OnClose(c, err)
}

// takeoverDrained routes OnDrained.
func (h *hconn) takeoverDrained(c *uringrt.CallbackConn) {
	if d, ok := h.hj.tk.h.(uringrt.Drainer); ok {
		d.OnDrained(c)
	}
}

// takeoverShutdown tells a taken-over connection that Shutdown began,
// once; false for a connection not taken over.
func (h *hconn) takeoverShutdown() bool {
	h.mu.Lock()
	var tk *takeover
	if h.hj != nil {
		tk = h.hj.tk
	}
	first := tk != nil && !tk.shut
	if first {
		tk.shut = true
	}
	h.mu.Unlock()
	if tk == nil {
		return false
	}
	if first {
		if s, ok := tk.h.(TakeOverShutdowner); ok {
			s.OnShutdown(h.c)
		} else {
			h.c.Close()
		}
	}
	return true
}
