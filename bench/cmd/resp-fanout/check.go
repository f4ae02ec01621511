package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"
)

// A reading subscriber's check of its messages: each frame compared whole
// with the one expected next.

// readMessages reads cfg.msgs message frames of prefix+payload+CRLF from c
// and checks that payload i carries sequence number i. Each frame is
// compared whole with the one expected next, kept up to date by counting
// in its decimal digits: one comparison per delivery, so that the check
// costs the load program little against the server it measures.
func readMessages(c net.Conn, prefix []byte, cfg config, got *atomic.Int64, progress chan struct{}) error {
	flen := len(prefix) + cfg.size + 2
	want := make([]byte, flen)
	copy(want, prefix)
	payload(want[len(prefix):flen-2], 0)
	copy(want[flen-2:], "\r\n")
	digits := want[len(prefix) : len(prefix)+20]
	buf := make([]byte, max(256<<10, 2*flen))
	have := 0
	next := 0
	for next < cfg.msgs {
		n, err := c.Read(buf[have:])
		if n == 0 && err != nil {
			return fmt.Errorf("after %d messages: %w", next, err)
		}
		have += n
		off := 0
		for have-off >= flen && next < cfg.msgs {
			f := buf[off : off+flen]
			if !bytes.Equal(f, want) {
				return mismatch(f, prefix, next)
			}
			next++
			increment(digits)
			off += flen
		}
		have = copy(buf, buf[off:have])
		got.Store(int64(next))
		select {
		case progress <- struct{}{}:
		default:
		}
	}
	return nil
}

// increment adds 1 to the decimal number in d (ASCII digits).
func increment(d []byte) {
	for i := len(d) - 1; i >= 0; i-- {
		if d[i] != '9' {
			d[i]++
			return
		}
		d[i] = '0'
	}
}

// mismatch describes frame f, which is not message next's.
func mismatch(f, prefix []byte, next int) error {
	if !bytes.HasPrefix(f, prefix) || !bytes.HasSuffix(f, []byte("\r\n")) {
		return fmt.Errorf("message %d: unexpected bytes %q", next, f)
	}
	d := f[len(prefix) : len(prefix)+20]
	if seq, ok := seqOf(d); ok && seq != next {
		return fmt.Errorf("message %d out of order: got %q", next, d)
	}
	return fmt.Errorf("message %d: unexpected payload %q", next, f[len(prefix):])
}

// seqOf parses a payload's 20-digit sequence number.
func seqOf(d []byte) (int, bool) {
	n := 0
	for _, b := range d {
		if b < '0' || b > '9' {
			return 0, false
		}
		n = n*10 + int(b-'0')
	}
	return n, true
}

// closedByPeer reports whether the server closed c (EOF or a reset after
// whatever it had sent), reading what is there for up to a second.
func closedByPeer(c net.Conn) bool {
	buf := make([]byte, 256<<10)
	c.SetReadDeadline(time.Now().Add(time.Second))
	for {
		_, err := c.Read(buf)
		if err == nil {
			continue
		}
		var ne net.Error
		return !(errors.As(err, &ne) && ne.Timeout())
	}
}
