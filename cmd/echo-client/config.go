package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// maxInFlightBytes bounds depth*size. Each connection is driven by a single
// goroutine that writes while it is not reading, so the bytes in flight must
// fit in the socket buffers of both ends or client and server could block in
// write forever.
const maxInFlightBytes = 256 << 10

// config is the parsed command line.
type config struct {
	addr            string
	conns           int
	size            int
	depth           int
	duration        time.Duration
	warmup          time.Duration
	json            bool
	dialConcurrency int
	dialTimeout     time.Duration
	serverPID       int
	metricsURL      string
	yield           bool
	engine          string        // "auto", "uring" or "net"
	network         string        // "tcp" or "udp" (udp.go); "unix" when addr is a path
	rate            float64       // open loop: messages per second over all connections; 0 closed loop
	lateAfter       time.Duration // open loop: a message released later than this behind its schedule is late
}

// usageText is the head of -h, before the flags.
const usageText = `usage: echo-client [flags]

Load generator for an echo server: opens -c connections to -addr (host:port,
or a unix socket), checks every echoed byte, warms up for -warmup, measures
for -d and prints one summary line on stdout (-json: one JSON object).

Closed loop (the default): each connection keeps -depth messages in flight
and sends the next when an echo returns, so the server runs flat out; the
latency of a message counts from its send.

    tps=N p50_us=N p99_us=N p999_us=N errors=N conns=N [client_cpu_ns_per_msg=N ...]

Open loop (-rate R, as wrk2): R messages a second in total are due whatever
the server does, evenly spaced on each connection (every c/R seconds),
connection i shifted by i/R. A message is sent when due unless -depth of its
connection's are unanswered; then it waits for an echo. Its latency counts
from its due time, so a server that stalls is charged for every message it
delayed (coordinated omission corrected). Compare servers at equal load:
CPU per message and latency at a fixed rate.

    tps=N p50_us=N p90_us=N p99_us=N p999_us=N p9999_us=N max_us=N errors=N
    conns=N rate=R sent_rate=N late=N late_max_us=N backlog=N [...]

tps is echoes a second and sent_rate messages sent a second in the window;
late counts the messages the client itself sent more than -late-after
behind their due time (the client fell behind: then it also says so on
stderr, and the latencies include that delay); backlog is the messages due
by the window's end and not yet echoed. Percentiles come from a log-linear
histogram, at most 1/32 (3.1%) above the true value; max is exact.

Exit status: 0 ok, 1 on a connection error or echo mismatch, 2 on bad flags.

`

// errUsage reports a bad command line; its message is already printed.
var errUsage = errors.New("usage")

// parseFlags parses args (without the program name). On a bad command line
// it prints one line to stderr and returns errUsage; for -h it prints the
// usage and returns flag.ErrHelp.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("echo-client", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:7777", "echo server `address`: host:port, or a unix socket path (starting with /, . or @ for an abstract name, or prefixed unix:)")
	fs.IntVar(&cfg.conns, "c", 1000, "number of connections")
	fs.IntVar(&cfg.size, "s", 12, "message size in bytes")
	fs.IntVar(&cfg.depth, "depth", 1, "messages in flight per connection")
	fs.DurationVar(&cfg.duration, "d", 10*time.Second, "measured duration")
	fs.DurationVar(&cfg.warmup, "warmup", time.Second, "warm-up duration (not measured)")
	fs.BoolVar(&cfg.json, "json", false, "print the summary as one JSON object")
	fs.IntVar(&cfg.dialConcurrency, "dial-concurrency", 64, "connections dialled at once")
	fs.DurationVar(&cfg.dialTimeout, "dial-timeout", 5*time.Second, "timeout of one dial")
	fs.IntVar(&cfg.serverPID, "server-pid", 0, "server `pid` whose CPU time and context switches are measured (0: none)")
	fs.StringVar(&cfg.metricsURL, "metrics-url", "", "Prometheus `url` of the server, scraped at the window's edges for its SQEs and CQEs per message and cqes_per_enter (empty: none)")
	fs.StringVar(&cfg.engine, "engine", "auto", "client engine: uring (all connections on one uringrt loop, callback API), net (a goroutine per connection on Go's net), or auto (uring where io_uring works)")
	fs.StringVar(&cfg.network, "network", "tcp", "tcp, or udp: each connection a connected UDP socket, each message one datagram (a uringrt PacketConn with -engine uring/auto, Go's net with -engine net)")
	fs.Float64Var(&cfg.rate, "rate", 0, "open loop: send this many `msgs/s` in total, evenly spaced over the connections, whatever the server does; latency counts from each message's scheduled time (0: closed loop)")
	fs.DurationVar(&cfg.lateAfter, "late-after", time.Millisecond, "open loop: a message the client itself sends later than this behind its scheduled time counts as late (the client fell behind)")
	fs.BoolVar(&cfg.yield, "yield", true, "yield to the other connections between a write and its read (fewer syscalls per message)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fmt.Fprint(stderr, usageText)
			fs.PrintDefaults()
			return cfg, err
		}
		fmt.Fprintf(stderr, "echo-client: %v (see -h)\n", err)
		return cfg, errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "echo-client: unexpected argument %q (see -h)\n", fs.Arg(0))
		return cfg, errUsage
	}
	if err := cfg.validate(); err != nil {
		fmt.Fprintf(stderr, "echo-client: %v (see -h)\n", err)
		return cfg, errUsage
	}
	if cfg.network == "tcp" {
		cfg.network, cfg.addr = splitAddr(cfg.addr)
	}
	return cfg, nil
}

