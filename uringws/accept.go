package uringws

import (
	"errors"
	"net/http"
	"time"

	uringrt "github.com/uringrt/uringrt/runtime"
	"github.com/uringrt/uringrt/uringhttp"
)

// Upgrade answers the WebSocket handshake of r and returns the
// connection, whose events go to h. Refused requests get their HTTP
// answer (405 for a method other than GET, 400 for missing Connection or
// Upgrade tokens or a bad Sec-WebSocket-Key, 426 with
// Sec-WebSocket-Version: 13 for another version, 403 when CheckOrigin
// refuses) and a *HandshakeError. Headers the handler set on w before
// the call go out with the 101 answer.
//
// Served by uringhttp on io_uring, the connection moves onto the event
// loop: after the 101 its frames are parsed in the loop's callbacks,
// which call h; an idle connection then holds no goroutine and no
// buffer. Anywhere else (net/http, or a runtime on Go's net) the
// connection is hijacked and a goroutine of its own reads it with the
// same parser and calls h. Either way h.OnOpen comes first, after the
// 101, and the handler that called Upgrade may return at once: the
// connection lives on until it closes.
func (u *Upgrader) Upgrade(w http.ResponseWriter, r *http.Request, h Handler) (*Conn, error) {
	hs, herr := u.checkRequest(r)
	if herr != nil {
		if herr.Status == http.StatusUpgradeRequired {
			w.Header().Set("Sec-WebSocket-Version", "13")
		}
		http.Error(w, http.StatusText(herr.Status), herr.Status)
		return nil, herr
	}
	c := &Conn{u: u, h: h, subproto: hs.subproto, deflate: hs.ext != ""}
	c.r.maxMsg, c.r.deflate = u.maxMessage(), c.deflate
	head := hs.response101(w.Header())
	_, err := uringhttp.TakeOver(w, head, func(cc *uringrt.CallbackConn) uringrt.Handler {
		c.cc = cc
		return (*loopConn)(c)
	})
	if err == nil {
		return c, nil
	}
	if !errors.Is(err, uringhttp.ErrNoTakeOver) {
		return nil, err
	}
	if err := c.hijack(w, head); err != nil {
		return nil, err
	}
	return c, nil
}

// hijack serves the connection on a goroutine of its own (the path off
// the loops).
func (c *Conn) hijack(w http.ResponseWriter, head []byte) error {
	nc, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		if errors.Is(err, http.ErrNotSupported) {
			return errNoHijack
		}
		return err
	}
	var initial []byte
	if n := brw.Reader.Buffered(); n > 0 {
		p, _ := brw.Reader.Peek(n)
		initial = append([]byte(nil), p...)
	}
	nc.SetDeadline(time.Time{})
	if _, err := nc.Write(head); err != nil {
		nc.Close()
		return err
	}
	c.nc = &netConn{c: nc}
	go c.readLoop(initial)
	return nil
}

// readLoop reads the connection on the goroutine path and feeds the
// parser, as the loop's OnData does.
func (c *Conn) readLoop(initial []byte) {
	nc := c.nc.c
	defer func() {
		nc.Close()
		c.closed()
	}()
	var stop chan struct{}
	if iv := c.u.tickInterval(); iv > 0 {
		stop = make(chan struct{})
		defer close(stop)
		go func() {
			t := time.NewTicker(iv)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case now := <-t.C:
					c.tick(now)
				}
			}
		}()
	}
	c.h.OnOpen(c)
	buf := make([]byte, 0, max(4096, len(initial)))
	buf = append(buf, initial...)
	for {
		if len(buf) > 0 && c.state.Load()&stCloseRecv == 0 {
			n, err := c.r.feed(c, buf)
			if err != nil {
				c.fail(err)
			}
			buf = buf[:copy(buf, buf[n:])]
		}
		if c.state.Load()&stCloseRecv != 0 {
			buf = buf[:0] // after the close frame, input is dropped until the end
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		if d := c.u.ReadTimeout; d > 0 {
			nc.SetReadDeadline(time.Now().Add(d))
		}
		m, err := nc.Read(buf[len(buf):cap(buf)])
		if m > 0 {
			c.seen.Store(true)
		}
		buf = buf[:len(buf)+m]
		if err != nil {
			if len(buf) > 0 && c.state.Load()&stCloseRecv == 0 {
				if _, ferr := c.r.feed(c, buf); ferr != nil {
					c.fail(ferr)
				}
			}
			return
		}
	}
}
