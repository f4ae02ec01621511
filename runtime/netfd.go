package uringrt

import (
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// netFD is a socket driven by a loop: the shared state of a Conn and a
// listener. Readers and writers are serialized per direction (rmu, wmu), as
// in Go's internal/poll.FD.
type netFD struct {
	// What a Read or Write touches comes first, in one cache line: a
	// server with thousands of connections finds few of them in cache.
	fd int
	l  *loop
	rt *Runtime
	// The parking, deadline and op state of net.Conn and listener I/O;
	// nil for a callback conn, which its loop drives (so an idle one costs
	// less memory).
	*connIO
	closing atomic.Bool
	// rdHup: a poll CQE reported POLLRDHUP/POLLHUP/POLLERR. The end of
	// the stream posts no further CQE, so a short read no longer means
	// another CQE will come: Read must try recv again.
	rdHup    atomic.Bool
	refs     atomic.Int32 // goroutines inside a syscall or ring op on fd
	rmu, wmu sync.Mutex
	idle     fdIdle // Config.IdleTimeout's progress flag (idle.go)
	idleSeen int64  // the sweep that last found progress, unix ns (the sweeper's, under rt.mu)

	net    string
	family int
	// closed is closed once fd is closed (finalClose), for a Close or
	// the runtime's Close to wait on; nil for an accepted callback conn's
	// fd, which its loop closes and nothing waits on (so an idle one
	// costs less memory).
	closed chan struct{}

	ops         []*op // loop-owned: ops of this fd in flight
	closeQueued bool  // loop-owned: close(2) once ops is empty
	final       atomic.Bool
	// rawTouched: SetLinger, a RawConn's Control/Read/Write or File was
	// used, so Close must not shut the socket down early (shutClose): the
	// user may have set SO_LINGER or hold a duplicate of the socket.
	rawTouched atomic.Bool
	// plainTCP: known at creation to be a TCP (not MPTCP) socket whose
	// SO_LINGER is off (dialed with no Control hook, or accepted from a
	// listener checked once at Listen), so shutClose need not ask with
	// two getsockopt(2) per Close. False: it asks.
	plainTCP bool
	dialed   bool // from Dial: counted as a connection
	cb       bool // a callback conn: its loop closes it

	addrMu       sync.Mutex
	local, remot net.Addr
	unlinkPath   string // unix listener: socket file to remove at close
	ln           *listener
}

// connIO is the per-direction state a goroutine-driven fd needs; what a
// Read touches (rd, pollInIdle, rdDrained, rdl.expired) and a Write's
// deadline flag share its first cache line.
type connIO struct {
	rd         pollDesc
	pollInIdle atomic.Bool // pollIn's last CQE came: re-arm on the next EAGAIN
	// rdDrained (guarded by rmu): the last recv was short, so the next
	// Read waits for readiness before trying (hybrid policy).
	rdDrained bool
	rdl       deadline
	wdl       deadline
	wr        pollDesc

	pollInArmed atomic.Bool // pollIn was armed: by start, or by a RawConn.Read (rawconn.go)
	// xops: the socket's ring ops, made by the first that needs them
	// (ringOps). A connection whose readers wait in Go's netpoller and
	// whose writes never wait has none: half a KiB less per connection.
	xops atomic.Pointer[connOps]

	// gp is the socket's entry in Go's netpoller when its readers wait
	// there (gopoll.go), 0 otherwise; gpUsers counts the goroutines using
	// it, for Close.
	gp      atomic.Uintptr
	gpUsers atomic.Int32
	// gpLazy: the readers wait in Go's netpoller, and the socket is
	// registered there at the first wait (goPollLazyOpen), not when it
	// opens: a connection whose reads never wait (its bytes are there
	// each time it reads, as with many a short request-response
	// connection) costs no epoll_ctl ADD or DEL. Cleared after gp is
	// stored, so goPollMode reads it first.
	gpLazy atomic.Bool
	// ringUsed: an op of fd was posted to the loop (a writer's POLLOUT).
	// A socket in Go's netpoller with none is closed by Close itself.
	ringUsed atomic.Bool
}

// fdAlloc is a goroutine-driven socket's memory in one allocation: its
// netFD, the Conn that wraps it (unused by a listener) and the connIO the
// netFD points to. Three allocations per accepted connection were one
// more cost of each connection under churn than Go's net has.
//
// The netFD and the connIO each start a cache line (TestFdAllocLines): the
// allocation's size is a multiple of 64 bytes, so its size class places
// every object on a line boundary, and the padding puts connIO on the
// next; a Read's or Write's fields then take one line of each.
type fdAlloc struct {
	n  netFD
	c  Conn
	_  [(64 - (unsafe.Sizeof(netFD{})+unsafe.Sizeof(Conn{}))%64) % 64]byte
	io connIO
}

// newNetConn wraps fd for a net.Conn: the Conn and its netFD (c.fd).
func newNetConn(rt *Runtime, l *loop, fd, family int, network string) *Conn {
	return newNetFDAlloc(rt, l, fd, family, network)
}

// connOps are a goroutine-driven socket's ring ops.
type connOps struct {
	pollIn, pollOut op // hybrid mode: multishot POLLIN, one-shot POLLOUT
	rop, wop        op // ring/async modes: the recv/send in flight
}

// ringOps returns n's ring ops, making them at the first call (by any
// goroutine: one of racing makers wins).
func (n *netFD) ringOps() *connOps {
	if x := n.xops.Load(); x != nil {
		return x
	}
	x := &connOps{
		pollIn:  op{kind: opPollIn, fd: n.fd, nfd: n},
		pollOut: op{kind: opPollOut, fd: n.fd, nfd: n},
		rop:     op{kind: opRecv, fd: n.fd, nfd: n, expired: &n.rdl.expired},
		wop:     op{kind: opSend, fd: n.fd, nfd: n, expired: &n.wdl.expired},
	}
	if !n.rt.pol.pollsForLife() {
		// Only the ring and blocking policies wait on rop and wop
		// (cancelIO).
		x.rop.done = make(chan struct{}, 1)
		x.wop.done = make(chan struct{}, 1)
	}
	if n.xops.CompareAndSwap(nil, x) {
		return x
	}
	return n.xops.Load()
}

// newNetFD wraps fd for a listener or a PacketConn.
func newNetFD(rt *Runtime, l *loop, fd, family int, network string) *netFD {
	return newNetFDAlloc(rt, l, fd, family, network).fd
}

func newNetFDAlloc(rt *Runtime, l *loop, fd, family int, network string) *Conn {
	a := new(fdAlloc)
	n := &a.n
	*n = netFD{fd: fd, l: l, rt: rt, net: network, family: family}
	a.c.fd = n
	n.closed = make(chan struct{})
	n.connIO = &a.io
	n.rd.init()
	n.wr.init()
	if !rt.goPoll {
		n.ringOps() // its readers wait on the ring's POLLIN
	}
	return &a.c
}

// newBareNetFD wraps fd for an accepted callback conn: no connIO, no
// closed channel.
func newBareNetFD(rt *Runtime, l *loop, fd, family int, network string) *netFD {
	return &netFD{fd: fd, l: l, rt: rt, net: network, family: family}
}

// start arms the multishot POLLIN readers park on, for the socket's life:
// hybrid is true under experiment.PollHybrid and for listeners and PacketConns.
func (n *netFD) start(hybrid bool) {
	if hybrid {
		n.pollInArmed.Store(true)
		n.l.post(request{kind: reqArm, op: &n.ringOps().pollIn})
	}
}

// startConn starts an accepted or dialed connection: its readers wait in
// Go's netpoller (Runtime.goPoll; the socket is registered there by the
// first reader that has to wait) or on the loop's multishot POLLIN.
//
// It holds a reference while it starts the socket, so a Close racing with
// it (Runtime.Close closing every tracked connection while Accept or Dial
// is still starting this one) waits for it; a connection already closing
// is not started.
func (n *netFD) startConn() {
	if !n.incref() {
		return
	}
	defer n.decref()
	if n.rt.goPoll {
		n.gpLazy.Store(true) // registered at the first wait (goPollLazyOpen)
		return
	}
	n.start(n.rt.pol.pollsForLife())
}

// rearmPollIn re-arms pollIn when its last CQE came (single-shot polls, or
// a multishot the kernel ended); called by a reader that found EAGAIN,
// before it parks. A multishot poll still armed costs one atomic load.
func (n *netFD) rearmPollIn() {
	if n.pollInIdle.Load() && n.pollInIdle.CompareAndSwap(true, false) {
		n.l.post(request{kind: reqArm, op: &n.ringOps().pollIn})
	}
}

// waitRead parks a reader that found EAGAIN until pollIn's CQE, a
// deadline or Close wakes it (re-arming pollIn first if the kernel ended
// it); the caller re-checks Close and the deadline and tries again.
func (n *netFD) waitRead() {
	if n.gpLazy.Load() && !n.goPollLazyOpen() {
		return // closing: the caller sees it
	}
	if n.gp.Load() != 0 {
		n.goPollWaitRead()
		return
	}
	n.rearmPollIn()
	n.rd.wait(n.abortRead)
}

// waitWrite parks a writer that found EAGAIN (or a connect in progress) on
// a one-shot POLLOUT armed for it, until its CQE, a deadline or Close.
func (n *netFD) waitWrite() {
	n.ringUsed.Store(true)
	if n.goPollMode() && n.closing.Load() {
		return // Close may be closing fd itself (it saw no ring use)
	}
	n.l.post(request{kind: reqArm, op: &n.ringOps().pollOut})
	n.wr.wait(n.abortWrite)
}

func (n *netFD) abortRead() bool  { return n.closing.Load() || n.rdl.expired.Load() }
func (n *netFD) abortWrite() bool { return n.closing.Load() || n.wdl.expired.Load() }

// incref marks a goroutine as using fd; false when fd is closing.
func (n *netFD) incref() bool {
	n.refs.Add(1)
	if n.closing.Load() {
		n.refs.Add(-1)
		return false
	}
	return true
}

func (n *netFD) decref() { n.refs.Add(-1) }

// captureLocal records the local address once the socket is connected (or
// accepted): it stays valid for the connection's life and after Close,
// when the descriptor number may already name another socket.
func (n *netFD) captureLocal() {
	if sa, err := getsockname(n.fd); err == nil {
		n.local = sockaddrToAddr(n.net, sa)
	}
}

// laddr and raddr return the addresses captured when the connection was
// made (accept4 and connect give the peer's; getsockname the local one).
// A listener's local address is read lazily, while it is open.
func (n *netFD) laddr() net.Addr {
	n.addrMu.Lock()
	defer n.addrMu.Unlock()
	if n.local == nil && n.incref() {
		if sa, err := getsockname(n.fd); err == nil {
			n.local = sockaddrToAddr(n.net, sa)
		}
		n.decref()
	}
	return n.local
}

func (n *netFD) raddr() net.Addr {
	n.addrMu.Lock()
	defer n.addrMu.Unlock()
	return n.remot
}

func sockaddrToAddr(network string, sa unix.Sockaddr) net.Addr {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return newTCPAddr4(sa.Addr, sa.Port)
	case *unix.SockaddrInet6:
		a := newTCPAddr6(sa.Addr, sa.Port)
		if sa.ZoneId != 0 {
			if ifi, err := net.InterfaceByIndex(int(sa.ZoneId)); err == nil {
				a.Zone = ifi.Name
			}
		}
		return a
	case *unix.SockaddrUnix:
		return &net.UnixAddr{Name: sa.Name, Net: network}
	}
	return nil
}

