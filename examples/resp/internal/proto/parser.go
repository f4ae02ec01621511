// Package proto reads RESP2 requests and writes RESP2 replies for the
// examples/resp server.
//
// A request is an array of bulk strings (what every client library and
// redis-benchmark send) or an inline command, a line of words (what a
// person types into telnet; redis-benchmark's PING_INLINE). The Parser is
// zero-copy (the arguments it returns are slices of the caller's buffer),
// incremental (a partial request returns "need more bytes" and, called
// again with the same bytes and more after them, resumes where it stopped
// instead of scanning the request again) and bounded (limits on a bulk
// string's length, an array's length, an inline line and a whole request,
// so that a peer declaring a huge bulk or never ending an array makes the
// parser return an error instead of the caller holding ever more bytes).
package proto

import (
	"errors"
)

// Default limits of a Parser whose fields are zero.
const (
	// DefaultMaxBulk is the longest bulk string accepted, in bytes.
	// Redis accepts 512 MB (proto-max-bulk-len); this server holds a
	// request's bytes until it is complete, so it accepts less.
	DefaultMaxBulk = 64 << 20
	// DefaultMaxArgs is the most elements one request array may declare
	// (Redis: 1024*1024*1024; clients send a few).
	DefaultMaxArgs = 1 << 20
	// DefaultMaxInline is the longest inline command line, in bytes
	// (Redis: PROTO_INLINE_MAX_SIZE, 64 KiB).
	DefaultMaxInline = 64 << 10
	// DefaultMaxRequest is the most bytes one request may take, its
	// headers included: the bound on what a connection holds for a
	// request that has not ended.
	DefaultMaxRequest = DefaultMaxBulk + 1<<20
)

// Error is a protocol error: the stream cannot be parsed further. Its text
// is what Redis replies before closing the connection ("Protocol error:
// invalid bulk length").
type Error struct{ Msg string }

func (e *Error) Error() string { return "Protocol error: " + e.Msg }

// The protocol errors a Parser returns; compare with errors.Is.
var (
	ErrMultibulkLen = &Error{"invalid multibulk length"}
	ErrBulkLen      = &Error{"invalid bulk length"}
	ErrInlineTooBig = &Error{"too big inline request"}
	ErrRequestBig   = &Error{"request too big"}
	ErrBadLine      = &Error{"line not terminated by CRLF"}
)

// ErrExpectedBulk is wrapped by the error for an array element that is not
// a bulk string.
var ErrExpectedBulk = errors.New("expected '$'")

// Parser parses a stream of RESP2 requests. Its zero value uses the
// default limits; set the fields before the first Next. A Parser belongs
// to one connection and is not safe for concurrent use.
type Parser struct {
	// MaxBulk is the longest bulk string, in bytes (0: DefaultMaxBulk).
	MaxBulk int
	// MaxArgs is the most elements of one array (0: DefaultMaxArgs).
	MaxArgs int
	// MaxInline is the longest inline line, in bytes (0: DefaultMaxInline).
	MaxInline int
	// MaxRequest is the most bytes of one request (0: DefaultMaxRequest).
	MaxRequest int

	// Resume state of the array request that the last Next found partial:
	// off bytes of it parsed, want elements declared, got of them parsed,
	// the first at first. Nothing per element: what a connection holds
	// for a partial request is its bytes, which the caller bounds.
	off, want, got, first int
	args                  [][]byte
	// scratch holds the unquoted words of an inline line with quotes.
	scratch []byte
}

func (p *Parser) limits() (bulk, nargs, inline, req int) {
	bulk, nargs, inline, req = p.MaxBulk, p.MaxArgs, p.MaxInline, p.MaxRequest
	if bulk <= 0 {
		bulk = DefaultMaxBulk
	}
	if nargs <= 0 {
		nargs = DefaultMaxArgs
	}
	if inline <= 0 {
		inline = DefaultMaxInline
	}
	if req <= 0 {
		req = DefaultMaxRequest
	}
	return
}

// Pending reports whether a partial request is being resumed: the next Next
// must be given the same bytes as the last one, and possibly more after
// them.
func (p *Parser) Pending() bool { return p.off > 0 }

// Reset forgets a partial request (after the caller dropped its bytes).
func (p *Parser) Reset() {
	p.off, p.want, p.got = 0, 0, 0
}

// Next parses the request at the front of b. It returns the request's
// arguments, n, the number of bytes it took, and err:
//
//   - n > 0, err == nil: a request; args are slices of b, valid until the
//     next call of Next and while b's bytes are; len(args) == 0 for an
//     empty array or a blank line, which the caller skips.
//   - n == 0, err == nil: b holds part of a request. Call Next again with
//     b's bytes followed by more; the parser resumes where it stopped.
//   - err != nil: a protocol error (*Error); the stream cannot be parsed
//     further and the caller replies with err and closes, as Redis does.
func (p *Parser) Next(b []byte) (args [][]byte, n int, err error) {
	if len(b) == 0 {
		return nil, 0, nil
	}
	if p.off > len(b) { // not the bytes of the last call: start afresh
		p.Reset()
	}
	if p.off == 0 {
		if b[0] != '*' {
			return p.inline(b)
		}
		if args, n, ok := p.whole(b); ok {
			return args, n, nil
		}
	}
	return p.array(b)
}

// wholeMaxArgs is the most elements a request may have to take whole's
// path.
const wholeMaxArgs = 64

