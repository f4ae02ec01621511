package uringrt

import (
	"context"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// Listen announces on the local address, like net.Listen, for networks
// "tcp", "tcp4", "tcp6" and "unix". The socket is made by Go's net (address
// parsing, dual stack, SO_REUSEADDR) and then driven by this runtime's
// loops; with BackendStd it is Go's listener itself. Errors are
// *net.OpError as from net.Listen (EADDRINUSE, EACCES, ...).
func (rt *Runtime) Listen(network, address string) (net.Listener, error) {
	return rt.listen(context.Background(), nil, network, address) // listenconfig.go
}

// detachListener takes a nonblocking duplicate of gl's socket and closes
// gl (without unlinking a unix socket's file: the runtime's listener owns it).
func detachListener(gl net.Listener) (fd, family int, unlink string, err error) {
	var f *os.File
	switch l := gl.(type) {
	case *net.TCPListener:
		f, err = l.File()
		family = unix.AF_INET6
		if a, ok := l.Addr().(*net.TCPAddr); ok && a.IP.To4() != nil {
			family = unix.AF_INET
		}
	case *net.UnixListener:
		l.SetUnlinkOnClose(false)
		if name := l.Addr().String(); !isAbstractUnix(name) {
			unlink = name
		}
		f, err = l.File()
		family = unix.AF_UNIX
	default:
		err = fmt.Errorf("unexpected listener %T", gl)
	}
	gl.Close()
	if err != nil {
		return -1, 0, "", err
	}
	defer f.Close()
	fd, err = unix.Dup(int(f.Fd()))
	if err != nil {
		return -1, 0, "", os.NewSyscallError("dup", err)
	}
	unix.CloseOnExec(fd)
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return -1, 0, "", os.NewSyscallError("setnonblock", err)
	}
	return fd, family, unlink, nil
}

// isAbstractUnix reports whether name is a Linux abstract unix socket
// address ("@name"): it has no file, so Close unlinks nothing.
func isAbstractUnix(name string) bool { return len(name) > 0 && name[0] == '@' }