// splitAddr tells a unix socket address from a TCP one: "unix:NAME", or a
// name starting with / or . (a path) or @ (Linux's abstract namespace), is
// a unix socket NAME; anything else is a TCP host:port.
func splitAddr(addr string) (network, address string) {
	if name, ok := strings.CutPrefix(addr, "unix:"); ok {
		return "unix", name
	}
	switch addr[0] {
	case '/', '.', '@':
		return "unix", addr
	}
	return "tcp", addr
}

// validate checks the ranges of the flags.
func (c config) validate() error {
	switch {
	case c.addr == "" || c.addr == "unix:":
		return errors.New("-addr must not be empty")
	case c.conns < 1:
		return fmt.Errorf("-c must be >= 1, got %d", c.conns)
	case c.size < 1:
		return fmt.Errorf("-s must be >= 1, got %d", c.size)
	case c.depth < 1:
		return fmt.Errorf("-depth must be >= 1, got %d", c.depth)
	case c.size*c.depth > maxInFlightBytes:
		return fmt.Errorf("-s times -depth must be <= %d, got %d", maxInFlightBytes, c.size*c.depth)
	case c.duration <= 0:
		return fmt.Errorf("-d must be > 0, got %v", c.duration)
	case c.warmup < 0:
		return fmt.Errorf("-warmup must be >= 0, got %v", c.warmup)
	case c.dialConcurrency < 1:
		return fmt.Errorf("-dial-concurrency must be >= 1, got %d", c.dialConcurrency)
	case c.dialTimeout <= 0:
		return fmt.Errorf("-dial-timeout must be > 0, got %v", c.dialTimeout)
	case c.serverPID < 0:
		return fmt.Errorf("-server-pid must be >= 0, got %d", c.serverPID)
	case c.network != "tcp" && c.network != "udp":
		return fmt.Errorf("-network must be tcp or udp, got %q", c.network)
	case c.network == "udp" && isUnixAddr(c.addr):
		return fmt.Errorf("-network udp needs a host:port -addr, got %q", c.addr)
	case c.network == "udp" && c.rate > 0:
		return errors.New("-rate (open loop) needs -network tcp")
	case c.rate < 0 || math.IsNaN(c.rate) || math.IsInf(c.rate, 0):
		return fmt.Errorf("-rate must be >= 0 msgs/s, got %v", c.rate)
	case c.rate > 0 && c.rate < float64(c.conns)/3600:
		return fmt.Errorf("-rate must give each connection at least one message an hour: >= %g msgs/s for %d connections", float64(c.conns)/3600, c.conns)
	case c.lateAfter <= 0:
		return fmt.Errorf("-late-after must be > 0, got %v", c.lateAfter)
	case c.network == "udp" && c.size*c.depth > 65507:
		return fmt.Errorf("-s times -depth must be <= 65507 with -network udp (one datagram), got %d", c.size*c.depth)
	case c.engine != "auto" && c.engine != "uring" && c.engine != "net":
		return fmt.Errorf("-engine must be auto, uring or net, got %q", c.engine)
	}
	return nil
}

// isUnixAddr reports whether addr names a unix socket (see splitAddr).
func isUnixAddr(addr string) bool {
	network, _ := splitAddr(addr)
	return network == "unix"
}
