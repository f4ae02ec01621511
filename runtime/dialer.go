package uringrt

import (
	"context"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// defaultFallbackDelay is net.Dialer's Happy Eyeballs delay (RFC 6555).
const defaultFallbackDelay = 300 * time.Millisecond

// Dialer holds options for connecting, shaped like net.Dialer: the zero
// value dials as Dial does, through the default runtime, with Go's
// defaults (TCP_NODELAY, keep-alive probes after 15 s idle, every 15 s,
// 9 of them). Connections are made with a nonblocking connect(2) whose
// completion is awaited by a POLLOUT armed on a loop's ring. Networks:
// "tcp", "tcp4", "tcp6", "unix" (a *Conn), and "udp", "udp4", "udp6" (a
// connected *PacketConn; LocalAddr and Control apply).
type Dialer struct {
	// Runtime dials through this runtime; nil means Default().
	Runtime *Runtime

	// Timeout bounds a dial, name resolution included; 0 means none
	// (the operating system's connect timeout still applies).
	Timeout time.Duration
	// Deadline is an absolute time after which a dial fails; zero means
	// none. The earlier of Timeout and Deadline wins, as in net.Dialer.
	Deadline time.Time
	// LocalAddr is the local address to bind before connecting
	// (*net.TCPAddr or *net.UnixAddr); nil picks one. An IPv4 (IPv6)
	// LocalAddr restricts the dial to IPv4 (IPv6) peers.
	LocalAddr net.Addr
	// FallbackDelay is how long a "tcp" dial to a host with both IPv6 and
	// IPv4 addresses waits for the first family before racing the other
	// (Happy Eyeballs, RFC 6555); 0 means 300 ms, negative turns racing off.
	FallbackDelay time.Duration
	// KeepAlive is the keep-alive probes' idle time and interval; 0 means
	// Go's defaults (15 s), negative turns keep-alive off. Ignored when
	// KeepAliveConfig.Enable is true.
	KeepAlive time.Duration
	// KeepAliveConfig, when Enable is true, sets the keep-alive probes
	// (zero fields: Go's defaults; negative: the kernel's).
	KeepAliveConfig net.KeepAliveConfig
	// Control, if not nil, runs after the socket is created and before it
	// is bound or connected, with network "tcp4", "tcp6" or "unix" and the
	// peer's address; an error aborts that address's dial. The RawConn is
	// valid only during the call.
	Control func(network, address string, c syscall.RawConn) error
	// ControlContext is Control with the dial's context; it wins over
	// Control when both are set.
	ControlContext func(ctx context.Context, network, address string, c syscall.RawConn) error

	mptcp bool
}

// SetMultipathTCP asks for MPTCP (IPPROTO_MPTCP, Linux 5.6+) on "tcp"
// dials; where the kernel refuses it the dial falls back to TCP, as
// net.Dialer's does. Conn.MultipathTCP reports the outcome.
func (d *Dialer) SetMultipathTCP(use bool) { d.mptcp = use }

// MultipathTCP reports whether SetMultipathTCP(true) was called.
func (d *Dialer) MultipathTCP() bool { return d.mptcp }

// Dial connects to address on the named network; see DialContext.
func (d *Dialer) Dial(network, address string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, address)
}

// DialContext connects to address on the named network, as
// net.Dialer.DialContext: ctx (and Timeout, Deadline) bound name
// resolution and the connect; once connected, ctx no longer matters. The
// result is a *Conn (a *PacketConn for UDP; with BackendStd, Go's
// connection). Errors are
// *net.OpError with Op "dial": a cancelled ctx gives one that reads
// "operation was canceled" and satisfies errors.Is(err,
// context.Canceled); an expired one reads "i/o timeout", has Timeout()
// true and satisfies errors.Is(err, context.DeadlineExceeded); otherwise the cause, e.g. *os.SyscallError
// {"connect", ECONNREFUSED}. The Default() runtime's start error, if any,
// is returned as is.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	rt := d.Runtime
	if rt == nil {
		var err error
		if rt, err = Default(); err != nil {
			return nil, err
		}
	}
	if dl := d.deadline(time.Now()); !dl.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl)
		defer cancel()
	}
	return rt.dial(ctx, d, network, address)
}

func (d *Dialer) deadline(now time.Time) time.Time {
	dl := d.Deadline
	if d.Timeout > 0 {
		if t := now.Add(d.Timeout); dl.IsZero() || t.Before(dl) {
			dl = t
		}
	}
	return dl
}

// std is d as a net.Dialer, for BackendStd.
func (d *Dialer) std() *net.Dialer {
	nd := &net.Dialer{}
	if d != nil {
		nd.LocalAddr, nd.FallbackDelay = d.LocalAddr, d.FallbackDelay
		nd.KeepAlive, nd.KeepAliveConfig = d.KeepAlive, d.KeepAliveConfig
		nd.Control, nd.ControlContext = d.Control, d.ControlContext
		nd.SetMultipathTCP(d.mptcp)
	}
	return nd
}

