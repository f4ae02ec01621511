package uringrt

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/uringrt/uringrt/runtime/experiment"
)

// Backend selects how sockets are driven.
type Backend int

const (
	// BackendAuto uses io_uring when a ring can be set up and otherwise Go's
	// net, logging one warning that names the cause and the fix, and
	// exporting uringrt_backend_info{backend="std"}.
	BackendAuto Backend = iota
	// BackendUring uses io_uring or fails New with the setup error (which
	// names the cause and the fix).
	BackendUring
	// BackendStd uses Go's net package: the same API, no ring.
	BackendStd
)

// String returns "auto", "uring" or "std".
func (b Backend) String() string {
	switch b {
	case BackendAuto:
		return "auto"
	case BackendUring:
		return "uring"
	case BackendStd:
		return "std"
	}
	return fmt.Sprintf("Backend(%d)", int(b))
}

// ParseBackend parses "auto", "uring" or "std".
func ParseBackend(s string) (Backend, error) {
	for _, b := range []Backend{BackendAuto, BackendUring, BackendStd} {
		if b.String() == s {
			return b, nil
		}
	}
	return 0, fmt.Errorf("unknown backend %q (want auto, uring or std)", s)
}

// Defaults used when a Config field is zero.
const (
	DefaultRingEntries    = 1024                  // SQEs per ring (the CQ holds 4x as many CQEs)
	DefaultWaitLatency    = 10 * time.Microsecond // latency batched waiting may add (BENCHMARKS.md)
	DefaultMaxWriteBuffer = 4 << 20               // bytes queued per connection
	DefaultWorkers        = 20                    // fixed-pool worker goroutines
	DefaultBufferSize     = 4096                  // bytes per provided buffer
	DefaultBuffers        = 1024                  // provided buffers per loop (a power of two)
	// DefaultMaxBufferedBytes caps all callback queues of a runtime
	// together (Config.MaxBufferedBytes), in bytes.
	DefaultMaxBufferedBytes = 256 << 20
	// DefaultCloseTimeout bounds a callback connection's graceful close
	// (Config.CloseTimeout): a peer that takes a full default queue
	// (MaxWriteBuffer, 4 MiB) at 420 KB/s or faster gets all of it.
	DefaultCloseTimeout = 10 * time.Second
	// With incrementally consumed buffers (Linux 6.12+) the defaults are
	// fewer, larger buffers, the same 4 MiB per loop: a recv of a stream
	// takes up to 32 KiB in one CQE, and small messages share a buffer.
	DefaultIncBufferSize = 32 << 10 // bytes per provided buffer
	DefaultIncBuffers    = 128      // provided buffers per loop
)

