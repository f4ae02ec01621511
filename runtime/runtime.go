package uringrt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/uringrt/uringrt/netpoll"
	"github.com/uringrt/uringrt/sched"
)

// errHandlerPanic closes a callback conn whose handler panicked.
var errHandlerPanic = errors.New("uringrt: handler panicked")

// Runtime is a set of event loops, each owning one io_uring ring, and the
// listeners and connections they drive. A loop is a goroutine that waits
// for its ring's completions in Go's netpoller; with Config.LockedLoops it
// is locked to an OS thread of its own and waits in io_uring_enter. Its
// methods are safe for concurrent use.
type Runtime struct {
	cfg        Config
	pol        pollable // cfg.Pollable's policy: how Conn.Read and Conn.Write wait
	logger     *slog.Logger
	backend    Backend // effective: BackendUring or BackendStd
	fallback   string  // why BackendAuto fell back to std
	features   netpoll.Features
	loops      []*loop
	next       atomic.Uint32
	connLoops  int         // net.Conns use the first connLoops loops (connLoopsFor)
	goPoll     bool        // net.Conn readers wait in Go's netpoller (gopoll.go)
	direct     bool        // callback writes off the loop may send directly (callback_direct.go)
	metrics    atomic.Bool // Config.Metrics, or EnableMetrics since
	useBufRing bool
	pool       sched.Pool
	newRing    func(netpoll.Params) (*netpoll.Ring, error) // test hook
	host       func() hostState                            // test hook: what diagnoses a failed setup

	mu        sync.Mutex
	conns     map[*netFD]struct{}
	counted   int // conns accepted or dialed (not listeners): Shutdown waits for them
	listeners map[closer]struct{}
	stdConns  map[net.Conn]struct{}
	closed    bool
	drained   chan struct{} // closed when conns drops to 0 during Shutdown
	// draining: Shutdown has given every net.Conn its read deadline; a
	// connection tracked after that gets one at once (track, trackStd)
	draining bool

	acceptErrs  sync.Map // errno name -> *atomic.Uint64
	panicLogged atomic.Bool
	panics      atomic.Uint64

	budget rtBudget      // budget.go
	kept   keptPool      // framing's kept-input buffers (callback_kept.go)
	idle   idleSweep     // idle.go
	inlMon inlineMonitor // callback_inline_monitor.go
}

type closer interface{ Close() error }

// New starts a runtime: it probes io_uring once and starts cfg.Loops loops
// (BackendUring/Auto), or none (BackendStd, or Auto without io_uring).
//
// With BackendUring it fails with an error wrapping ErrNoIOUring and the
// setup errno (EPERM under Docker's default seccomp profile or
// kernel.io_uring_disabled, ENOSYS on kernels without io_uring), naming the
// fix. With BackendAuto it logs that cause once as a warning and serves
// through Go's net. Running out of descriptors or memory while setting up
// the loops (EMFILE, ENFILE, ENOMEM) is no missing io_uring: with every
// Backend New fails with an error wrapping ErrSetupResources and the errno,
// and can be called again once they are back.
// A Config field that is
// neither zero (its default) nor in range fails with an error wrapping
// ErrConfig that names the field.
func New(cfg Config) (*Runtime, error) {
	return newRuntime(cfg, netpoll.New)
}

func newRuntime(cfg Config, newRing func(netpoll.Params) (*netpoll.Ring, error)) (*Runtime, error) {
	return newRuntimeWith(cfg, newRing, readHostState)
}

// newRuntimeWith is New with both test hooks: how rings are set up, and
// what the host shows when a setup fails (kernel release, io_uring
// sysctls, seccomp mode).
func newRuntimeWith(cfg Config, newRing func(netpoll.Params) (*netpoll.Ring, error), host func() hostState) (*Runtime, error) {
	if err := validate(&cfg); err != nil {
		return nil, err
	}
	defaultLoops := cfg.Loops == 0
	applyDefaults(&cfg)
	rt := &Runtime{
		cfg: cfg, pol: pollableFor(cfg.Pollable), logger: cfg.Logger, newRing: newRing, host: host,
		conns: make(map[*netFD]struct{}), listeners: make(map[closer]struct{}), stdConns: make(map[net.Conn]struct{}),
	}
	rt.metrics.Store(cfg.Metrics)
	rt.pool = sched.NewFixed(sched.Options{Workers: cfg.Workers, Name: "uringrt", OnPanic: func(v any, _ []byte) { rt.handlerPanic(v) }})
	rt.backend = BackendStd
	if cfg.Backend != BackendStd {
		if err := rt.startLoops(); err != nil {
			if cfg.Backend == BackendUring || errors.Is(err, ErrSetupResources) {
				rt.pool.Close(context.Background(), sched.CancelQueued)
				return nil, err
			}
			rt.fallback = err.Error()
			rt.logger.Warn("io_uring unavailable; serving through Go's net (backend std)", "cause", err)
		} else {
			rt.backend = BackendUring
			rt.connLoops = connLoopsFor(len(rt.loops), defaultLoops, runtime.GOMAXPROCS(0))
			rt.goPoll = netpollReadinessFor(cfg, runtime.GOMAXPROCS(0)) && rt.pol.pollsForLife()
			rt.direct = runtime.GOMAXPROCS(0) > 1
		}
	}
	if rt.backend == BackendStd {
		rt.features.Kernel = netpoll.KernelRelease() // for uringrt_backend_info
	}
	rt.startIdleSweep()
	return rt, nil
}

