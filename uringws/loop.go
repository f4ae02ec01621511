package uringws

import (
	"time"

	uringrt "github.com/uringrt/uringrt/runtime"
)

// loopConn is a Conn as the runtime's callback handler of its connection
// after the takeover: frames are parsed in OnData, on the loop, from the
// runtime's buffers. A partial frame header or control frame is left with
// the runtime (framing), so an idle connection holds no buffer of its own.
type loopConn Conn

func (lc *loopConn) OnOpen(cc *uringrt.CallbackConn) {
	c := (*Conn)(lc)
	if _, ok := c.h.(Drainer); ok {
		cc.SetLowWater(c.u.writeLimit() / 2)
	}
	if d := c.u.ReadTimeout; d > 0 {
		cc.SetReadTimeout(d)
	}
	if iv := c.u.tickInterval(); iv > 0 {
		c.timer = cc.Every(iv, func(*uringrt.CallbackConn) { c.tick(time.Now()) })
	}
	c.h.OnOpen(c)
}

func (lc *loopConn) OnData(cc *uringrt.CallbackConn, data []byte) {
	c := (*Conn)(lc)
	c.seen.Store(true)
	if c.state.Load()&stCloseRecv != 0 {
		return // after the close frame, input is dropped
	}
	if c.carry != nil {
		// Bytes handed over outside OnData came first: go on from the
		// connection's own copy until it is used up.
		*c.carry = append(*c.carry, data...)
		n, err := c.r.feed(c, *c.carry)
		if err != nil {
			c.fail(err)
			return
		}
		rest := copy(*c.carry, (*c.carry)[n:])
		*c.carry = (*c.carry)[:rest]
		if rest == 0 {
			putBuf(c.carry)
			c.carry = nil
		}
		return
	}
	n, err := c.r.feed(c, data)
	if err != nil {
		c.fail(err)
		return
	}
	if n == len(data) || c.state.Load()&stCloseRecv != 0 {
		return
	}
	if _, err := cc.Discard(n); err == uringrt.ErrNotInCallback {
		// Not the runtime's input (the bytes read with the request):
		// keep the rest here.
		c.carry = getBuf(len(data) - n)
		*c.carry = append(*c.carry, data[n:]...)
	}
}

func (lc *loopConn) OnClose(cc *uringrt.CallbackConn, err error) {
	(*Conn)(lc).closed()
}

// OnShutdown is the server's Shutdown: the connection is closed with
// 1001 Going Away.
func (lc *loopConn) OnShutdown(cc *uringrt.CallbackConn) {
	(*Conn)(lc).Close(CloseGoingAway, "server shutting down")
}

func (lc *loopConn) OnDrained(cc *uringrt.CallbackConn) {
	c := (*Conn)(lc)
	if d, ok := c.h.(Drainer); ok {
		d.OnDrained(c)
	}
}

// MayBlock: callbacks run on the loop.
func (lc *loopConn) MayBlock() bool { return false }
