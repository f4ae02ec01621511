package uringrt

import (
	"io"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// Zero-copy copies for io.Copy, in the shapes of Go's net/sendfile.go,
// net/splice_linux.go and internal/poll/{sendfile_unix,splice_linux}.go:
// every syscall is a nonblock try on a nonblocking socket, and on EAGAIN the
// goroutine waits for readiness as Read and Write do (the loop arms POLLIN
// or POLLOUT through the ring, the goroutine parks on the fd's pollDesc).

const (
	// maxSpliceSize is the most one splice(2) moves into the pipe (bytes):
	// the pipe's size, as in Go's internal/poll.
	maxSpliceSize = 1 << 20
	// maxSendfileChunk is the most one sendfile(2) is asked for (bytes), so
	// that Close and deadlines are looked at between chunks even when the
	// peer keeps up and sendfile never meets EAGAIN.
	maxSendfileChunk = 4 << 20
	spliceFlags      = unix.SPLICE_F_MOVE | unix.SPLICE_F_NONBLOCK
)

// ReadFrom implements io.ReaderFrom, so io.Copy(c, r) takes a zero-copy
// path where *net.TCPConn's does, and net/http's file serving
// (http.ServeContent, http.ServeFile, whose response writer calls
// ReadFrom on the connection) uses it:
//   - r an *os.File, or an *io.LimitedReader of one: sendfile(2) from the
//     file's position, which it advances;
//   - r a *Conn, a *net.TCPConn or a stream *net.UnixConn, or an
//     *io.LimitedReader of one: splice(2) through a pipe (socket -> pipe ->
//     c), at most 1 MiB per splice.
//
// An io.LimitedReader's N is lowered by the bytes copied. Any other reader,
// a kernel that refuses the call for these descriptors (EINVAL, ENOSYS,
// EOPNOTSUPP before any byte moved), and the experiment.PollRing, experiment.PollAsync and
// experiment.PollBlocking policies copy through a 32 KiB buffer with Read and Write.
// Concurrent Writes wait until ReadFrom returns. Errors other than io.EOF
// are *net.OpError with Op "readfrom" wrapping net.ErrClosed,
// os.ErrDeadlineExceeded (c's write deadline, or the source conn's read
// deadline) or an *os.SyscallError ("sendfile", "splice").
func (c *Conn) ReadFrom(r io.Reader) (int64, error) {
	n, err, handled := c.zeroCopyFrom(r)
	if !handled {
		var m int64
		m, err = io.Copy(writerOnly{c}, r)
		n += m
	}
	if err != nil && err != io.EOF {
		err = c.fd.opError("readfrom", err)
	}
	return n, err
}

// WriteTo implements io.WriterTo: io.Copy(w, c) splices (c -> pipe -> w)
// when w is a *Conn, a *net.TCPConn or a stream *net.UnixConn, as
// *net.TCPConn's does, until c reads EOF; otherwise it copies through a
// 32 KiB buffer. Concurrent Reads wait until WriteTo returns. Errors are
// *net.OpError with Op "writeto" naming c, wrapping net.ErrClosed,
// os.ErrDeadlineExceeded or an *os.SyscallError ("splice"); when spliced,
// as with two *net.TCPConn, that cause is first wrapped in a *net.OpError
// with Op "readfrom" naming w, so the error names both connections:
// "writeto tcp A->B: readfrom tcp C->D: splice: connection reset by peer".
func (c *Conn) WriteTo(w io.Writer) (int64, error) {
	n, err, handled := c.spliceTo(w)
	if !handled {
		var m int64
		m, err = io.Copy(w, readerOnly{c})
		n += m
	}
	if err != nil && err != io.EOF {
		err = c.fd.opError("writeto", err)
	}
	return n, err
}

// writerOnly and readerOnly hide ReadFrom and WriteTo, so the generic
// copies do not come back here.
type writerOnly struct{ io.Writer }
type readerOnly struct{ io.Reader }

// zeroCopyFrom runs ReadFrom's sendfile or splice path. handled is false
// when it did nothing and the caller must copy generically.
func (c *Conn) zeroCopyFrom(r io.Reader) (written int64, err error, handled bool) {
	if !c.fd.rawCapable() {
		return 0, nil, false
	}
	remain, lr := int64(0), (*io.LimitedReader)(nil)
	if l, ok := r.(*io.LimitedReader); ok {
		lr, remain, r = l, l.N, l.R
		if remain <= 0 {
			return 0, nil, true
		}
	}
	if src, ok := rawEndOf(r); ok && src == rawEnd(c.fd) {
		return 0, nil, false // a socket to itself: see spliceTo
	} else if ok {
		if remain == 0 {
			remain = 1<<63 - 1
		}
		written, handled, err = spliceCopy(c.fd, src, remain)
	} else {
		written, err, handled = c.sendFile(r, remain)
	}
	if lr != nil {
		lr.N -= written
	}
	return written, err, handled
}

// spliceTo runs WriteTo's splice path.
func (c *Conn) spliceTo(w io.Writer) (written int64, err error, handled bool) {
	if !c.fd.rawCapable() {
		return 0, nil, false
	}
	dst, ok := rawEndOf(w)
	if !ok || dst == rawEnd(c.fd) {
		// io.Copy(c, c), an echo, gains nothing from a pipe between a
		// socket and itself and would hold two more descriptors per
		// connection for its whole life (10,000 echoing connections ran
		// out of descriptors: TestTenThousandConns/netconn).
		return 0, nil, false
	}
	written, handled, err = spliceCopy(dst, c.fd, 1<<63-1)
	if err != nil {
		err = readFromError(w, err)
	}
	return written, err, handled
}

// readFromError wraps err as w's ReadFrom would have: io.Copy between two
// *net.TCPConn runs the destination's ReadFrom inside the source's WriteTo,
// and each names its own connection.
func readFromError(w io.Writer, err error) error {
	if c, ok := w.(*Conn); ok {
		return c.fd.opError("readfrom", err)
	}
	e := &net.OpError{Op: "readfrom", Err: err}
	if nc, ok := w.(net.Conn); ok {
		if la := nc.LocalAddr(); la != nil {
			e.Net, e.Source = la.Network(), la
		}
		if ra := nc.RemoteAddr(); ra != nil {
			e.Addr = ra
		}
	}
	return e
}

// spliceCopy moves up to remain bytes from src to dst, until src reads
// EOF. It starts as a copy through a 32 KiB buffer (recv, then send: what a
// request/response stream needs, with no pipe held while it idles); a recv
// that fills the buffer means bulk data, and the copy switches to splice(2)
// through a pipe (src -> pipe, at most 1 MiB, then pipe -> dst until the
// pipe is empty), moving the bytes without copying them to user space. The
// pipe is closed again as soon as src has nothing to read, so an idle
// io.Copy(c, c) holds no descriptor beyond its sockets. handled is always
// true: both ends are stream sockets, which every kernel can copy.
func spliceCopy(dst, src rawEnd, remain int64) (written int64, handled bool, err error) {
	unlockR := src.lockRead()
	defer unlockR()
	unlockW := dst.lockWrite()
	defer unlockW()
	p := [2]int{-1, -1}
	closePipe := func() {
		if p[0] >= 0 {
			unix.Close(p[0])
			unix.Close(p[1])
			p = [2]int{-1, -1}
		}
	}
	defer closePipe()
	var buf []byte
	for remain > 0 {
		if p[0] < 0 {
			if buf == nil {
				buf = make([]byte, spliceBufSize)
			}
			b := buf[:min(int64(len(buf)), remain)]
			n, err := copyChunk(dst, src, b)
			written += int64(n)
			remain -= int64(n)
			if err != nil || n == 0 {
				return written, true, err
			}
			if n == len(buf) && unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK) == nil {
				unix.FcntlInt(uintptr(p[0]), unix.F_SETPIPE_SZ, maxSpliceSize) // best effort; a smaller pipe takes less per splice
			}
			continue
		}
		n, idle, err := spliceChunk(dst, src, p, int(min(remain, maxSpliceSize)))
		written += int64(n)
		remain -= int64(n)
		if err != nil {
			// Bytes left in the pipe are lost with it, as with a Write
			// that fails part way.
			return written, true, err
		}
		if idle {
			closePipe() // back to the buffer, which waits for src
			continue
		}
		if n == 0 {
			return written, true, nil // EOF
		}
	}
	return written, true, nil
}