func (rt *Runtime) startLoops() error {
	f, err := probeWith(rt.newRing, rt.host)
	if err != nil {
		return err
	}
	rt.features = f
	rt.useBufRing = f.BufRing && !rt.cfg.DisableBufRing
	for i := 0; i < rt.cfg.Loops; i++ {
		l, err := startLoop(rt, i)
		if err != nil {
			rt.stopLoops()
			return setupFailure(fmt.Errorf("loop %d: %w", i, err), rt.host)
		}
		rt.loops = append(rt.loops, l)
	}
	return nil
}

// probeWith checks that a ring can be set up (through the test hook) and
// probes the kernel's features; a failure is diagnosed on host().
func probeWith(newRing func(netpoll.Params) (*netpoll.Ring, error), host func() hostState) (netpoll.Features, error) {
	r, err := newRing(netpoll.Params{Entries: 4})
	if err != nil {
		return netpoll.Features{Kernel: netpoll.KernelRelease()}, setupFailure(err, host)
	}
	r.Close()
	return netpoll.ProbeFeatures()
}

// Backend returns the backend in use: BackendUring, or BackendStd (asked
// for, or BackendAuto's fallback).
func (rt *Runtime) Backend() Backend { return rt.backend }

// FallbackReason returns why BackendAuto fell back to Go's net, or "".
func (rt *Runtime) FallbackReason() string { return rt.fallback }

// Features returns the io_uring features probed at New (zero with
// BackendStd).
func (rt *Runtime) Features() Features { return rt.features }

// Config returns the configuration in force, defaults filled in.
func (rt *Runtime) Config() Config { return rt.cfg }

func (rt *Runtime) pickLoop() *loop {
	return rt.loops[int(rt.next.Add(1)-1)%len(rt.loops)]
}

// pickConnLoop returns the loop of a new net.Conn (accepted or dialed):
// round robin over the first connLoops loops.
func (rt *Runtime) pickConnLoop() *loop {
	return rt.loops[int(rt.next.Add(1)-1)%rt.connLoops]
}

// connLoopsFor returns how many loops net.Conn connections use: one when
// the loop count is the default and GOMAXPROCS is at most 2, else every
// loop. A net.Conn loop only reports readiness, a few percent of a
// request's CPU; the handlers run in goroutines on every P. With a loop per
// P on two cores, each loop woke for half the connections, so its
// goroutine was scheduled twice as often for half the batch (BENCHMARKS.md,
// "net/http unpinned"). Past 2 cores nothing was measured, so nothing
// changes there; callback connections, whose handlers run on their loop,
// always use every loop.
func connLoopsFor(loops int, defaulted bool, procs int) int {
	if defaulted && procs <= 2 {
		return 1
	}
	return loops
}

// netpollReadinessFor reports whether net.Conn readers and Accept wait in
// Go's netpoller (gopoll.go) rather than on their loop's POLLIN: by
// default when GOMAXPROCS is 2 or more. With two Ps the loop goroutine
// woken between the socket's readiness and its reader costs a goroutine
// switch per batch, a batch of one or two readers at partial load, which
// Go's netpoller, readying the reader itself, does not pay: unpinned
// net/http (keep-alive, at a fixed rate and with Connection: close) and
// redcon cost 0.71-0.93x the server CPU per request of the loop's POLLIN
// (BENCHMARKS.md, "The net.Conn drop-in against Go's net"). With one P the loop
// serves many keep-alive readers in one batch, which the netpoller does
// not match (1.13-1.18x pinned), so it stays there. LockedLoops, chosen
// for the ring's batching at a server's peak, keeps it there too: nothing
// was measured for readers in the netpoller beside locked loops.
func netpollReadinessFor(cfg Config, procs int) bool {
	switch {
	case cfg.LoopReadiness:
		return false
	case cfg.NetpollReadiness:
		return true
	}
	return procs >= 2 && !cfg.LockedLoops
}