// tcpAddrAlloc is a *net.TCPAddr and its IP's 16 bytes in one allocation
// (an accepted connection's remote address is made for each one).
type tcpAddrAlloc struct {
	a  net.TCPAddr
	ip [16]byte
}

// newTCPAddr4 is the TCP address of IPv4 ip and port, its IP in the
// 16-byte form (::ffff:a.b.c.d), as net.IPv4 makes it.
func newTCPAddr4(ip [4]byte, port int) *net.TCPAddr {
	t := new(tcpAddrAlloc)
	t.ip[10], t.ip[11] = 0xff, 0xff
	copy(t.ip[12:], ip[:])
	t.a.IP, t.a.Port = t.ip[:], port
	return &t.a
}

// newTCPAddr6 is the TCP address of IPv6 ip and port, with no zone.
func newTCPAddr6(ip [16]byte, port int) *net.TCPAddr {
	t := &tcpAddrAlloc{ip: ip}
	t.a.IP, t.a.Port = t.ip[:], port
	return &t.a
}

// rawRecv and rawSend are the nonblock tries: one recvfrom/sendto on a
// nonblocking socket, which never blocks, so they skip the scheduler's
// syscall hand-off. MSG_NOSIGNAL: a write to a reset peer fails with EPIPE
// and raises no SIGPIPE.
func rawRecv(fd int, b []byte) (int, syscall.Errno) {
	n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}

func rawSend(fd int, b []byte) (int, syscall.Errno) {
	n, _, e := syscall.RawSyscall6(syscall.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), unix.MSG_NOSIGNAL, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}

// tcp reports whether n is a TCP socket (by its family and network).
func (n *netFD) tcp() bool {
	return (n.family == unix.AF_INET || n.family == unix.AF_INET6) && strings.HasPrefix(n.net, "tcp")
}

// plainTCPNow reports whether n, a TCP socket, is plain TCP (not MPTCP)
// with SO_LINGER off: known at creation (plainTCP), else asked.
func (n *netFD) plainTCPNow() bool {
	if n.plainTCP && (n.ln == nil || !n.ln.fd.rawTouched.Load()) && !n.rawTouched.Load() {
		return true
	}
	return plainTCPSocket(n.fd, n.family)
}

// fdIdle is a net.Conn's progress flag; the sweep's own record is
// netFD.idleSeen (kept apart so that the flag fits in the fd's first line).
type fdIdle struct {
	active atomic.Bool // progress since the last sweep
}

// touch records read or write progress on a net.Conn.
func (n *netFD) touch() {
	if !n.idle.active.Load() {
		n.idle.active.Store(true)
	}
}
