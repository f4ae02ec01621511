// Command echo-client is the load generator of the uringrt echo benchmark.
//
// It opens -c connections to an echo server (-addr host:port, or a unix
// socket path), checks every echoed byte, and after a warm-up measures
// throughput and latency for -d. By default it runs a closed loop on each
// connection (-depth messages in flight, the next sent when an echo
// returns) and prints one summary line (or one JSON object with -json):
//
//	tps=N p50_us=N p99_us=N p999_us=N errors=N conns=N [client_cpu_ns_per_msg=N]
//	    [server_cpu_ns_per_msg=N server_ctxsw_per_1k=F]
//	    [server_sqes_per_msg=F server_cqes_per_msg=F] [cqes_per_enter=F]
//
// With -rate it runs an open loop instead, as wrk2 does: messages are due
// at that total rate whatever the server does, and latency counts from each
// message's due time (coordinated omission corrected); the line then also has p90, p99.99 and
// max, the achieved rates and how far the client itself fell behind.
//
// The server's CPU and context switches need -server-pid; its SQEs and CQEs
// per message (the ring's work: zero when its readers waited in Go's
// netpoller) and cqes_per_enter need -metrics-url, a uringrt server's
// Prometheus endpoint.
// Exit status: 0 ok, 1 on a connection error or echo mismatch, 2 on bad flags.
package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, cfg, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
