package uringhttp

import (
	"context"
	"io"
	"net"
	"net/http"
)

// body is a request's Body: it reads the connection's input as it
// arrives, decoding chunked encoding, while the loop appends to that input
// and pauses reading when the handler falls 64 KiB behind, so that an
// upload of any size holds at most that much memory and one receive's.
type body struct {
	h       *hconn
	w       *response
	req     *http.Request
	chunked bool
	remain  int64 // Content-Length bytes left; in chunked mode, of the current chunk

	continueReader bool // Expect: 100-continue, sent at the first Read

	// chunked decoding state
	cstate  int
	excess  int64
	trailer bool

	sawEOF bool
	// readerSawEOF: a Read (not Close's discarding, not an early end)
	// returned io.EOF. An Expect: 100-continue body without it closes the
	// connection after the answer, as net/http's rule: its client may not
	// have sent the body, so what follows cannot be trusted as a request.
	readerSawEOF bool
	closed       bool
	// orphaned: the handler returned; a Read from then on (a goroutine the
	// handler left behind) gets http.ErrBodyReadAfterClose, as on
	// net/http, and never the bytes of the connection's next request.
	orphaned   bool
	earlyClose bool
	err        error // a sticky decoding error
}

const (
	csSize = iota
	csData
	csCRLF
	csTrailer
	csDone
)

var errBodyTimeout = &net.OpError{Op: "read", Net: "tcp", Err: timeoutError{}}

// Read implements io.Reader.
func (b *body) Read(p []byte) (int, error) {
	if b.continueReader {
		if b.closed {
			return 0, http.ErrBodyReadAfterClose
		}
		b.w.writeContinue()
	}
	h := b.h
	h.mu.Lock()
	was := b.sawEOF
	n, err := b.readLocked(p, true)
	if err == io.EOF {
		b.readerSawEOF = true
	}
	// The body read to its end after the client closed its side: the
	// client is gone, as net/http's background read then finds
	// (OnReadEOF left the context alone while the body was unread).
	var rctx *reqContext
	if !was && b.sawEOF && h.rdErr != nil {
		rctx = h.rctx
	}
	h.mu.Unlock()
	if rctx != nil {
		rctx.cancel(context.Canceled)
	}
	return n, err
}

// readLocked reads with h.mu held, waiting for input when none is there;
// user: for the handler's Read, which fails once the body is closed or
// the handler returned (checked again after each wait).
func (b *body) readLocked(p []byte, user bool) (int, error) {
	h := b.h
	if user && (b.closed || b.orphaned) {
		return 0, http.ErrBodyReadAfterClose
	}
	if b.sawEOF {
		return 0, io.EOF
	}
	if b.err != nil {
		return 0, b.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := b.decode(p)
		if n > 0 || err != nil {
			if err == io.EOF {
				b.sawEOF = true
			} else if err != nil {
				b.err = err
			}
			if err == nil && !b.chunked && b.remain == 0 {
				b.sawEOF = true
				err = io.EOF
			}
			return n, err
		}
		if h.dlIs(dlRexp) {
			b.err = errBodyTimeout
			return 0, b.err
		}
		if h.rdErr != nil {
			if !b.chunked {
				// As net/http's body: the early end is reported once, and
				// the body counts as read to its end after it.
				b.sawEOF = true
				return 0, io.ErrUnexpectedEOF
			}
			b.err = io.ErrUnexpectedEOF
			return 0, b.err
		}
		h.waitLocked()
		if user && (b.closed || b.orphaned) {
			return 0, http.ErrBodyReadAfterClose
		}
	}
}

// drain reads and drops up to limit bytes for the server as Reads would
// (io.CopyN's results: nil after limit bytes, io.EOF when the body ended
// first), whether or not the handler returned.
func (b *body) drain(limit int64) (int64, error) {
	if b.continueReader {
		if b.closed {
			return 0, http.ErrBodyReadAfterClose
		}
		b.w.writeContinue()
	}
	h := b.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	var buf [4096]byte
	var n int64
	for n < limit {
		m, err := b.readLocked(buf[:min(int64(len(buf)), limit-n)], false)
		n += int64(m)
		if err != nil {
			if err == io.EOF {
				b.readerSawEOF = true
			}
			return n, err
		}
	}
	return n, nil
}

// unreadKnown is the body bytes known to remain (mu held): a Content-Length
// body's remainder, 0 for chunked. A body the client cut short keeps the
// remainder that never came, as net/http's does: over 256 KiB of it makes
// the response close the connection.
func (b *body) unreadKnown() int64 {
	if b.chunked {
		return 0
	}
	return b.remain
}

// Close implements io.Closer: the rest of the body is read and dropped
// (up to 256 KiB, beyond which the connection is not reused), so that the
// next request can be read.
func (b *body) Close() error {
	h := b.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if b.closed {
		return nil
	}
	// Closed from here on: a Read racing with the discarding below (a
	// goroutine the handler left behind, which waits for input as the
	// discarding does) gets http.ErrBodyReadAfterClose rather than the
	// bytes the discarding waits for.
	b.closed = true
	var err error
	switch {
	case b.sawEOF:
	case !b.chunked && b.remain > maxPostHandlerReadBytes:
		b.earlyClose = true
	default:
		var buf [4096]byte
		var n int64
		for n < maxPostHandlerReadBytes {
			m, e := b.readLocked(buf[:min(len(buf), int(maxPostHandlerReadBytes-n))], false)
			n += int64(m)
			if e == io.EOF {
				break
			}
			if e != nil {
				err = e
				break
			}
		}
		if n >= maxPostHandlerReadBytes {
			b.earlyClose = true
		}
	}
	return err
}
