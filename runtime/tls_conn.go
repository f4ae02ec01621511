package uringrt

import (
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// recordConn is the net.Conn a connection's tls.Conn runs over: its Read
// hands out the ciphertext the loop received, its Write puts records on
// the connection's output. It has three modes, changed only on the loop
// while no other goroutine uses it:
//
//	rcLoop     the connection lives on the loop: Read hands out the one
//	           record the loop set in feed and, past it, fails with
//	           errWouldBlock (a temporary net.Error, which crypto/tls
//	           returns without failing the connection); Write queues the
//	           records at once (the caller is the loop).
//	rcShake    the handshake goroutine runs: Read waits for the bytes the
//	           loop pushes, handing out no byte past the end of the
//	           record being read (so crypto/tls never holds the start of
//	           the next one); Write posts the flight to the loop.
//	rcDetached the tls.Conn was handed out (TLSConn): Read and Write
//	           block in the caller, with deadlines.
type recordConn struct {
	c    *CallbackConn
	mode uint8
	feed []byte // rcLoop: the rest of the record handed to tls.Conn.Read

	mu     sync.Mutex
	in     []byte        // rcShake, rcDetached: ciphertext received, from r on unread
	r      int           //
	left   int           // bytes to the end of the record being handed out
	sig    chan struct{} // (cap 1) bytes came, the conn closed, a deadline changed (rcShake, rcDetached)
	eof    bool          // the peer's FIN came after in
	closed bool          // the connection is closing, or Close was called
	paused bool          // rcDetached: the loop paused reading for in's size
	rdl    time.Time     // rcDetached: read deadline
	wdl    time.Time     // rcDetached: write deadline
}

const (
	rcLoop = iota
	rcShake
	rcDetached
)

// detachedHigh pauses a detached connection's reading while this many
// bytes wait unread (and resumes it under half of it).
const detachedHigh = 64 << 10

var _ net.Conn = (*recordConn)(nil)

// wouldBlock is what recordConn.Read returns on the loop when the record
// it was given has been read: crypto/tls leaves the connection as it is
// on a temporary net.Error, and is called again with the next record.
type wouldBlock struct{}

func (wouldBlock) Error() string   { return "uringrt: no TLS record buffered" }
func (wouldBlock) Timeout() bool   { return false }
func (wouldBlock) Temporary() bool { return true }

var errWouldBlock error = wouldBlock{}

// signal wakes a reader waiting in rcShake or rcDetached mode (sig is nil
// in rcLoop mode, where nobody waits).
func (rc *recordConn) signal() {
	rc.mu.Lock()
	sig := rc.sig
	rc.mu.Unlock()
	if sig == nil {
		return
	}
	select {
	case sig <- struct{}{}:
	default:
	}
}

// Read implements net.Conn for crypto/tls.
func (rc *recordConn) Read(p []byte) (int, error) {
	if rc.mode == rcLoop {
		if len(rc.feed) == 0 {
			return 0, errWouldBlock
		}
		n := copy(p, rc.feed)
		rc.feed = rc.feed[n:]
		return n, nil
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for {
		if rc.closed {
			return 0, net.ErrClosed
		}
		if n := rc.takeLocked(p); n > 0 {
			return n, nil
		}
		if rc.eof {
			return 0, io.EOF
		}
		if err := rc.waitLocked(rc.rdl, "read"); err != nil {
			return 0, err
		}
	}
}

// takeLocked copies to p what is buffered, up to the end of the record
// being read.
func (rc *recordConn) takeLocked(p []byte) int {
	avail := rc.in[rc.r:]
	if rc.left == 0 {
		if len(avail) < recordHeader {
			return 0
		}
		rc.left = recordHeader + recordLen(avail)
	}
	n := copy(p, avail[:min(len(avail), rc.left)])
	rc.left -= n
	rc.r += n
	if rc.r == len(rc.in) {
		rc.in, rc.r = rc.in[:0], 0
	}
	if rc.paused && len(rc.in)-rc.r < detachedHigh/2 {
		rc.paused = false
		rc.c.ResumeRead()
	}
	return n
}

// waitLocked waits (rc.mu held, released meanwhile) for a signal or the
// deadline dl; past dl it returns a timeout.
func (rc *recordConn) waitLocked(dl time.Time, op string) error {
	var expire <-chan time.Time
	if !dl.IsZero() {
		d := time.Until(dl)
		if d <= 0 {
			return &net.OpError{Op: op, Net: "tcp", Addr: rc.c.RemoteAddr(), Err: os.ErrDeadlineExceeded}
		}
		t := time.NewTimer(d)
		defer t.Stop()
		expire = t.C
	}
	sig := rc.sig
	rc.mu.Unlock()
	select {
	case <-sig:
	case <-expire:
	}
	rc.mu.Lock()
	return nil
}

// push appends ciphertext the loop received (rcShake, rcDetached) and
// returns how much is buffered.
func (rc *recordConn) push(data []byte) int {
	rc.mu.Lock()
	if rc.r > 0 && rc.r >= len(rc.in)/2 {
		rc.in = rc.in[:copy(rc.in, rc.in[rc.r:])]
		rc.r = 0
	}
	rc.in = append(rc.in, data...)
	n := len(rc.in) - rc.r
	rc.mu.Unlock()
	rc.signal()
	return n
}

// end marks the end of input (eof) or of the connection (closed) and wakes
// a waiting reader.
func (rc *recordConn) end(closed bool) {
	rc.mu.Lock()
	rc.eof = true
	rc.closed = rc.closed || closed
	rc.mu.Unlock()
	rc.signal()
}

// Write implements net.Conn for crypto/tls: the records go to the
// connection's output in the order of the calls.
func (rc *recordConn) Write(b []byte) (int, error) {
	c := rc.c
	switch rc.mode {
	case rcLoop:
		c.queueRecords(b) // tls_loop.go
		return len(b), nil
	case rcShake:
		rc.mu.Lock()
		closed := rc.closed
		rc.mu.Unlock()
		if closed {
			return 0, net.ErrClosed
		}
		p := append([]byte(nil), b...)
		c.l.post(request{kind: reqFunc, fn: func() { c.queueRecords(p) }})
		return len(b), nil
	}
	return rc.writeDetached(b)
}

// drainPoll is how often a detached Write refused for a full output queue
// tries again.
const drainPoll = 2 * time.Millisecond

func (rc *recordConn) writeDetached(b []byte) (int, error) {
	for {
		n, err := rc.c.AsyncWrite(b)
		if err != ErrWriteBufferFull {
			if err != nil {
				err = &net.OpError{Op: "write", Net: "tcp", Addr: rc.c.RemoteAddr(), Err: err}
			}
			return n, err
		}
		rc.mu.Lock()
		dl := rc.wdl
		closed := rc.closed
		rc.mu.Unlock()
		if closed {
			return 0, &net.OpError{Op: "write", Net: "tcp", Addr: rc.c.RemoteAddr(), Err: net.ErrClosed}
		}
		if !dl.IsZero() && !time.Now().Before(dl) {
			return 0, &net.OpError{Op: "write", Net: "tcp", Addr: rc.c.RemoteAddr(), Err: os.ErrDeadlineExceeded}
		}
		time.Sleep(drainPoll)
	}
}

// Close closes the connection (a detached tls.Conn's Close, after its
// close_notify).
func (rc *recordConn) Close() error {
	rc.end(true)
	if rc.mode == rcDetached {
		return rc.c.AsyncClose()
	}
	return nil
}

func (rc *recordConn) LocalAddr() net.Addr  { return rc.c.LocalAddr() }
func (rc *recordConn) RemoteAddr() net.Addr { return rc.c.RemoteAddr() }

func (rc *recordConn) SetDeadline(t time.Time) error {
	rc.setDeadline(t, true, true)
	return nil
}

func (rc *recordConn) SetReadDeadline(t time.Time) error {
	rc.setDeadline(t, true, false)
	return nil
}

func (rc *recordConn) SetWriteDeadline(t time.Time) error {
	rc.setDeadline(t, false, true)
	return nil
}

// setDeadline sets a detached connection's deadlines (crypto/tls sets a
// write deadline around its close_notify on the loop too: without effect
// there, as the write cannot block).
func (rc *recordConn) setDeadline(t time.Time, rd, wr bool) {
	if rc.mode != rcDetached {
		return
	}
	rc.mu.Lock()
	if rd {
		rc.rdl = t
	}
	if wr {
		rc.wdl = t
	}
	rc.mu.Unlock()
	rc.signal()
}

// recordHeader is a TLS record header's size; recordLen reads the length
// of the record whose header starts b.
const recordHeader = 5

func recordLen(b []byte) int { return int(b[3])<<8 | int(b[4]) }

// maxCiphertext is the largest record payload crypto/tls accepts (TLS 1.2;
// 1.3 allows less, which crypto/tls checks).
const maxCiphertext = 16384 + 2048