// DialContext is (&Dialer{}).DialContext: a connection through the default
// runtime. It has the shape of http.Transport.DialContext, grpc's dialer
// and go-redis's and pgx's Dialer hooks, so one line moves a client onto
// io_uring.
func DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	var d Dialer
	return d.DialContext(ctx, network, address)
}

// socket creates the nonblocking stream socket for a dial of family: MPTCP
// when asked and the kernel has it, else TCP (or a unix socket).
func (d *Dialer) socket(family int) (int, error) {
	const flags = unix.SOCK_STREAM | unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC
	if d != nil && d.mptcp && family != unix.AF_UNIX {
		if fd, err := unix.Socket(family, flags, ipprotoMPTCP); err == nil {
			return fd, nil
		}
	}
	fd, err := unix.Socket(family, flags, 0)
	if err != nil {
		return -1, sysError("socket", err.(syscall.Errno))
	}
	return fd, nil
}

// prepare readies a dial's socket before connect(2) in net's order: the
// Control hook, TCP_NODELAY and keep-alive, then bind to LocalAddr.
func (d *Dialer) prepare(ctx context.Context, fd, family int, network string, raddr net.Addr) error {
	if d == nil {
		d = &Dialer{}
	}
	if d.ControlContext != nil || d.Control != nil {
		if err := d.control(ctx, fd, ctrlNetwork(network, family), raddr.String()); err != nil {
			return err
		}
	}
	initTCP(fd, family, keepAliveOpts{idle: d.KeepAlive, cfg: d.KeepAliveConfig})
	if d.LocalAddr == nil {
		return nil
	}
	sa, err := localSockaddr(d.LocalAddr, family)
	if err != nil {
		return err
	}
	if err := unix.Bind(fd, sa); err != nil {
		return sysError("bind", err.(syscall.Errno))
	}
	return nil
}

func (d *Dialer) control(ctx context.Context, fd int, network, address string) error {
	c := fdRawConn(fd)
	if d.ControlContext != nil {
		return d.ControlContext(ctx, network, address, c)
	}
	return d.Control(network, address, c)
}

// ctrlNetwork is the network name Control hooks see, as net's: "tcp4" or
// "tcp6" by the socket's family, or the network as given.
func ctrlNetwork(network string, family int) string {
	switch network {
	case "tcp", "tcp4", "tcp6":
		if family == unix.AF_INET {
			return "tcp4"
		}
		return "tcp6"
	}
	return network
}

// localSockaddr converts a Dialer's LocalAddr for a socket of family.
func localSockaddr(a net.Addr, family int) (unix.Sockaddr, error) {
	switch a := a.(type) {
	case *net.TCPAddr:
		switch family {
		case unix.AF_INET:
			s := &unix.SockaddrInet4{Port: a.Port}
			if a.IP != nil {
				ip4 := a.IP.To4()
				if ip4 == nil {
					return nil, &net.AddrError{Err: "non-IPv4 address", Addr: a.IP.String()}
				}
				copy(s.Addr[:], ip4)
			}
			return s, nil
		case unix.AF_INET6:
			s := &unix.SockaddrInet6{Port: a.Port}
			if a.IP != nil && !a.IP.Equal(net.IPv4zero) {
				copy(s.Addr[:], a.IP.To16())
			}
			if a.Zone != "" {
				if ifi, err := net.InterfaceByName(a.Zone); err == nil {
					s.ZoneId = uint32(ifi.Index)
				}
			}
			return s, nil
		}
	case *net.UnixAddr:
		if family == unix.AF_UNIX {
			return &unix.SockaddrUnix{Name: a.Name}, nil
		}
	}
	return nil, &net.AddrError{Err: "mismatched local address type", Addr: a.String()}
}

// filterLocal keeps the peers a dial bound to laddr can reach: an IPv4
// (IPv6) local address keeps the IPv4 (IPv6) peers, as net does.
func filterLocal(addrs []net.Addr, laddr net.Addr) []net.Addr {
	la, ok := laddr.(*net.TCPAddr)
	if !ok || la.IP == nil || la.IP.IsUnspecified() {
		return addrs
	}
	v4 := la.IP.To4() != nil
	var out []net.Addr
	for _, a := range addrs {
		if ta, ok := a.(*net.TCPAddr); ok && (ta.IP.To4() != nil) == v4 {
			out = append(out, a)
		}
	}
	return out
}

// fdRawConn is the syscall.RawConn a Control hook gets for a socket not
// yet driven by a loop: Control runs f on fd; Read and Write run f once
// (the socket is not connected yet, so there is nothing to wait for).
type fdRawConn int

func (c fdRawConn) Control(f func(fd uintptr)) error { f(uintptr(c)); return nil }
func (c fdRawConn) Read(f func(fd uintptr) bool) error {
	if !f(uintptr(c)) {
		return os.NewSyscallError("read", syscall.EAGAIN)
	}
	return nil
}
func (c fdRawConn) Write(f func(fd uintptr) bool) error {
	if !f(uintptr(c)) {
		return os.NewSyscallError("write", syscall.EAGAIN)
	}
	return nil
}
