package uringhttp

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"
	"time"

	uringrt "github.com/uringrt/uringrt/runtime"
)

// Timeouts. A connection's phase (new, idle, head, active) is stamped with
// the monotonic clock when it begins; one timer of the connection's loop
// (uringrt.CallbackConn.AfterFunc) is armed for the deadline of its phase
// when the connection enters a phase that has one and no timer is armed.
// When it fires it applies the deadline of the phase the connection is in
// then, from that phase's stamp, and arms itself again for what is left,
// so a connection's timer fires at most once per timeout period however
// many requests it serves: a request pays two clock reads and no timer
// operation, and an idle connection costs nothing until its deadline.
// Deadlines thus fire when due, within a loop iteration, as net/http's
// socket deadlines do.
//
// As in net/http: ReadHeaderTimeout counts from the connection's start for
// its first request, and for later ones from when 4 bytes of the next head
// are there (net/http's server waits for 4 bytes under IdleTimeout before
// it reads a head); IdleTimeout from the end of the last response.

var clockBase = time.Now()

func monoNow() int64 { return int64(time.Since(clockBase)) }

// timed reports whether any of the server's timeouts is set.
func (s *Server) timed() bool {
	return s.ReadHeaderTimeout > 0 || s.ReadTimeout > 0 || s.WriteTimeout > 0 || s.IdleTimeout > 0
}

func (s *Server) headerTimeout() time.Duration {
	if s.ReadHeaderTimeout > 0 {
		return s.ReadHeaderTimeout
	}
	return s.ReadTimeout
}

func (s *Server) idleTimeout() time.Duration {
	if s.IdleTimeout > 0 {
		return s.IdleTimeout
	}
	return s.ReadTimeout
}

func (h *hconn) setPhase(p int32) {
	h.phase.Store(p)
	s := h.srv.s
	if s.timed() {
		h.since.Store(monoNow())
		h.armTimer()
	} else if p == phaseNew {
		h.since.Store(monoNow()) // for Shutdown's 5 s grace of a new connection
	}
}

// stampRequest records when the request in flight was read (its
// ReadTimeout and WriteTimeout count from then).
func (h *hconn) stampRequest() {
	if h.srv.s.timed() {
		h.reqAt.Store(monoNow())
	}
}

// due returns when the connection's current phase times out (mono ns), or
// 0 when it has no deadline.
func (h *hconn) due() int64 {
	s := h.srv.s
	switch h.phase.Load() {
	case phaseNew, phaseHead:
		if d := s.headerTimeout(); d > 0 {
			return h.since.Load() + int64(d)
		}
	case phaseIdle:
		if d := s.idleTimeout(); d > 0 {
			return h.since.Load() + int64(d)
		}
	case phaseActive:
		at, next := h.reqAt.Load(), int64(0)
		if d := s.ReadTimeout; d > 0 && !h.dlIs(dlRexp|dlRown) {
			next = at + int64(d)
		}
		if d := s.WriteTimeout; d > 0 && !h.dlIs(dlWexp|dlWown) && (next == 0 || at+int64(d) < next) {
			next = at + int64(d)
		}
		return next
	}
	return 0
}

// armTimer arms the connection's timer for its phase's deadline unless
// one is armed (any goroutine).
func (h *hconn) armTimer() {
	if h.dlIs(dlTimer) {
		return
	}
	due := h.due()
	if due == 0 || h.dl.Or(dlTimer)&dlTimer != 0 {
		return
	}
	h.c.AfterFunc(time.Duration(due-monoNow()), connTimer)
}

// connTimer is the connection's timer (on its loop): it applies what is
// due and arms itself again for the next deadline.
func connTimer(c *uringrt.CallbackConn) {
	h, _ := c.Value().(*hconn)
	if h == nil {
		return
	}
	now := monoNow()
	if due := h.due(); due != 0 && due <= now {
		h.expire()
	}
	if due := h.due(); due != 0 && !h.shut.Load() {
		c.AfterFunc(time.Duration(due-now), connTimer)
		return
	}
	h.dlSet(dlTimer, false)
	h.armTimer() // a phase entered since due() was read
}

// expire applies the deadline of the connection's phase, which passed.
func (h *hconn) expire() {
	s := h.srv.s
	switch h.phase.Load() {
	case phaseNew, phaseHead:
		h.timeoutClose(true)
	case phaseIdle:
		h.timeoutClose(false)
	case phaseActive:
		at, now := h.reqAt.Load(), monoNow()
		if s.ReadTimeout > 0 && now-at >= int64(s.ReadTimeout) && !h.dlIs(dlRexp|dlRown) {
			h.dlSet(dlRexp, true)
		}
		if s.WriteTimeout > 0 && now-at >= int64(s.WriteTimeout) && !h.dlIs(dlWexp|dlWown) {
			h.dlSet(dlWexp, true)
		}
		h.mu.Lock()
		h.wakeAll()
		h.mu.Unlock()
	}
}

