// Command grpc-server is the gRPC server of scripts/bench-http.sh: grpc-go's
// standard health service (grpc.health.v1.Health, a unary Check answering
// SERVING) over plain-text HTTP/2, on uringrt's listener or Go's net
// (-backend). It exits 0 on SIGINT or SIGTERM.
//
//	grpc-server -addr 127.0.0.1:17612 -backend uring
package main

import (
	"flag"
	"fmt"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/uringrt/uringrt/bench/internal/benchsrv"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:17612", "listen `address`")
	backend := flag.String("backend", "uring", "listener: uring (uringrt, -loops loops), uring-locked (the same with Config.LockedLoops), uring-netpoll (readers waiting in Go's netpoller), uring-loop (readers waiting on the loop's POLLIN) or std (Go's net)")
	loops := flag.Int("loops", 1, "uringrt event loops (0 = GOMAXPROCS)")
	flag.Parse()
	ln, closeLn, err := benchsrv.Listen(*backend, *addr, *loops)
	if err != nil {
		fmt.Fprintf(os.Stderr, "grpc-server: %v\n", err)
		os.Exit(2)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	ctx, stop := benchsrv.SignalContext()
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Stop()
	}()
	err = srv.Serve(ln)
	closeLn()
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "grpc-server: %v\n", err)
		os.Exit(1)
	}
}
