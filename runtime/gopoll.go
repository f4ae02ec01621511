package uringrt

import (
	"runtime"
	_ "unsafe" // go:linkname
)

// Readiness from Go's own netpoller: a net.Conn whose readers park in the
// runtime's netpoll (epoll), as Go's net does, so that the thread that
// finds the socket readable runs the reader, with no loop goroutine woken
// between. The socket is registered once (epoll_ctl ADD, edge-triggered)
// when a reader first has to wait (a connection whose reads never wait is
// never registered) and removed before its close(2).
//
// The runtime's netpoll entry points are reached as Go's internal/poll
// reaches them; they are pushed there by the runtime under these names.

//go:linkname runtime_pollServerInit internal/poll.runtime_pollServerInit
func runtime_pollServerInit()

//go:linkname runtime_pollOpen internal/poll.runtime_pollOpen
func runtime_pollOpen(fd uintptr) (uintptr, int)

//go:linkname runtime_pollClose internal/poll.runtime_pollClose
func runtime_pollClose(ctx uintptr)

//go:linkname runtime_pollReset internal/poll.runtime_pollReset
func runtime_pollReset(ctx uintptr, mode int) int

//go:linkname runtime_pollWait internal/poll.runtime_pollWait
func runtime_pollWait(ctx uintptr, mode int) int

//go:linkname runtime_pollSetDeadline internal/poll.runtime_pollSetDeadline
func runtime_pollSetDeadline(ctx uintptr, d int64, mode int)

//go:linkname runtime_pollUnblock internal/poll.runtime_pollUnblock
func runtime_pollUnblock(ctx uintptr)

// runtime_pollWait's results (runtime/netpoll.go).
const (
	pollNoError    = 0
	pollErrClosing = 1
	pollErrTimeout = 2
)

// goPollOpen registers the socket with Go's netpoller; false if it could
// not be (the caller then arms the loop's poll).
func (n *netFD) goPollOpen() bool {
	runtime_pollServerInit() // idempotent
	ctx, errno := runtime_pollOpen(uintptr(n.fd))
	if errno != 0 {
		return false
	}
	n.gp.Store(ctx)
	return true
}

// goPollMode reports whether the readers wait in Go's netpoller (the
// socket registered there, or to be at the first wait).
func (n *netFD) goPollMode() bool {
	return n.gpLazy.Load() || n.gp.Load() != 0 // gpLazy first: it is cleared after gp is set
}

// goPollLazyOpen registers the socket with Go's netpoller for a reader
// (under rmu) that found EAGAIN, the first to wait; false if fd is
// closing. It holds a reference meanwhile, so Close, which removes the
// entry once no reference is left, sees it. The reader then waits with no
// reset: the entry is new, and epoll_ctl ADD reports the readiness the
// socket already has (bytes that came after the EAGAIN), so nothing is
// missed. If the socket cannot be registered, its readers wait on the
// loop's multishot POLLIN instead.
func (n *netFD) goPollLazyOpen() bool {
	if !n.incref() {
		return false
	}
	defer n.decref()
	if n.gpLazy.Load() {
		if !n.goPollOpen() {
			n.start(n.rt.pol.pollsForLife())
		}
		n.gpLazy.Store(false)
	}
	return true
}

// goPollEnter marks a goroutine as about to use the netpoll entry; false
// when the fd is closing (its entry may be gone). goPollExit ends it.
// Close unblocks the entry, then waits for no user before removing it.
func (n *netFD) goPollEnter() bool {
	n.gpUsers.Add(1)
	if n.closing.Load() {
		n.gpUsers.Add(-1)
		return false
	}
	return true
}

func (n *netFD) goPollExit() { n.gpUsers.Add(-1) }

// goPollWaitRead parks a reader that found EAGAIN in Go's netpoller until
// the socket is readable (or was since the last wait), Close, or the read
// deadline passes; the caller re-checks why. A deadline that passed sets
// the netpoller's copy expired (goPollExpire), which stays until reset:
// one moved or cleared since (net/http clears the one that stopped its
// background read before the next request) is reset here, and the wait
// goes on, re-checking the deadline first in case it passed again.
func (n *netFD) goPollWaitRead() {
	if !n.goPollEnter() {
		return
	}
	for !n.abortRead() && runtime_pollWait(n.gp.Load(), 'r') == pollErrTimeout && !n.rdl.expired.Load() {
		runtime_pollSetDeadline(n.gp.Load(), 0, 'r')
	}
	n.goPollExit()
}

// goPollReset forgets readiness reported before a recv that is about to
// be tried (as Go's net does before each read): without it, the event of
// bytes an earlier recv took would end the next wait at once, for a recv
// that finds nothing. The caller holds a reference (incref), so Close has
// not removed the entry.
func (n *netFD) goPollReset() {
	runtime_pollReset(n.gp.Load(), 'r')
}

// goPollExpire wakes a reader parked in the netpoller when the read
// deadline passed.
func (n *netFD) goPollExpire() {
	if n.goPollEnter() {
		runtime_pollSetDeadline(n.gp.Load(), -1, 'r')
		n.goPollExit()
	}
}

// goPollClose unblocks the entry's waiters and removes it (epoll_ctl DEL)
// once none is left; called by Close after marking the fd closing.
func (n *netFD) goPollClose() {
	runtime_pollUnblock(n.gp.Load())
	for n.gpUsers.Load() != 0 {
		runtime.Gosched()
	}
	runtime_pollClose(n.gp.Load())
}
