package uringrt

import (
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Go's net defaults for TCP keep-alive (those of Go 1.26), applied to
// every accepted and dialed TCP connection unless disabled.
const (
	// DefaultKeepAliveIdle is the idle time before the first keep-alive
	// probe (TCP_KEEPIDLE), as Go's net.
	DefaultKeepAliveIdle = 15 * time.Second
	// DefaultKeepAliveInterval is the time between keep-alive probes
	// (TCP_KEEPINTVL), as Go's net.
	DefaultKeepAliveInterval = 15 * time.Second
	// DefaultKeepAliveCount is the number of unanswered probes before the
	// connection is dropped (TCP_KEEPCNT), as Go's net.
	DefaultKeepAliveCount = 9
)

// Linux's MPTCP constants (include/uapi/linux/in.h, mptcp.h).
const (
	ipprotoMPTCP = 0x106 // IPPROTO_MPTCP, 5.6+
	solMPTCP     = 0x11c // SOL_MPTCP, 5.16+
	mptcpInfo    = 1     // MPTCP_INFO
)

// keepAliveOpts is what a ListenConfig or Dialer says about keep-alive,
// with the meaning of net.ListenConfig's and net.Dialer's fields: a
// KeepAliveConfig with Enable wins; otherwise KeepAlive >= 0 enables probes
// with that idle time (0: 15 s), KeepAlive < 0 leaves them off.
type keepAliveOpts struct {
	idle time.Duration
	cfg  net.KeepAliveConfig
}

// config returns the KeepAliveConfig to apply, and false when keep-alive
// stays off (net's newTCPConn does the same).
func (k keepAliveOpts) config() (net.KeepAliveConfig, bool) {
	if k.cfg.Enable {
		return k.cfg, true
	}
	if k.idle < 0 {
		return net.KeepAliveConfig{}, false
	}
	return net.KeepAliveConfig{Enable: true, Idle: k.idle}, true
}

// initTCP prepares an accepted or dialed socket as Go's net does: TCP_NODELAY
// on, then keep-alive per k (errors ignored, as net does). Nothing for a
// unix socket.
func initTCP(fd, family int, k keepAliveOpts) {
	if family == unix.AF_UNIX {
		return
	}
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	if cfg, ok := k.config(); ok {
		setKeepAliveConfig(fd, cfg)
	}
}

// connLoop is the loop an accepted connection joins: the accepting loop
// for a ReusePort listening socket (no hand-off), else the next loop round
// robin (of the net.Conn loops for a net.Conn, pickConnLoop).
func (ln *listener) connLoop(callback bool) *loop {
	if ln.opts != nil && ln.opts.reuse {
		return ln.fd.l
	}
	if callback {
		return ln.rt.pickLoop()
	}
	return ln.rt.pickConnLoop()
}

// listenOpts is what a listener keeps of its ListenConfig.
type listenOpts struct {
	keepAlive keepAliveOpts
	reuse     bool // one of a ReusePort group: connections stay on its loop
}

func setKeepAlive(fd int, on bool) error {
	return setsockoptBool(fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE, on)
}

// setKeepAliveConfig is net.TCPConn.SetKeepAliveConfig on fd: zero fields
// mean Go's defaults, negative ones leave the kernel's value.
func setKeepAliveConfig(fd int, c net.KeepAliveConfig) error {
	if err := setKeepAlive(fd, c.Enable); err != nil {
		return err
	}
	if err := setKeepAliveSecs(fd, unix.TCP_KEEPIDLE, c.Idle, DefaultKeepAliveIdle); err != nil {
		return err
	}
	if err := setKeepAliveSecs(fd, unix.TCP_KEEPINTVL, c.Interval, DefaultKeepAliveInterval); err != nil {
		return err
	}
	n := c.Count
	if n == 0 {
		n = DefaultKeepAliveCount
	}
	if n < 0 {
		return nil
	}
	return setsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPCNT, n)
}

// setKeepAliveSecs sets opt to d rounded up to whole seconds (the kernel's
// unit); 0 means def, < 0 leaves it.
func setKeepAliveSecs(fd, opt int, d, def time.Duration) error {
	if d < 0 {
		return nil
	}
	return setsockoptInt(fd, unix.IPPROTO_TCP, opt, keepAliveSecs(d, def))
}

// keepAliveSecs is d (0: def) rounded up to whole seconds, the kernel's
// unit for TCP_KEEPIDLE and TCP_KEEPINTVL.
func keepAliveSecs(d, def time.Duration) int {
	if d == 0 {
		d = def
	}
	return int((d + time.Second - 1) / time.Second)
}

func setsockoptBool(fd, level, opt int, on bool) error {
	v := 0
	if on {
		v = 1
	}
	return setsockoptInt(fd, level, opt, v)
}

func setsockoptInt(fd, level, opt, v int) error {
	if err := unix.SetsockoptInt(fd, level, opt, v); err != nil {
		return sysError("setsockopt", err.(syscall.Errno))
	}
	return nil
}

// usingMPTCP reports whether fd is an MPTCP socket that has not fallen
// back to TCP (net's isUsingMultipathTCP): on 5.16+ MPTCP_INFO answers,
// before that the socket's protocol is all there is to go by.
func usingMPTCP(fd int) bool {
	if proto, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PROTOCOL); proto != ipprotoMPTCP {
		return false
	}
	_, err := unix.GetsockoptInt(fd, solMPTCP, mptcpInfo)
	return err != unix.EOPNOTSUPP && err != unix.ENOPROTOOPT
}