// whole parses, in one pass and straight into arguments, an array request
// of 1 to wholeMaxArgs bulk strings that lies entirely in b with
// non-negative decimal lengths within the limits: every request a client
// pipelines, nearly always. Anything else (a partial request, an error, a
// sign, a bound) makes it return ok false, and array parses the request
// from its start: array accepts every request whole does, with the same
// arguments, so whole only saves array's bookkeeping for resuming.
func (p *Parser) whole(b []byte) (args [][]byte, n int, ok bool) {
	maxBulk, maxArgs, _, maxReq := p.limits()
	nargs, i, ok := readLen(b, 1)
	if !ok || nargs == 0 || nargs > min(maxArgs, wholeMaxArgs) {
		return nil, 0, false
	}
	args = p.args[:0]
	for ; nargs > 0; nargs-- {
		if i >= len(b) || b[i] != '$' {
			return nil, 0, false
		}
		v, start, ok := readLen(b, i+1)
		if !ok || v > maxBulk {
			return nil, 0, false
		}
		end := start + v
		if end+2 > len(b) || end+2 > maxReq || b[end] != '\r' || b[end+1] != '\n' {
			return nil, 0, false
		}
		args = append(args, b[start:end:end])
		i = end + 2
	}
	p.args = args
	return args, i, true
}

// readLen reads "<digits>\r\n" at b[i:] (at most 18 digits), returning the
// value and the offset after the line; ok false for anything else,
// including a line not complete yet.
func readLen(b []byte, i int) (v, next int, ok bool) {
	start := i
	for ; i < len(b); i++ {
		c := b[i]
		if c-'0' <= 9 {
			v = v*10 + int(c-'0')
			continue
		}
		if c != '\r' || i == start || i-start > 18 || i+1 >= len(b) || b[i+1] != '\n' ||
			b[start] == '0' && i-start > 1 { // a leading zero: array's error
			return 0, 0, false
		}
		return v, i + 2, true
	}
	return 0, 0, false
}

// array parses (or resumes) a request "*<n>\r\n" followed by n bulk strings
// "$<len>\r\n<bytes>\r\n".
func (p *Parser) array(b []byte) ([][]byte, int, error) {
	maxBulk, maxArgs, _, maxReq := p.limits()
	off := p.off
	if off == 0 {
		v, m, ok, err := readInt(b, 1)
		if err != nil {
			return nil, 0, ErrMultibulkLen
		}
		if !ok {
			return nil, 0, p.check(b, maxReq)
		}
		if v > int64(maxArgs) {
			return nil, 0, ErrMultibulkLen
		}
		if v <= 0 { // *0 and *-1: nothing to run (Redis skips them)
			return p.done(nil, m)
		}
		p.want, p.got, p.first = int(v), 0, m
		off = m
	}
	for p.got < p.want {
		if off >= len(b) {
			break
		}
		if b[off] != '$' {
			return nil, 0, &Error{"expected '$', got '" + printable(b[off]) + "'"}
		}
		v, m, ok, err := readInt(b[off:], 1)
		if err != nil || v < 0 || v > int64(maxBulk) {
			return nil, 0, ErrBulkLen
		}
		if !ok {
			break
		}
		start := off + m
		end := start + int(v)
		if end+2 > maxReq {
			return nil, 0, ErrRequestBig
		}
		if end+2 > len(b) {
			break
		}
		if b[end] != '\r' || b[end+1] != '\n' {
			return nil, 0, ErrBadLine
		}
		p.got++
		off = end + 2
	}
	if p.got < p.want {
		p.off = off
		return nil, 0, p.check(b, maxReq)
	}
	// Complete: a second pass over the headers, checked by the first,
	// makes the arguments.
	args := p.args[:0]
	if cap(args) < p.want {
		args = make([][]byte, 0, p.want)
	}
	for i := p.first; len(args) < p.want; {
		v, m, _, _ := readInt(b[i:], 1)
		start := i + m
		end := start + int(v)
		args = append(args, b[start:end:end])
		i = end + 2
	}
	p.args = args
	return p.done(args, off)
}

// check bounds the bytes of a partial request.
func (p *Parser) check(b []byte, maxReq int) error {
	if len(b) > maxReq {
		return ErrRequestBig
	}
	return nil
}

func (p *Parser) done(args [][]byte, n int) ([][]byte, int, error) {
	p.off, p.want, p.got = 0, 0, 0
	// A huge request's argument list is not kept for the next one.
	if cap(p.args) > 1024 {
		p.args = nil // args, the caller's, stays valid
	}
	return args, n, nil
}

// readInt reads "<c><digits>\r\n" at the front of b (c is any one byte: '*'
// or '$'), skipping skip bytes. It returns the value, the bytes taken, and
// ok == false when the line is not complete yet. A line without digits, a
// sign other than a leading '-', too many digits or a '\r' not followed by
// '\n', "-0" and a leading zero are errors.
func readInt(b []byte, skip int) (v int64, n int, ok bool, err error) {
	i := skip
	neg := false
	if i < len(b) && b[i] == '-' {
		neg = true
		i++
	}
	start := i
	for ; i < len(b); i++ {
		c := b[i]
		if c >= '0' && c <= '9' {
			if i-start >= 18 {
				return 0, 0, false, ErrBulkLen
			}
			v = v*10 + int64(c-'0')
			continue
		}
		if c != '\r' || i == start || b[start] == '0' && (neg || i-start > 1) {
			// Nothing, or "-0" or a leading zero, as Redis's string2ll.
			return 0, 0, false, ErrBulkLen
		}
		if i+1 >= len(b) {
			return 0, 0, false, nil
		}
		if b[i+1] != '\n' {
			return 0, 0, false, ErrBulkLen
		}
		if neg {
			v = -v
		}
		return v, i + 2, true, nil
	}
	return 0, 0, false, nil
}

func printable(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return string(rune(c))
	}
	return "\\x" + string("0123456789abcdef"[c>>4]) + string("0123456789abcdef"[c&15])
}