func (rt *Runtime) track(n *netFD) {
	n.idle.active.Store(true) // a new connection starts its idle time now
	rt.mu.Lock()
	rt.conns[n] = struct{}{}
	if n.ln != nil || n.dialed {
		rt.counted++
	}
	late := rt.draining && !n.cb
	rt.mu.Unlock()
	if late {
		(&Conn{fd: n}).SetReadDeadline(time.Now()) // as Shutdown did to the others
	}
}

func (rt *Runtime) untrack(n *netFD) {
	rt.mu.Lock()
	if _, ok := rt.conns[n]; ok {
		delete(rt.conns, n)
		if n.ln != nil || n.dialed {
			rt.counted--
		}
		if n.ln != nil {
			n.ln.active.Add(-1)
			n.l.stats.closed.Add(1)
		}
	}
	if rt.drained != nil && rt.connCountLocked() == 0 {
		close(rt.drained)
		rt.drained = nil
	}
	rt.mu.Unlock()
}

// connCountLocked is the number of open connections (rt.mu held), O(1):
// every close asks it during Shutdown.
func (rt *Runtime) connCountLocked() int {
	return len(rt.stdConns) + rt.counted
}

func (rt *Runtime) handlerPanic(v any) {
	rt.panics.Add(1)
	if rt.panicLogged.CompareAndSwap(false, true) {
		rt.logger.Error("handler panicked; its connection is closed (logged once)", "panic", fmt.Sprint(v))
	}
}

func (rt *Runtime) countAcceptError(errno syscall.Errno) {
	if !rt.metrics.Load() {
		return
	}
	v, _ := rt.acceptErrs.LoadOrStore(errnoName(errno), new(atomic.Uint64))
	v.(*atomic.Uint64).Add(1)
}

// Serve runs the callback API on ln, a listener from this runtime's Listen:
// it accepts with a multishot accept on ln's loop and serves each
// connection with h (see Handler). It blocks until ln is closed or the
// runtime shuts down, then returns nil once ln's listening socket is
// closed, so that a server restarted at once can listen on the same port.
// With BackendStd it serves with a goroutine per connection. ln from
// elsewhere is an error.
func (rt *Runtime) Serve(ln net.Listener, h Handler) error {
	switch l := ln.(type) {
	case *listener:
		if l.rt != rt {
			return rt.errNotOurListener(ln)
		}
		l.serveMu.Lock()
		if l.closed {
			l.serveMu.Unlock()
			<-l.fd.closed // the socket's close(2): Close's
			return nil
		}
		if l.h != nil {
			l.serveMu.Unlock()
			return errors.New("uringrt: Serve: listener is already served")
		}
		l.h = h
		served := make(chan error)
		l.served = served
		l.serveMu.Unlock()
		l.fd.l.post(request{kind: reqServe, ln: l})
		<-served
		// The loop stopped accepting (Close, or the runtime's Close,
		// which closes every listener first); wait for the socket's
		// close(2), which Close makes once the accept's cancel is in.
		<-l.fd.closed
		return nil
	case *stdListener:
		if l.rt != rt {
			return rt.errNotOurListener(ln)
		}
		return rt.serveStd(l, h)
	case *reuseListener: // listen_reuse.go: a multishot accept per loop
		if l.rt != rt {
			return rt.errNotOurListener(ln)
		}
		return l.serve(rt, h)
	}
	return rt.errNotOurListener(ln)
}

// snapshotLocked copies the open listeners, connections and std
// connections (rt.mu held), so they can be closed without the lock.
func (rt *Runtime) snapshotLocked() ([]closer, []*netFD, []net.Conn) {
	lns := make([]closer, 0, len(rt.listeners))
	for ln := range rt.listeners {
		lns = append(lns, ln)
	}
	conns := make([]*netFD, 0, len(rt.conns))
	for fd := range rt.conns {
		conns = append(conns, fd)
	}
	stds := make([]net.Conn, 0, len(rt.stdConns))
	for c := range rt.stdConns {
		stds = append(stds, c)
	}
	return lns, conns, stds
}

func (rt *Runtime) stopLoops() {
	rt.stopIdleSweep()
	for _, l := range rt.loops {
		l.post(request{kind: reqStop})
	}
	for _, l := range rt.loops {
		<-l.done
	}
	rt.inlMon.close()
}