// spliceBufSize is the buffer of spliceCopy's buffered phase (bytes), as
// io.Copy's; a recv that fills it switches the copy to splice.
const spliceBufSize = 32 << 10

// copyChunk receives once into b (waiting for src if it has nothing) and
// sends all of it to dst. n == 0 with a nil error is src's EOF. Its
// errors name the syscall "splice", as every error of the copy does (Go's
// splice path and the documented contract): the buffered phase is how the
// copy splices, not a different operation.
func copyChunk(dst, src rawEnd, b []byte) (int, error) {
	var n int
	var serr syscall.Errno
	waited := false
	err := src.rawRead(func(fd int) rawResult {
		m, e := rawRecv(fd, b)
		switch e {
		case syscall.EINTR:
			return rawMore
		case syscall.EAGAIN:
			waited = true
			return rawWait
		}
		n, serr = m, e
		return rawDone
	})
	if err == nil && serr != 0 {
		err = sysError("splice", serr)
	}
	if err != nil || n == 0 {
		return 0, err
	}
	src.doneRead(int64(n), waited)
	sent := 0
	waited = false
	err = dst.rawWrite(func(fd int) rawResult {
		m, e := rawSend(fd, b[sent:n])
		sent += m
		switch {
		case e == syscall.EAGAIN:
			waited = true
			return rawWait
		case e == syscall.EINTR || (e == 0 && sent < n):
			return rawMore
		case e != 0:
			serr = e
		}
		return rawDone
	})
	dst.doneWrite(int64(sent), waited)
	if err == nil && serr != 0 {
		err = sysError("splice", serr)
	}
	return sent, err
}

