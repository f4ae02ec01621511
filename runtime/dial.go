package uringrt

import (
	"context"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Dial connects to address, like net.Dial, for "tcp", "tcp4", "tcp6" and
// "unix". See DialContext.
func (rt *Runtime) Dial(network, address string) (net.Conn, error) {
	return rt.DialContext(context.Background(), network, address)
}

// DialContext connects to address on the named network. The connect is
// tried nonblocking and its completion awaited by a poll through the loop;
// ctx bounds name resolution and the connect. Errors are *net.OpError with
// Op "dial", wrapping e.g. *os.SyscallError{"connect", ECONNREFUSED}, or
// ctx's error.
func (rt *Runtime) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return rt.dial(ctx, nil, network, address)
}

// dial is DialContext with a Dialer's options (d nil: the zero Dialer).
func (rt *Runtime) dial(ctx context.Context, d *Dialer, network, address string) (net.Conn, error) {
	// A context cancelled before the call is caught per address in
	// dialAddrs (with the address in the error, as Go's net words it):
	// resolving an IP literal or connecting a unix socket never blocks, so
	// nothing else would notice it.
	if isUDP(network) {
		return rt.dialUDPContext(ctx, d, network, address) // udp_options.go: a *PacketConn
	}
	if rt.backend == BackendStd {
		c, err := d.std().DialContext(ctx, network, address)
		if err != nil {
			return nil, err
		}
		return rt.trackStd(c), nil
	}
	addrs, err := rt.resolve(ctx, network, address)
	if err != nil {
		return nil, err
	}
	c, err := rt.dialRace(ctx, d, network, addrs) // dial_race.go
	if err != nil {
		return nil, err
	}
	return c, nil
}

// resolve turns address into the addresses to try, as net.Dial would.
func (rt *Runtime) resolve(ctx context.Context, network, address string) ([]net.Addr, error) {
	var addrs []net.Addr
	switch network {
	case "tcp", "tcp4", "tcp6":
		host, port, err := net.SplitHostPort(address)
		if err != nil {
			return nil, &net.OpError{Op: "dial", Net: network, Err: err}
		}
		ips, err := net.DefaultResolver.LookupNetIP(ctx, ipNetwork(network), hostOrLocal(host))
		if err != nil {
			return nil, &net.OpError{Op: "dial", Net: network, Err: err}
		}
		p, err := net.DefaultResolver.LookupPort(ctx, network, port)
		if err != nil {
			return nil, &net.OpError{Op: "dial", Net: network, Err: err}
		}
		for _, ip := range ips {
			addrs = append(addrs, &net.TCPAddr{IP: ip.AsSlice(), Port: p, Zone: ip.Zone()})
		}
	case "unix":
		addrs = []net.Addr{&net.UnixAddr{Name: address, Net: "unix"}}
	default:
		return nil, &net.OpError{Op: "dial", Net: network, Err: net.UnknownNetworkError(network)}
	}
	return addrs, nil
}

