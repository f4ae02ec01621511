// Command echo-server is uringrt's benchmark server: it echoes every byte it
// receives, through the net.Conn API (a goroutine per connection) or the
// callback API, on io_uring or on Go's net, and serves Prometheus metrics.
//
//	echo-server -addr 127.0.0.1:7777 -api callback -metrics-addr 127.0.0.1:9100
//
// Next to /metrics the same server answers /healthz (200 while the process
// runs) and /readyz (200 while listening and not draining, 503 after
// SIGTERM). SIGINT or SIGTERM make /readyz fail, wait -drain-delay, then
// shut down gracefully within -shutdown-timeout (exit 0). Every flag has a
// stated range (shown in -help); a flag out of range or an address
// in use is one line on stderr and exit 2.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	uringrt "github.com/uringrt/uringrt/runtime"
	"github.com/uringrt/uringrt/runtime/experiment"
	"github.com/uringrt/uringrt/runtime/uringprom"
)

// version is set with -ldflags "-X main.version=...".
var version = "dev"

type options struct {
	addr, api, backend, pollable, metricsAddr, batch string
	loops, workers, maxConns, bufSize                int
	network                                          string // tcp (or unix, from the address) or udp (udp.go)
	udpReaders                                       int
	udpMultishot                                     bool
	iowqMax                                          uint
	waitLatency, idlePoll                            time.Duration
	showVersion, dedicated, incBufs, lockedLoops     bool
	noBundles, noLend, netpollReady, loopReady       bool

	metricsMaxConns                                 int
	metricsIdleTimeout, shutdownTimeout, drainDelay time.Duration
	metricsHostInfo                                 string
	reusePort                                       bool

	limits limitOptions // limits.go
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func parseFlags(args []string, stderr io.Writer) (options, int) {
	var o options
	fs := flag.NewFlagSet("echo-server", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:7777", "listen address: host:port, or a unix socket path starting with / or .")
	fs.StringVar(&o.network, "network", "tcp", "tcp (unix when -addr is a path) or udp: echo datagrams on a PacketConn")
	fs.BoolVar(&o.udpMultishot, "udp-multishot", false, "with -network udp: receive through a multishot recvmsg into a provided buffer ring (Config.UDPRecvMultishot)")
	fs.IntVar(&o.udpReaders, "udp-readers", 1, "with -network udp: goroutines reading the socket (more than 1 may reorder a sender's echoes)")
	fs.StringVar(&o.api, "api", "conn", "API: conn (net.Conn, a goroutine per connection) or callback")
	fs.StringVar(&o.backend, "backend", "auto", "backend: auto, uring or std")
	fs.StringVar(&o.pollable, "pollable", "hybrid", "pollable-request policy: hybrid, ring, async or blocking")
	fs.StringVar(&o.batch, "batch", "on", "batched waiting for completions: on or off")
	fs.DurationVar(&o.waitLatency, "wait-latency", uringrt.DefaultWaitLatency, "bound on the latency batched waiting may add (locked loops: -locked-loops)")
	fs.DurationVar(&o.idlePoll, "idle-poll", 0, "busy-poll this long before a loop sleeps (0 = never; locked loops: -locked-loops)")
	fs.BoolVar(&o.dedicated, "dedicated", false, "loops keep their P while they wait up to 1 ms (Config.DedicatedLoops; locked loops: -locked-loops)")
	fs.BoolVar(&o.lockedLoops, "locked-loops", false, "each loop a locked OS thread sleeping in io_uring_enter on a DEFER_TASKRUN ring, instead of a goroutine sleeping in Go's netpoller (Config.LockedLoops)")
	fs.BoolVar(&o.reusePort, "reuseport", false, "a SO_REUSEPORT listening socket per loop, each accepting its own connections (Config.ReusePort)")
	fs.BoolVar(&o.noBundles, "no-bundles", false, "one provided buffer per callback recv CQE instead of recv bundles (IORING_RECVSEND_BUNDLE, Linux 6.10+; Config.DisableRecvBundles)")
	fs.BoolVar(&o.netpollReady, "netpoll-readiness", false, "net.Conn readers and Accept wait in Go's netpoller even with GOMAXPROCS 1 or -locked-loops (experiment NetpollReadiness; the default from GOMAXPROCS 2 otherwise)")
	fs.BoolVar(&o.loopReady, "loop-readiness", false, "net.Conn readers and Accept wait on their loop's POLLIN, as by default with GOMAXPROCS 1 or -locked-loops (experiment LoopReadiness; wins over -netpoll-readiness)")
	fs.BoolVar(&o.noLend, "no-lend", false, "callback echo copies each message into the output queue instead of sending the provided buffers it arrived in (Config.DisableBufferLending)")
	fs.BoolVar(&o.incBufs, "inc-buffers", false, "incrementally consumed provided buffers, 128 x 32 KiB, where the kernel has them (Linux 6.12+; Config.IncrementalBuffers)")
	fs.IntVar(&o.loops, "loops", 0, "event loops (0 = GOMAXPROCS)")
	fs.IntVar(&o.workers, "workers", uringrt.DefaultWorkers, "fixed workers (blocking policy, blocking handlers)")
	fs.UintVar(&o.iowqMax, "iowq-max-workers", 0, "cap on io-wq workers per ring, bounded and unbounded (0 = kernel default)")
	fs.IntVar(&o.maxConns, "max-conns", defaultMaxConns(), "cap on open connections; over it a connection is accepted and closed at once (0 = no cap; the default leaves descriptors for the rest of the process)")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "127.0.0.1:9100", "address serving /metrics, /healthz and /readyz (empty disables); loopback unless the operator publishes it")
	fs.IntVar(&o.metricsMaxConns, "metrics-max-conns", metricsMaxConnsDefault, "cap on the metrics server's open connections (at the cap a new one closes the longest idle or silent one)")
	fs.DurationVar(&o.metricsIdleTimeout, "metrics-idle-timeout", metricsIdleTimeoutDefault, "close a metrics keep-alive connection idle this long")
	fs.StringVar(&o.metricsHostInfo, "metrics-host-info", "auto", "export the kernel release and descriptor headroom: on, off, or auto (on only when -metrics-addr is loopback)")
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 5*time.Second, "on SIGTERM/SIGINT, wait this long for connections to drain")
	fs.DurationVar(&o.drainDelay, "drain-delay", 0, "on SIGTERM/SIGINT, answer /readyz 503 and keep serving this long before draining")
	fs.IntVar(&o.bufSize, "buf-size", defaultBufSize, "bytes each net.Conn Read takes at most (-api conn)")
	o.limits.register(fs)
	fs.BoolVar(&o.showVersion, "version", false, "print the version and the probed io_uring features, then exit")
	ranges := flagRanges()
	annotateRanges(fs, ranges)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fs.PrintDefaults()
			return o, 0
		}
		fmt.Fprintf(stderr, "echo-server: %v\n", err)
		return o, 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "echo-server: unexpected argument %q\n", fs.Arg(0))
		return o, 2
	}
	if msg := checkRanges(fs, ranges); msg != "" {
		fmt.Fprintf(stderr, "echo-server: %s\n", msg)
		return o, 2
	}
	return o, -1
}

