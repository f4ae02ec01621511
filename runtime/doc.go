// Package uringrt serves and dials TCP, unix and UDP sockets through
// io_uring rings, behind Go's own interfaces: net.Listener, net.Conn and
// net.PacketConn, plus a callback API for the fastest path. Its import path
// is github.com/uringrt/uringrt/runtime and its name is uringrt, so a
// program imports it beside the standard runtime package without an alias
// (goimports and gopls write the name out, uringrt "github.com/...",
// because it differs from the path's last element: the same import).
//
// # Listen
//
// A server is net.Listen with this package's name; the connections are
// net.Conns, so net/http, crypto/tls and bufio run on them unchanged:
//
//	ln, err := uringrt.Listen("tcp", ":8080") // the default runtime, started on first use
//	if err != nil { ... }
//	http.Serve(ln, handler)
//
// # Dial
//
// A client dials the same way, or hooks the package-level DialContext into a
// library that takes a dialer (http.Transport, grpc, go-redis, pgx):
//
//	c, err := uringrt.Dial("tcp", "example.com:80")
//	tr := &http.Transport{DialContext: uringrt.DialContext}
//
// # Serve a handler
//
// New starts a runtime of its own; its Serve runs the callback API on a
// listener: each connection is read by a multishot recv into a provided
// buffer ring (a connection that streams large reads switches to a recv
// into a 32 KiB buffer of its own, which stays in the CPU cache), and
// OnData runs on the connection's loop with bytes valid only during the
// call. Writes are queued and sent in batches.
//
//	rt, err := uringrt.New(uringrt.Config{})
//	if err != nil { ... }
//	defer rt.Close()
//	ln, err := rt.Listen("tcp", ":7777")
//	if err != nil { ... }
//	rt.Serve(ln, uringrt.HandlerFuncs{Data: func(c *uringrt.CallbackConn, data []byte) {
//		c.Write(data) // echo
//	}})
//
// # Options
//
// Options are spelled as in Go's net. Dialer (Timeout, Deadline, LocalAddr,
// KeepAlive, KeepAliveConfig, Control, FallbackDelay, SetMultipathTCP) and
// ListenConfig (Control, KeepAlive, KeepAliveConfig, SetMultipathTCP) have
// net.Dialer's and net.ListenConfig's fields and meaning, plus what io_uring
// adds: ListenConfig.ReusePort (and Config.ReusePort) gives each loop its
// own SO_REUSEPORT listening socket, so accepts spread over the loops with
// no hand-off. Both take a Runtime field; nil is the default runtime.
//
//	d := uringrt.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
//	c, err := d.DialContext(ctx, "tcp", addr)
//	lc := uringrt.ListenConfig{Runtime: rt, ReusePort: true}
//	ln, err := lc.Listen(ctx, "tcp", ":8080")
//
// A *Conn has what *net.TCPConn has that applies: CloseRead and CloseWrite,
// SetNoDelay, SetLinger, SetReadBuffer and SetWriteBuffer,
// SetKeepAlive, SetKeepAlivePeriod and SetKeepAliveConfig (keep-alive is on
// by default with Go's 15 s idle, 15 s interval and 9 probes, as net.Listen
// and net.Dial set it), MultipathTCP, File, and SyscallConn: a
// syscall.RawConn whose Read and Write wait for readiness through the
// loop's ring, so libraries that poll the socket themselves (go-redis's
// pool health check) work. Listeners have SyscallConn and File too.
//
// Config sets a runtime's loops, backend (io_uring, Go's net, or auto),
// limits and metrics. The default runtime behind the package-level
// functions lives until CloseDefault, which releases its loops and
// descriptors (call it at the end of a test checked with goleak).
//
// # UDP
//
// ListenPacket, ListenUDP and DialUDP return a *PacketConn, a
// net.PacketConn with *net.UDPConn's methods (ReadMsgUDP and WriteMsgUDP
// with control messages for GSO/GRO, SyscallConn, deadlines), so
// miekg/dns's server and quic-go's HTTP/3 run on it:
//
//	pc, err := uringrt.ListenPacket("udp", ":5353")
//	n, from, err := pc.ReadFrom(buf)
//
// # Metrics
//
// With Config.Metrics a runtime counts bytes, pollable outcomes and ring
// events; Runtime.Stats reads every counter. This package links no metrics
// library: package github.com/uringrt/uringrt/runtime/uringprom exports
// Stats to Prometheus.
//
// # The contract
//
// Listen, Dial and DialContext behave like net.Listen and net.Dial for
// "tcp", "tcp4", "tcp6" and "unix"; a dial whose context is cancelled or
// expires fails with net's words ("operation was canceled", "i/o
// timeout") and matches errors.Is(err, context.Canceled) or
// context.DeadlineExceeded as net's does. A *Conn is a net.Conn: Read returns
// what is available (at least one byte) or an error, io.EOF on the peer's
// orderly close; Write writes all of b or returns an error (io.Writer);
// deadlines work as in Go's net and wake blocked calls; Close wakes blocked
// Reads and Writes with net.ErrClosed, cancels every request in flight and
// waits for its completion before the descriptor is closed, so no buffer is
// written after its call returned. A buffer handed to the kernel stays
// untouched by Go until its completion arrives.
//
// Runtime.Serve runs a Handler: OnOpen, OnData and OnClose of one
// connection never run concurrently and keep their order; OnData's bytes
// are valid only during the call. Handlers run on the loop and must not
// block unless they implement MayBlocker.
//
// Close and Shutdown end every loop, listener, connection and worker: no
// goroutine or descriptor of the runtime is left.
//
// # Errors
//
// Errors are those of the standard library: a *net.OpError (Op "read",
// "write", "accept", "dial", "close", "set") wrapping os.ErrDeadlineExceeded
// (Timeout() is true), net.ErrClosed, or an *os.SyscallError with the errno
// (ECONNRESET, EPIPE, ECONNREFUSED, EMFILE, ...), so errors.Is and
// errors.As work as with Go's net. Writes use MSG_NOSIGNAL: a write to a
// reset peer fails with EPIPE or ECONNRESET and never raises SIGPIPE.
// Accept under EMFILE/ENFILE returns the error (callers back off as
// net/http does); Serve backs off by itself, 5 ms doubling to 1 s.
//
// New with BackendUring fails, when no ring can be set up, with an error
// wrapping ErrNoIOUring and the setup errno (errors.Is(err,
// os.ErrPermission) for EPERM, errors.ErrUnsupported for ENOSYS) whose
// text names the fix. BackendAuto (the default) logs that error once as a
// warning and serves through Go's net; FallbackReason says why. Running
// out of descriptors or memory while setting up (EMFILE, ENFILE, ENOMEM)
// is no missing io_uring: New fails under every Backend with an error
// wrapping ErrSetupResources and the errno, and the default runtime tries
// again on its next use.
//
// # Kernel requirements
//
// io_uring needs Linux 5.1; uringrt wants 5.19+ and is best on 6.1+. Each
// feature is probed once at New and used only when present; the Disable*
// switches of package experiment (Config.Switches) turn them off to
// reproduce older kernels:
//
//	5.7   FAST_POLL: experiment.PollRing's recv/send are poll-armed inside
//	      the kernel
//	5.15  IORING_REGISTER_IOWQ_MAX_WORKERS (IOWQMaxWorkers)
//	5.19  multishot accept and poll, provided buffer rings (DisableMultishot,
//	      DisableBufRing: single-shot ops and per-connection buffers instead)
//	6.0   multishot recv (callback API)
//	6.1   SINGLE_ISSUER|DEFER_TASKRUN for Config.LockedLoops: batched
//	      task_work (DisableDeferTaskrun: COOP_TASKRUN instead)
//	6.10  recv bundles: a callback recv CQE carries as many provided
//	      buffers as the socket has data for (DisableRecvBundles)
//	6.12  min-wait in io_uring_enter's EXT_ARG (WaitLatency without a timer)
//
// io_uring can be blocked although present: the sysctl
// kernel.io_uring_disabled, or Docker's default seccomp profile (EPERM).
// See deploy/ for a seccomp profile that allows it.
//
// # Pollable requests
//
// Socket reads, writes and accepts are pollable requests: each is tried
// nonblocking in the caller; on EAGAIN the caller parks until a poll CQE of
// the completion batch wakes it, so no thread waits on a socket that is not
// ready. Reads park on one multishot POLLIN armed when the connection
// opens and kept for its life (one SQE per connection, not per Read; a
// readiness that comes while nobody waits is remembered, as in Go's
// netpoll); after a short read the next Read waits for that CQE instead of
// a recv that would say EAGAIN. Writes arm a one-shot POLLOUT on EAGAIN. No
// goroutine or kernel worker blocks on a socket. With GOMAXPROCS 2 or more
// (and loops that are not Config.LockedLoops) a net.Conn's reads and a
// listener's Accept park in Go's own netpoller
// instead (the socket registered once, as Go's net registers it), so the
// thread that finds the socket readable runs the reader with no loop
// goroutine between; writes still arm their POLLOUT on the loop. The
// policies this one is measured against are in package experiment
// (BENCHMARKS.md).
//
// # How it works
//
//	user goroutines                     loops (Config.Loops, default GOMAXPROCS)
//	---------------                     ----------------------------------------
//	Conn.Read ---- recv(2) nonblock     loop 0: one goroutine owning ring 0,
//	  | EAGAIN                            parked in Go's netpoller on its fd
//	  v                                   (LockedLoops: on its own thread)
//	park on pollDesc <----- wake ----+      +-------------------------------+
//	                        (batch)  |      | take queued requests (MPSC)   |
//	Conn.Write --- send(2) nonblock  |      | prep SQEs                     |
//	  | EAGAIN / short: post POLLOUT |      | io_uring_enter: submit + wait |
//	  v                              |      |   min_complete, WaitLatency   |
//	post(request) --> MPSC queue ----+----> | reap all CQEs                 |
//	                  + eventfd wake        | complete ops as one batch     |
//	                  (if it sleeps)        | wake parked goroutines        |
//	                                        +-------------------------------+
//	Serve(ln, Handler):                     loop 1 .. n-1: the same, own ring
//	  multishot accept -> multishot recv
//	  (provided buffer ring) -> OnData      sched fixed pool (Config.Workers):
//	  on the loop -> CallbackConn.Write       blocking-policy ops, MayBlocker
//	  queues -> one send per conn per         handlers (per-connection key)
//	  iteration
//
// Only a loop touches its ring. Other goroutines post requests and wake the
// loop through an eventfd only when it sleeps. A connection belongs to one
// loop for its life.
package uringrt