// dialAddrs tries addrs in order; start arms the net.Conn read path.
func (rt *Runtime) dialAddrs(ctx context.Context, d *Dialer, network string, addrs []net.Addr, start bool) (*Conn, error) {
	var first error
	for _, a := range addrs {
		// Checked before each address, as Go's net does: resolving an IP
		// literal or connecting a unix socket never blocks, so nothing
		// later would notice a context cancelled before the call.
		if err := ctx.Err(); err != nil {
			return nil, &net.OpError{Op: "dial", Net: network, Addr: a, Err: mapCtxErr(err)}
		}
		c, err := rt.dialOne(ctx, d, network, a, start)
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, first
}

func ipNetwork(network string) string {
	switch network {
	case "tcp4":
		return "ip4"
	case "tcp6":
		return "ip6"
	}
	return "ip"
}

func hostOrLocal(h string) string {
	if h == "" {
		return "localhost"
	}
	return h
}

func (rt *Runtime) dialOne(ctx context.Context, d *Dialer, network string, a net.Addr, start bool) (*Conn, error) {
	var sa unix.Sockaddr
	family := unix.AF_UNIX
	switch a := a.(type) {
	case *net.TCPAddr:
		if ip4 := a.IP.To4(); ip4 != nil {
			family = unix.AF_INET
			s := &unix.SockaddrInet4{Port: a.Port}
			copy(s.Addr[:], ip4)
			sa = s
		} else {
			family = unix.AF_INET6
			s := &unix.SockaddrInet6{Port: a.Port}
			copy(s.Addr[:], a.IP.To16())
			if a.Zone != "" {
				if ifi, err := net.InterfaceByName(a.Zone); err == nil {
					s.ZoneId = uint32(ifi.Index)
				}
			}
			sa = s
		}
	case *net.UnixAddr:
		sa = &unix.SockaddrUnix{Name: a.Name}
	}
	opErr := func(err error) error { return &net.OpError{Op: "dial", Net: network, Addr: a, Err: err} }
	fd, err := d.socket(family) // dialer.go
	if err != nil {
		return nil, opErr(err)
	}
	if err := d.prepare(ctx, fd, family, network, a); err != nil { // Control, NODELAY, keep-alive, bind
		unix.Close(fd)
		return nil, opErr(err)
	}
	l := rt.pickConnLoop()
	c := newNetConn(rt, l, fd, family, network)
	n := c.fd
	n.dialed = true
	n.plainTCP = plainDial(d, family)
	n.remot = a
	rt.track(n)
	err = unix.Connect(fd, sa)
	if err == unix.EINPROGRESS || err == unix.EAGAIN || err == unix.EINTR {
		err = rt.waitConnect(ctx, n)
	}
	if err == nil && ctx.Err() != nil {
		// Cancelled while connecting (a unix connect completes at once):
		// a dial whose context ended fails, as Go's net does.
		err = ctx.Err()
	}
	if err != nil {
		n.close()
		if ctx.Err() != nil {
			return nil, opErr(mapCtxErr(ctx.Err()))
		}
		if errno, ok := err.(syscall.Errno); ok {
			return nil, opErr(os.NewSyscallError("connect", errno))
		}
		return nil, opErr(err)
	}
	n.captureLocal()
	if start {
		n.startConn()
	}
	return c, nil
}

// waitConnect parks until the nonblocking connect completes (POLLOUT via
// the loop), then reads SO_ERROR.
func (rt *Runtime) waitConnect(ctx context.Context, n *netFD) error {
	if d, ok := ctx.Deadline(); ok {
		n.wdl.set(d, func() { n.wr.interrupt() })
	}
	stop := context.AfterFunc(ctx, func() { n.wdl.expired.Store(true); n.wr.interrupt() })
	defer stop()
	defer n.wdl.set(timeZero, nil)
	for {
		n.waitWrite()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if n.wdl.expired.Load() {
			return os.ErrDeadlineExceeded
		}
		v, err := unix.GetsockoptInt(n.fd, unix.SOL_SOCKET, unix.SO_ERROR)
		if err != nil {
			return err
		}
		switch syscall.Errno(v) {
		case 0:
			return nil
		case syscall.EINPROGRESS, syscall.EALREADY, syscall.EINTR:
			continue
		}
		return syscall.Errno(v)
	}
}

// DialCallback connects like DialContext and then serves the connection
// with h through the callback API, as Serve does for accepted connections:
// multishot recv into the loop's provided buffer ring, OnOpen, OnData and
// OnClose on the loop, Write queued and sent in batches. OnOpen may run
// before DialCallback returns. Errors are DialContext's. With BackendStd a
// goroutine reads the connection and calls h.
func (rt *Runtime) DialCallback(ctx context.Context, network, address string, h Handler) (*CallbackConn, error) {
	if rt.backend == BackendStd {
		c, err := rt.DialContext(ctx, network, address)
		if err != nil {
			return nil, err
		}
		cc := &CallbackConn{std: c, h: h}
		cc.stdInit()
		go rt.runStdCallback(cc)
		return cc, nil
	}
	addrs, err := rt.resolve(ctx, network, address)
	if err != nil {
		return nil, err
	}
	c, err := rt.dialAddrs(ctx, nil, network, addrs, false)
	if err != nil {
		return nil, err
	}
	n := c.fd
	n.cb = true
	cc := newCallbackConn(n, h)
	n.l.post(request{kind: reqRegisterCB, cc: cc})
	return cc, nil
}