// control runs f on the socket unless it is closing, as the option setters
// of *net.TCPConn do; errors are *net.OpError with Op "set".
func (fd *netFD) control(f func(int) error) error {
	if !fd.incref() {
		return fd.opError("set", net.ErrClosed)
	}
	defer fd.decref()
	return fd.opError("set", f(fd.fd))
}

// SetKeepAlive turns TCP keep-alive probes (SO_KEEPALIVE) on or off. They
// are on by default for accepted and dialed TCP connections, with Go's
// timing (DefaultKeepAliveIdle, DefaultKeepAliveInterval,
// DefaultKeepAliveCount), as net.Listen and net.Dial do. Errors are
// *net.OpError with Op "set" (net.ErrClosed after Close).
func (c *Conn) SetKeepAlive(keepalive bool) error {
	return c.fd.control(func(fd int) error { return setKeepAlive(fd, keepalive) })
}

// SetKeepAlivePeriod sets the idle time before the first keep-alive probe
// (TCP_KEEPIDLE, whole seconds rounded up; 0 means DefaultKeepAliveIdle,
// negative leaves it), as *net.TCPConn does.
func (c *Conn) SetKeepAlivePeriod(d time.Duration) error {
	return c.fd.control(func(fd int) error {
		return setKeepAliveSecs(fd, unix.TCP_KEEPIDLE, d, DefaultKeepAliveIdle)
	})
}

// SetKeepAliveConfig sets SO_KEEPALIVE, TCP_KEEPIDLE, TCP_KEEPINTVL and
// TCP_KEEPCNT from config as *net.TCPConn.SetKeepAliveConfig does: a zero
// Idle, Interval or Count means Go's default (15 s, 15 s, 9), a negative
// one leaves the kernel's value.
func (c *Conn) SetKeepAliveConfig(config net.KeepAliveConfig) error {
	return c.fd.control(func(fd int) error { return setKeepAliveConfig(fd, config) })
}

// MultipathTCP reports whether the connection uses MPTCP (asked for with
// Dialer.SetMultipathTCP or ListenConfig.SetMultipathTCP; needs Linux
// 5.6+, and 5.16+ to see a fallback to plain TCP). The error is
// net.ErrClosed after Close.
func (c *Conn) MultipathTCP() (bool, error) {
	fd := c.fd
	if !fd.incref() {
		return false, fd.opError("get", net.ErrClosed)
	}
	defer fd.decref()
	return usingMPTCP(fd.fd), nil
}

// tcpOpts is what *net.TCPConn has for keep-alive and MPTCP.
type tcpOpts interface {
	SetKeepAlive(bool) error
	SetKeepAlivePeriod(time.Duration) error
	SetKeepAliveConfig(net.KeepAliveConfig) error
	MultipathTCP() (bool, error)
}

func (c *stdConn) tcp(method string) (tcpOpts, error) {
	if t, ok := c.Conn.(tcpOpts); ok {
		return t, nil
	}
	return nil, errUnsupported(method, c.Conn)
}

// SetKeepAlive is the wrapped *net.TCPConn's.
func (c *stdConn) SetKeepAlive(on bool) error {
	t, err := c.tcp("SetKeepAlive")
	if err != nil {
		return err
	}
	return t.SetKeepAlive(on)
}

// SetKeepAlivePeriod is the wrapped *net.TCPConn's.
func (c *stdConn) SetKeepAlivePeriod(d time.Duration) error {
	t, err := c.tcp("SetKeepAlivePeriod")
	if err != nil {
		return err
	}
	return t.SetKeepAlivePeriod(d)
}

// SetKeepAliveConfig is the wrapped *net.TCPConn's.
func (c *stdConn) SetKeepAliveConfig(config net.KeepAliveConfig) error {
	t, err := c.tcp("SetKeepAliveConfig")
	if err != nil {
		return err
	}
	return t.SetKeepAliveConfig(config)
}

// MultipathTCP is the wrapped *net.TCPConn's.
func (c *stdConn) MultipathTCP() (bool, error) {
	t, err := c.tcp("MultipathTCP")
	if err != nil {
		return false, err
	}
	return t.MultipathTCP()
}

// SetNoDelay is the wrapped *net.TCPConn's.
func (c *stdConn) SetNoDelay(noDelay bool) error {
	if t, ok := c.Conn.(interface{ SetNoDelay(bool) error }); ok {
		return t.SetNoDelay(noDelay)
	}
	return errUnsupported("SetNoDelay", c.Conn)
}

// SetReadBuffer is the wrapped connection's (SO_RCVBUF, bytes).
func (c *stdConn) SetReadBuffer(bytes int) error {
	if t, ok := c.Conn.(interface{ SetReadBuffer(int) error }); ok {
		return t.SetReadBuffer(bytes)
	}
	return errUnsupported("SetReadBuffer", c.Conn)
}

// SetWriteBuffer is the wrapped connection's (SO_SNDBUF, bytes).
func (c *stdConn) SetWriteBuffer(bytes int) error {
	if t, ok := c.Conn.(interface{ SetWriteBuffer(int) error }); ok {
		return t.SetWriteBuffer(bytes)
	}
	return errUnsupported("SetWriteBuffer", c.Conn)
}

// SetLinger is the wrapped *net.TCPConn's.
func (c *stdConn) SetLinger(sec int) error {
	if t, ok := c.Conn.(interface{ SetLinger(int) error }); ok {
		return t.SetLinger(sec)
	}
	return errUnsupported("SetLinger", c.Conn)
}