// timeoutClose closes a connection whose head or idle time ran out. As
// net/http: a read timeout is not answered, unless the head was cut in a
// line that net/http's line reader returns whole at its deadline and its
// parser refuses (400; headCut).
func (h *hconn) timeoutClose(head bool) {
	h.mu.Lock()
	if h.busy || h.hj != nil || h.dead {
		h.mu.Unlock()
		return
	}
	h.dead = true
	answer := head && h.dlIs(dlCut400)
	h.mu.Unlock()
	h.shut.Store(true)
	if answer {
		h.errorReply(protoError("timeout"), true)
		return
	}
	h.c.Close()
}

// partialHead notes a head that is not all there (data, from its first
// byte, of which the first seen bytes were noted before; mu held): after
// a request, its ReadHeaderTimeout starts once 4 bytes of it are there
// (before, IdleTimeout runs on); and what net/http would answer if that
// timeout passed now (headCut).
func (h *hconn) partialHead(data []byte, seen int) {
	if ph := h.phase.Load(); ph == phaseIdle && len(data) >= 4 {
		h.setPhase(phaseHead)
	}
	seen = min(max(seen, 0), len(data))
	if seen == 0 {
		h.dlSet(dlNL1|dlNL2, false)
	}
	h.dlSet(dlCut400, h.headCut(data, seen))
}

// cutWindow bounds what headCut looks at beyond the new bytes.
const cutWindow = 8 << 10

// headCut reports whether net/http's server answers 400 to a request head
// cut after the bytes b by its read deadline: its line reader returns the
// partial last line as a whole line, which is then parsed as the request
// line or a header line; nothing is answered when there is no partial
// line, or when it passes (the next read fails with the timeout). It looks
// at the bytes after seen (new since the last call) and at most cutWindow
// before them, so that a head arriving in small pieces costs linear time:
// a partial line longer than that is judged by what the window shows (a
// request line by its method and version, a header line keeps the
// verdict of its start).
func (h *hconn) headCut(b []byte, seen int) bool {
	for i, nls := seen, 0; nls < 2 && !h.dlIs(dlNL2); nls++ {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			break
		}
		if h.dlIs(dlNL1) {
			h.dlSet(dlNL2, true)
		} else {
			h.dlSet(dlNL1, true)
		}
		i += j + 1
	}
	win := b[max(0, seen-cutWindow):]
	nl := bytes.LastIndexByte(win, '\n')
	if nl < 0 && !h.dlIs(dlNL1) {
		return !requestLineOK(b) // the request line, unended
	}
	if nl < 0 {
		return h.dlIs(dlCut400) // a long header line: as its start was judged
	}
	part := win[nl+1:]
	if len(part) == 0 {
		return false
	}
	if part[0] == ' ' || part[0] == '\t' {
		return !h.dlIs(dlNL2) // a continuation, refused on the first header line
	}
	k, v, ok := bytes.Cut(part, []byte{':'})
	if !ok || len(k) == 0 {
		return true
	}
	for _, c := range k {
		if !validHeaderFieldByte(c) {
			return true
		}
	}
	for _, c := range bytes.Trim(v, " \t\r") {
		if !validHeaderValueByte(c) {
			return true
		}
	}
	return false
}

// requestLineOK reports whether net/http's request reader takes line as
// a request line (method, target and version). A line longer than
// cutWindow is judged by its method and version only.
func requestLineOK(b []byte) bool {
	if len(b) > cutWindow {
		sp := bytes.IndexByte(b[:cutWindow], ' ')
		last := bytes.LastIndexByte(b[len(b)-16:], ' ')
		if sp <= 0 || last < 0 || !validMethod(string(b[:sp])) {
			return false
		}
		_, _, ok := http.ParseHTTPVersion(string(b[len(b)-16+last+1:]))
		return ok
	}
	line := string(b)
	method, rest, ok1 := strings.Cut(line, " ")
	uri, proto, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 {
		return false
	}
	if _, _, ok := http.ParseHTTPVersion(proto); !ok || !validMethod(method) {
		return false
	}
	if method == "CONNECT" && !strings.HasPrefix(uri, "/") {
		uri = "http://" + uri
	}
	_, err := url.ParseRequestURI(uri)
	return err == nil
}
