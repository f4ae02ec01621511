package uringrt

import (
	"io"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// sendFile copies from a file (r: an *os.File or a value wrapping one that
// implements syscall.Conn and is no net.Conn) with sendfile(2): up to
// remain bytes, or to the file's end when remain is 0.
func (c *Conn) sendFile(r io.Reader, remain int64) (written int64, err error, handled bool) {
	if _, isConn := r.(net.Conn); isConn {
		return 0, nil, false
	}
	f, ok := r.(syscall.Conn)
	if !ok {
		return 0, nil, false
	}
	sc, err := f.SyscallConn()
	if err != nil {
		return 0, nil, false
	}
	var werr error
	err = sc.Read(func(src uintptr) bool {
		written, werr, handled = c.fd.sendFileFrom(int(src), remain)
		return true
	})
	if err == nil {
		err = werr
	}
	return written, err, handled
}

// sendFileFrom sends from file descriptor src, holding c's write lock.
func (fd *netFD) sendFileFrom(src int, remain int64) (written int64, err error, handled bool) {
	fd.wmu.Lock()
	defer fd.wmu.Unlock()
	var serr syscall.Errno
	waited := false
	err = fd.rawWrite(func(dst int) rawResult {
		chunk := int64(maxSendfileChunk)
		if remain > 0 {
			chunk = min(remain-written, chunk)
		}
		// A file read may block on the disk: Syscall, not RawSyscall.
		n, _, e := syscall.Syscall6(unix.SYS_SENDFILE, uintptr(dst), uintptr(src), 0, uintptr(chunk), 0, 0)
		if e == 0 && int64(n) > 0 {
			written += int64(n)
		}
		done := remain > 0 && written >= remain
		switch e {
		case 0:
			if n == 0 || done {
				return rawDone
			}
			return rawMore
		case syscall.EAGAIN:
			if done {
				return rawDone
			}
			waited = true
			return rawWait
		case syscall.EINTR:
			return rawMore
		}
		serr = e
		return rawDone
	})
	fd.l.countWrite(int(written), waited)
	if err != nil {
		return written, err, true
	}
	switch serr {
	case 0:
		return written, nil, true
	case syscall.ENOSYS, syscall.EINVAL, syscall.EOPNOTSUPP: // EOPNOTSUPP == ENOTSUP on Linux
		// No sendfile for these descriptors: nothing moved yet means
		// the caller can still copy generically.
		return written, sysError("sendfile", serr), written > 0
	}
	return written, sysError("sendfile", serr), true
}