func run(args []string, stdout, stderr io.Writer) int {
	o, code := parseFlags(args, stderr)
	if code >= 0 {
		return code
	}
	// Before anything listens: a SIGTERM that comes as soon as the port
	// accepts (an orchestrator, a test) must drain, not kill the process
	// by the signal's default action (a stress run: TestNoMetricsAddr's
	// server died 22 ms after listening, "signal: terminated").
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	backend, err := uringrt.ParseBackend(o.backend)
	if err != nil {
		fmt.Fprintf(stderr, "echo-server: %v\n", err)
		return 2
	}
	pollable, err := experiment.ParsePollable(o.pollable)
	if err != nil {
		fmt.Fprintf(stderr, "echo-server: %v\n", err)
		return 2
	}
	if o.showVersion {
		fmt.Fprintf(stdout, "echo-server %s\n", version)
		f, err := uringrt.Probe()
		if err != nil {
			fmt.Fprintf(stdout, "io_uring: unavailable: %v\n", err)
			return 0
		}
		fmt.Fprintf(stdout, "io_uring: %v\n", f)
		// What the kernel offers (setup= above) is not what every loop
		// takes: the default loop, parked in Go's netpoller, sets up its
		// ring with COOP_TASKRUN; -locked-loops with DEFER_TASKRUN. This
		// line is the rings of this command line's loops, as
		// uringrt_backend_info's setup_flags label reports them.
		if rt, err := uringrt.New(uringrt.Config{Loops: 1, Backend: uringrt.BackendUring, LockedLoops: o.lockedLoops}); err == nil {
			fmt.Fprintf(stdout, "loops: setup=%s\n", rt.Stats().SetupFlags)
			rt.Close()
		}
		return 0
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	cfg := uringrt.Config{
		Loops: o.loops, Backend: backend, Workers: o.workers, MaxConns: o.maxConns, Logger: logger,
		WaitLatency: o.waitLatency, IdlePoll: o.idlePoll, DedicatedLoops: o.dedicated, LockedLoops: o.lockedLoops, ReusePort: o.reusePort,
		UDPRecvMultishot:   o.udpMultishot,
		IncrementalBuffers: o.incBufs,
		Switches:           experiment.Switches{Pollable: pollable, IOWQMaxWorkers: uint32(o.iowqMax), DisableRecvBundles: o.noBundles, DisableBufferLending: o.noLend, NetpollReadiness: o.netpollReady, LoopReadiness: o.loopReady},
	}
	o.limits.apply(&cfg)
	if !o.lockedLoops {
		// Batched waiting, the idle poll and a held P
		// are how a locked loop waits; a loop parked in Go's netpoller has
		// none of them.
		for _, f := range []struct {
			name string
			set  bool
		}{{"-batch off", o.batch == "off"}, {"-idle-poll", o.idlePoll > 0}, {"-dedicated", o.dedicated}} {
			if f.set {
				fmt.Fprintf(stderr, "echo-server: %s applies to locked loops: add -locked-loops\n", f.name)
				return 2
			}
		}
	}
	if o.batch == "off" {
		cfg.WaitBatch = experiment.WaitBatchOff
	}
	cfg.Metrics = o.metricsAddr != ""
	rt, err := uringrt.New(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "echo-server: %v\n", err)
		return 1
	}
	if cfg.Metrics {
		if err := uringprom.Register(reg, rt); err != nil {
			rt.Close()
			fmt.Fprintf(stderr, "echo-server: metrics: %v\n", err)
			return 1
		}
	}
	if o.network == "udp" {
		return runUDP(rt, o, reg, logger, stderr)
	}
	network := "tcp"
	if len(o.addr) > 0 && (o.addr[0] == '/' || o.addr[0] == '.') {
		network = "unix"
	}
	ln, err := rt.Listen(network, o.addr)
	if err != nil {
		rt.Close()
		fmt.Fprintf(stderr, "echo-server: %v\n", err)
		return 2
	}
	hs := new(health)
	msrv, err := startMetrics(&o, reg, hs)
	if err != nil {
		ln.Close()
		rt.Close()
		fmt.Fprintf(stderr, "echo-server: metrics: %v\n", err)
		return 2
	}
	hs.listening.Store(true)
	logger.Info("echo-server listening", "addr", ln.Addr().String(), "api", o.api, "backend", rt.Backend().String(),
		"pollable", pollable.String(), "locked_loops", o.lockedLoops, "batch", o.batch, "loops", rt.Config().Loops, "metrics", metricsAddrOf(msrv), "version", version)

	served := make(chan struct{})
	go func() {
		defer close(served)
		if o.api == "callback" {
			rt.Serve(ln, echoHandler{})
			return
		}
		acceptLoop(ln, logger, o.bufSize)
	}()

	s := <-sig
	hs.draining.Store(true)
	logger.Info("draining: /readyz answers 503", "signal", s.String(), "drain_delay", o.drainDelay, "shutdown_timeout", o.shutdownTimeout)
	if o.drainDelay > 0 {
		select {
		case <-time.After(o.drainDelay):
		case s = <-sig:
			logger.Info("second signal: draining now", "signal", s.String())
		}
	}
	logger.Info("shutting down", "signal", s.String())
	ctx, cancel := context.WithTimeout(context.Background(), o.shutdownTimeout)
	defer cancel()
	if err := rt.Shutdown(ctx); err != nil {
		logger.Warn("shutdown", "err", err)
	}
	<-served
	if msrv != nil {
		msrv.srv.Shutdown(ctx)
	}
	logger.Info("shutdown complete")
	return 0
}

// acceptLoop serves the net.Conn API: a goroutine per connection copying
// what it reads back, backing off on temporary accept errors as net/http.
func acceptLoop(ln net.Listener, logger *slog.Logger, bufSize int) {
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if backoff == 0 {
				backoff = 5 * time.Millisecond
			} else if backoff *= 2; backoff > time.Second {
				backoff = time.Second
			}
			logger.Warn("accept", "err", err, "backoff", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		go echo(c, bufSize)
	}
}
