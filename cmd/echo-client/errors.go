package main

import (
	"errors"
	"net"
	"os"
	"syscall"
)

// cause strips the operation wrappers of a network error down to what
// happened (for example "connection refused" or "i/o timeout").
func cause(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return os.ErrDeadlineExceeded
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errors.New("timed out")
	}
	return err
}
