package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// RESP2 on a bufio.Reader and a bufio.Writer: reading a request (an array
// of bulk strings or an inline line) and writing the replies.

const (
	maxBulk   = 64 << 20 // longest bulk string, bytes (as examples/resp)
	maxArgs   = 1 << 20  // most elements of a request array
	maxInline = 64 << 10 // longest inline command line, bytes
)

var errProto = errors.New("protocol error")

type protoError struct{ msg string }

func (e *protoError) Error() string { return "Protocol error: " + e.msg }

// readRequest reads one request: an array of bulk strings, or an inline
// line of words.
func (c *conn) readRequest() ([][]byte, error) {
	line, err := c.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, &protoError{"too big inline request"}
	}
	if err != nil {
		return nil, err
	}
	c.args = c.args[:0]
	c.buf = c.buf[:0]
	if line[0] != '*' {
		if len(line) > maxInline {
			return nil, &protoError{"too big inline request"}
		}
		c.buf = append(c.buf, line...)
		for _, f := range strings.Fields(string(c.buf)) {
			c.args = append(c.args, []byte(f))
		}
		return c.args, nil
	}
	n, err := strconv.Atoi(strings.TrimRight(string(line[1:]), "\r\n"))
	if err != nil || n > maxArgs {
		return nil, &protoError{"invalid multibulk length"}
	}
	type span struct{ s, e int }
	spans := make([]span, 0, 8)
	for i := 0; i < n; i++ {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			if err == bufio.ErrBufferFull {
				return nil, &protoError{"invalid bulk length"}
			}
			return nil, err
		}
		if line[0] != '$' {
			return nil, &protoError{fmt.Sprintf("expected '$', got '%c'", line[0])}
		}
		l, err := strconv.Atoi(strings.TrimRight(string(line[1:]), "\r\n"))
		if err != nil || l < 0 || l > maxBulk {
			return nil, &protoError{"invalid bulk length"}
		}
		start := len(c.buf)
		if cap(c.buf)-start < l+2 {
			nb := make([]byte, start, 2*cap(c.buf)+l+2)
			copy(nb, c.buf)
			c.buf = nb
		}
		c.buf = c.buf[:start+l+2]
		if _, err := io.ReadFull(c.r, c.buf[start:]); err != nil {
			return nil, err
		}
		if c.buf[start+l] != '\r' || c.buf[start+l+1] != '\n' {
			return nil, &protoError{"line not terminated by CRLF"}
		}
		spans = append(spans, span{start, start + l})
	}
	for _, sp := range spans {
		c.args = append(c.args, c.buf[sp.s:sp.e:sp.e])
	}
	if cap(c.buf) > 1<<20 && n <= 3 {
		defer func() { c.buf = nil }()
	}
	return c.args, nil
}

// Replies, written to c.w (c.wmu held).

func (c *conn) simple(s string) { c.w.WriteString("+" + s + "\r\n") }
func (c *conn) err(s string)    { c.w.WriteString("-" + s + "\r\n") }
func (c *conn) null()           { c.w.WriteString("$-1\r\n") }

func (c *conn) int(n int64) {
	c.w.WriteByte(':')
	c.num = strconv.AppendInt(c.num[:0], n, 10)
	c.w.Write(c.num)
	c.w.WriteString("\r\n")
}

func (c *conn) bulk(b []byte) {
	c.w.WriteByte('$')
	c.num = strconv.AppendInt(c.num[:0], int64(len(b)), 10)
	c.w.Write(c.num)
	c.w.WriteString("\r\n")
	c.w.Write(b)
	c.w.WriteString("\r\n")
}

func (c *conn) array(n int) {
	c.w.WriteByte('*')
	c.num = strconv.AppendInt(c.num[:0], int64(n), 10)
	c.w.Write(c.num)
	c.w.WriteString("\r\n")
}