// spliceChunk splices up to max bytes from src into the empty pipe p, then
// all of them from the pipe to dst. idle reports that src had nothing to
// read (nothing moved); n == 0 otherwise is src's EOF.
func spliceChunk(dst, src rawEnd, p [2]int, max int) (n int, idle bool, err error) {
	var inPipe int
	var serr syscall.Errno
	err = src.rawRead(func(fd int) rawResult {
		m, e := rawSplice(fd, p[1], max)
		switch e {
		case syscall.EINTR:
			return rawMore
		case syscall.EAGAIN:
			idle = true
			return rawDone
		}
		inPipe, serr = m, e
		return rawDone
	})
	if err == nil && serr != 0 {
		err = sysError("splice", serr)
	}
	if err != nil || idle || inPipe == 0 {
		return 0, idle, err
	}
	src.doneRead(int64(inPipe), false)
	waited := false
	err = dst.rawWrite(func(fd int) rawResult {
		m, e := rawSplice(p[0], fd, inPipe-n)
		n += m
		switch {
		case e == syscall.EAGAIN:
			waited = true
			return rawWait
		case e == syscall.EINTR || (e == 0 && m > 0 && n < inPipe):
			return rawMore // a short splice: more of the pipe to move
		case e != 0:
			serr = e
		}
		return rawDone
	})
	dst.doneWrite(int64(n), waited)
	if err == nil && serr != 0 {
		err = sysError("splice", serr)
	}
	return n, false, err
}

// rawSplice is one nonblocking splice(2) between a socket and a pipe (both
// nonblocking, so it never blocks and skips the scheduler's hand-off).
func rawSplice(in, out, n int) (int, syscall.Errno) {
	r, _, e := syscall.RawSyscall6(unix.SYS_SPLICE, uintptr(in), 0, uintptr(out), 0, uintptr(n), spliceFlags)
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}