// Config configures a Runtime. The zero value is a working configuration.
// Fields come in three groups: the core (loops, backend, metrics, limits),
// tuning a loop, and experiment switches that reproduce the comparisons
// of BENCHMARKS.md and older kernels.
type Config struct {
	// Loops is the number of event loops (rings); 0 means GOMAXPROCS. More
	// than MaxLoops fails New with ErrConfig. Callback connections spread
	// over every loop, net.Conn connections too, except with Loops 0 and
	// GOMAXPROCS at most 2, where they all use one loop (a net.Conn's loop
	// only reports readiness; its goroutines run on every P).
	Loops int
	// Backend selects io_uring, Go's net, or auto (the default).
	Backend Backend
	// Metrics turns on the per-connection counters that Runtime.Stats
	// reads (bytes, pollable outcomes, accept errors, UDP datagrams) and
	// the loops' per-iteration ring counters; false means no counting
	// cost on the I/O paths (Runtime.EnableMetrics turns them on later).
	// Package runtime/uringprom exports Stats to Prometheus; its Register
	// turns them on.
	Metrics bool
	// Logger receives warnings (fallback to std, accept errors); nil means
	// slog.Default().
	Logger *slog.Logger
	// Workers is the size of the fixed worker pool that runs PollBlocking
	// operations and callback handlers that may block; 0 means
	// DefaultWorkers.
	Workers int
	// MaxWriteBuffer caps the bytes queued for sending per callback
	// connection; 0 means DefaultMaxWriteBuffer (4 MiB). A write past it
	// fails with ErrWriteBufferFull (a write into an empty queue always
	// fits). A connection stops being read while its own queue holds more
	// than half of it, at most 64 KiB, and each multishot recv arm is
	// limited to the room left under it, so a handler that writes what it
	// reads never reaches it (Linux 6.17+, which has the arm's byte limit;
	// before, a slow reader's overshoot can). It also caps a connection's unconsumed input
	// kept by framing (ErrInboundFull). net.Conn writes block instead.
	MaxWriteBuffer int
	// MaxBufferedBytes caps the bytes of queued output that all callback
	// connections of the runtime hold together (their queues' chunks); 0
	// means DefaultMaxBufferedBytes (256 MiB), -1 no cap. Every write
	// (Write, WriteNoCopy, AsyncWrite, from any caller) that would take the
	// queued and posted bytes past it fails with ErrWriteBufferFull
	// (uringrt_write_refusals_total{kind="runtime"}), whatever the
	// handler's replies weigh against its requests; only what an OnData
	// writes back of its own input (an echo) may pass it, and over half of
	// it each loop stops reading from its connections with the largest
	// queues first (uringrt_read_pauses_total{kind="runtime"}), reading
	// again as they drain, which bounds that: docs/RELIABILITY.md states
	// the overshoot.
	MaxBufferedBytes int64
	// MaxConns caps open connections per listener; connections over it are
	// closed at once and counted (uringrt_connections_rejected_total). 0
	// means no cap.
	MaxConns int
	// IdleTimeout closes a connection (either API, io_uring backend) that
	// made no read or write progress for that long: no byte received and
	// none sent. A callback connection's OnClose gets ErrIdleTimeout; a
	// net.Conn is closed as by Close (its blocked and later Reads and
	// Writes return net.ErrClosed). Connections are swept every
	// IdleTimeout/8 (a flag per connection, no timer per I/O), so one is
	// closed between IdleTimeout and 1.25 x IdleTimeout after its last
	// progress (later if the sweeps run late); counted in
	// uringrt_idle_closed_total{loop}. 0 (the default) means never; at
	// least 10ms.
	IdleTimeout time.Duration
	// CloseTimeout bounds a callback connection's graceful close (Close,
	// AsyncClose, Shutdown, or the peer's end of input while output is
	// queued): a close that has not sent the queued output this long after
	// it began resets the connection (SO_LINGER 0, so the peer sees a
	// reset, not an orderly end), drops the output and frees it; OnClose
	// gets ErrCloseTimeout; counted in
	// uringrt_connections_timed_out_total{kind="close"}. A peer that
	// never reads would otherwise hold the connection and its queue for
	// ever. It is a total, not a period without progress: a peer must take
	// the queue at MaxWriteBuffer/CloseTimeout or faster. 0 means
	// DefaultCloseTimeout (10 s); < 0 waits for ever. The wait for the
	// peer's FIN after the output is sent (CallbackConn.Close) ends by
	// CloseTimeout too. Both backends (BackendStd waits the same way,
	// letting the Write under way finish first).
	CloseTimeout time.Duration
	// ReusePort makes every TCP Listen of this runtime a ListenConfig
	// with ReusePort: a SO_REUSEPORT listening socket per loop, each loop
	// accepting (multishot under Serve) on its own and keeping what it
	// accepted, with no hand-off between loops. Default false: one
	// listening socket on loop 0, connections handed out round robin.
	ReusePort bool
	// UDPRecvMultishot makes each PacketConn receive through one multishot
	// IORING_OP_RECVMSG into a provided buffer ring of its own (16 buffers
	// of 66 KiB, mapped lazily; needs Linux 6.0+, and is not used with
	// DisableMultishot or DisableBufRing): datagrams arrive with their CQEs and a read copies one out
	// with no system call. Default false: reads are nonblock recvmsg(2)
	// tries, parking on the loop's poll on EAGAIN. With it, reading through
	// SyscallConn's Read (golang.org/x/net's batch reads, as quic-go does)
	// is unsupported, since the ring takes the datagrams.
	UDPRecvMultishot bool

	// Tuning a loop (README.md "Tuning a loop"): how a loop waits and
	// what it holds. The defaults suit most servers.

	// WaitLatency bounds the latency batched waiting may add: a loop waiting
	// for more than one CQE returns after this long with what it has. 0
	// means DefaultWaitLatency (10µs; 50µs cost the callback API 10 % of
	// its msgs/s at 100-1000 connections in closed loop: each under-filled
	// wait ran to the bound). Locked loops only (LockedLoops).
	WaitLatency time.Duration
	// IdlePoll is how long a loop with nothing to reap busy-polls its CQ,
	// the kernel's flags for pending task_work and overflowed CQEs
	// (IORING_SQ_TASKRUN, 5.19+; IORING_SQ_CQ_OVERFLOW) and its request
	// queue in user space, without a syscall, before it sleeps in
	// io_uring_enter; at most 1s. 0 (the default) never polls. Under
	// sustained load a polling loop never sleeps, so it pays no context
	// switch (and no wake-up latency) per batch; the price is up to
	// IdlePoll of CPU per idle gap, so a loop whose load arrives more often
	// than every IdlePoll keeps its core busy (Seastar's reactor and DPDK
	// make the same trade). A loop that found nothing for a whole wait (1 s)
	// sleeps again without polling. While a loop keeps finding work it
	// keeps its P: on a P it shares, other goroutines then run only when
	// Go preempts the loop, about every 10 ms, so give the process more Ps
	// than Loops if it runs other latency-sensitive goroutines. It suits the
	// callback API; a loop whose ring holds mostly polls of parked net.Conn
	// goroutines skips it (every batch there wakes goroutines and pays the
	// locked thread's P hand-off, and polling makes batches smaller).
	// Metric: uringrt_idle_polls_total{outcome}. Locked loops only
	// (LockedLoops).
	IdlePoll time.Duration
	// DedicatedLoops lets a loop keep its P (its slot in Go's scheduler)
	// while it waits for completions, for up to 1 ms per wait: the wait is
	// a raw system call (netpoll Ring.SubmitAndWaitHoldP), so Go's sysmon
	// does not hand the P to another thread when the wait passes its 20 µs
	// tick and the loop thread does not queue for a P when it wakes. That
	// hand-off is most of the context switches of a busy callback-API
	// server (BENCHMARKS.md). The price: other goroutines cannot
	// use that P meanwhile; Go's preemption (after 10 ms) and GC still
	// interrupt the wait. For a process that is mostly the server, with
	// GOMAXPROCS above Loops or with little else to run. After a wait that
	// found nothing the loop waits normally. Like IdlePoll, a loop whose
	// ring holds mostly polls of parked net.Conn goroutines does not use
	// it. Locked loops only (LockedLoops). Default false.
	DedicatedLoops bool
	// LockedLoops makes each loop a goroutine locked to its own OS thread
	// that sleeps in io_uring_enter, on a ring set up with SINGLE_ISSUER and
	// DEFER_TASKRUN (Linux 6.1+): completions are run by the kernel only when
	// the loop asks for them, in batches (min_complete and min-wait), and
	// the ring fd is registered. Default false: each loop is an ordinary
	// goroutine that sleeps in Go's own netpoller, parked on the ring's fd
	// (io_uring_poll reports it readable when CQEs are ready), on a ring
	// with COOP_TASKRUN, so a wake-up costs what a Go net reader's costs:
	// the thread that woke from epoll runs the loop and the goroutines it
	// readies, with no hand-off of the P between threads and no system call
	// that Go's sysmon must watch. Side by side at a fixed load of half Go
	// net's peak (BENCHMARKS.md, "Equal load"), that costs 0.8x Go net's
	// CPU per message where a locked loop costs 1.1-1.4x. A locked loop
	// batches better when it never sleeps: choose it for a server that
	// runs at its peak (net.Conn small-message echo at saturation: 1.25x
	// the msgs/s of the default), with DedicatedLoops and IdlePoll, which
	// apply only to locked loops.
	LockedLoops bool
	// RingEntries is each ring's SQ size in SQEs (the CQ is 4x); 0 means
	// DefaultRingEntries.
	RingEntries uint32
	// BufferSize and Buffers size each loop's provided buffer ring: Buffers
	// (a power of two) buffers of BufferSize bytes. 0 means the defaults:
	// DefaultIncBuffers x DefaultIncBufferSize when the ring's buffers are
	// consumed incrementally, else DefaultBuffers x DefaultBufferSize.
	BufferSize, Buffers int

	// Switches are the experiment switches (package experiment) that
	// reproduce the comparisons of BENCHMARKS.md and older kernels; a
	// server leaves them at their zero value.
	experiment.Switches

	// IncrementalBuffers registers the provided buffer ring with
	// IOU_PBUF_RING_INC (needs Linux 6.12+; whole buffers where the kernel
	// refuses it): with the default sizes, 128 buffers of 32 KiB, so one
	// recv CQE carries up to 32 KiB of a stream. Off by default: side by
	// side on an idle machine (BENCHMARKS.md) it cut a 10-connection 4 KiB
	// echo's msgs/s to 0.80x of the whole-buffer ring at the same CPU per
	// message, while bulk transfer used 0.84x the CPU.
	IncrementalBuffers bool

	// tlsKeepBuffers leaves crypto/tls's buffers as crypto/tls keeps them
	// (tls_guts.go), to measure what taking them back saves.
	tlsKeepBuffers bool
}
