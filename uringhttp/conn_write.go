package uringhttp

import (
	"net"
	"os"

	uringrt "github.com/uringrt/uringrt/runtime"
)

// writeOut adds response bytes to the connection's output (serving
// goroutine), handing them to the connection when 4 KiB are gathered.
func (h *hconn) writeOut(p []byte) (int, error) {
	if h.werr != nil {
		return 0, h.werr
	}
	if h.out == nil {
		if len(p) >= outFlushAt {
			if err := h.send(p); err != nil {
				return 0, err
			}
			return len(p), nil
		}
		h.out = h.takeOut()
	}
	if len(h.out)+len(p) > outFlushAt && len(h.out) > 0 {
		if err := h.flushOut(); err != nil {
			return 0, err
		}
		if len(p) >= outFlushAt {
			if err := h.send(p); err != nil {
				return 0, err
			}
			return len(p), nil
		}
		if h.out == nil {
			h.out = h.takeOut()
		}
	}
	h.out = append(h.out, p...)
	return len(p), nil
}

func (h *hconn) writeOutString(s string) (int, error) {
	if h.out != nil && len(h.out)+len(s) <= outFlushAt {
		h.out = append(h.out, s...)
		return len(s), nil
	}
	return h.writeOut([]byte(s))
}

// flushOut hands the gathered output to the connection.
func (h *hconn) flushOut() error {
	if h.out == nil {
		return h.werr
	}
	var err error
	if len(h.out) > 0 {
		err = h.send(h.out)
	}
	h.giveOut(h.out)
	h.out = nil
	return err
}

// takeOut returns an output buffer: the current response's, or a pooled
// one. A response keeps its buffer across its reuses, so a request costs
// no pool operation for it.
func (h *hconn) takeOut() []byte {
	if w := h.w; w != nil && w.obuf != nil {
		b := w.obuf
		w.obuf = nil
		return b[:0]
	}
	return getBuf()
}

func (h *hconn) giveOut(b []byte) {
	if w := h.w; w != nil && w.obuf == nil && cap(b) == 4096 {
		w.obuf = b[:0]
		return
	}
	putBuf(b)
}

func (sh *srvHandler) OnDrained(c *uringrt.CallbackConn) {
	h, _ := c.Value().(*hconn)
	if h == nil {
		return
	}
	h.mu.Lock()
	h.drains.Add(1)
	h.signal()
	tk := h.hj != nil && h.hj.tk != nil
	h.mu.Unlock()
	if tk {
		h.takeoverDrained(c)
	}
}

var errWriteTimeout = &net.OpError{Op: "write", Net: "tcp", Err: timeoutError{}}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }
func (timeoutError) Unwrap() error   { return os.ErrDeadlineExceeded }