// Where each part lives (a map for maintainers; not part of the package doc;
// docs/ARCHITECTURE.md groups the files by concern and draws each API's data flow).
//
// The loop and its ops:
//
//	loop.go        the loop's iteration: drain the queue, prep, one enter,
//	               reap (the one place completions run), wake the batch
//	loop_wait.go   how it waits: min_complete, WaitLatency, the idle poll
//	loop_yield.go  a yield before blocking when goroutines are still
//	               runnable on the P the loop got back (GOMAXPROCS 1), and
//	               one every 500 us of held P under sustained load
//	loop_gowait.go the default wait, in Go's netpoller instead of
//	               io_uring_enter: the loop a goroutine, not a locked thread
//	request.go     the MPSC queue, post and the eventfd wake; requests to a
//	               loop that has exited (handleDead)
//	op.go          an op's whole life: arm, the slot table keyed by
//	               user_data, in-flight counts, completeCQE, cancel by
//	               user_data and its resend
//	op_wake.go     the eventfd read          op_poll.go  POLLIN / POLLOUT
//	op_rw.go       net.Conn recv/send         op_cb.go    callback recv;
//	op_cb_send.go  callback send and flush    op_cb_deliver.go  to OnData
//	op_accept.go   Serve's multishot accept and its back-off timer
//	               (each: its SQE prep and what its CQE means)
//	close.go       the one close protocol of every descriptor
//	bufring.go     the provided buffer ring of the callback API
//	shutdown.go    Shutdown and Close of the whole runtime
//
// The public types and how they wait:
//
//	runtime.go     Runtime, New, the loops' start, Serve; default.go the default
//	               runtime; config.go Config; errors.go net's error shapes
//	               and ErrNoIOUring; setupcause.go why a ring could not be
//	               set up (ErrSetupResources); validate.go Config's
//	               ranges and defaults; std.go BackendStd
//	netfd.go       a socket's state; polldesc.go, deadline.go parking
//	conn.go        Conn: Read, Write, Close, deadlines, options
//	pollable.go    the pollable policy (experiment.Pollable) Conn.Read and
//	               Write call: pollable_hybrid.go (nonblock try, then poll arm),
//	               pollable_ring.go (PollRing, PollAsync),
//	               pollable_blocking.go (a fixed worker blocks)
//	splice.go      ReadFrom/WriteTo by splice(2); sendfile.go sendfile(2);
//	               rawend.go the two ends a splice moves between
//	rawconn.go     the one nonblock-try loop (netFD.rawIO: Accept, UDP
//	               writes, RawConn, splice ends) and SyscallConn;
//	               sockopt.go keep-alive and socket options (sockopt_inherit.go:
//	               set once on a listener, inherited by accepted sockets)
//	sockaddr.go    accept4, getsockname, getpeername: one syscall each
//	listen.go      Listen; listener.go the listener and Accept;
//	               listenconfig.go ListenConfig; listen_reuse.go the
//	               SO_REUSEPORT group (a socket per loop)
//	dial.go        Runtime.Dial, DialContext, DialCallback, the connect;
//	               dialer.go Dialer's options; dial_race.go Happy Eyeballs
//	handler.go     the callback API: Handler; callback.go CallbackConn;
//	               outq.go its output queue; lend.go buffer lending (a
//	               Write of OnData's data sends the provided buffers
//	               themselves); callback_stream.go stream mode (a
//	               streaming connection reads into its own buffer);
//	               budget.go the memory budget; idle.go IdleTimeout
//	udp_conn.go    PacketConn and its one seam, udpSocket: a loop's ringUDP
//	               or, under BackendStd, Go's *net.UDPConn (stdUDP)
//	udp.go         ringUDP: udp_read.go, udp_write.go, udp_batch.go,
//	               udp_rawconn.go; udp_multishot.go (multishot recvmsg),
//	               udp_listen.go constructors, udp_options.go, udp_sys.go
//	               (sockaddrs and cmsgs), udp_metrics.go
//	metrics.go     the loops' counters; stats.go Runtime.Stats, which reads
//	               them (package uringprom exports them to Prometheus)
//
//
// The ring mechanics (EventfdWake, FileTable of registered files, CQE flags)
// are netpoll's.
