// Command grpc-load is the gRPC load client of scripts/bench-http.sh: -conns
// connections (grpc.ClientConn each) carry -c concurrent callers in all, each
// calling grpc.health.v1.Health/Check again and again for -d. It prints one
// line, "requests N rps R errors E", the count of calls that succeeded and
// answered SERVING, and exits 1 if any failed.
//
//	grpc-load -addr 127.0.0.1:17612 -conns 4 -c 64 -d 5s
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:17612", "server `address`")
	conns := flag.Int("conns", 4, "connections")
	conc := flag.Int("c", 64, "concurrent callers in all, spread over the connections")
	dur := flag.Duration("d", 5*time.Second, "how long to call")
	flag.Parse()
	if *conns < 1 || *conc < *conns {
		fmt.Fprintln(os.Stderr, "grpc-load: need -conns >= 1 and -c >= -conns")
		os.Exit(2)
	}
	clients := make([]healthpb.HealthClient, *conns)
	for i := range clients {
		cc, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			fmt.Fprintf(os.Stderr, "grpc-load: %v\n", err)
			os.Exit(2)
		}
		defer cc.Close()
		clients[i] = healthpb.NewHealthClient(cc)
		// one call first, so that every connection is up before the clock starts
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = clients[i].Check(ctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err != nil {
			fmt.Fprintf(os.Stderr, "grpc-load: first call: %v\n", err)
			os.Exit(1)
		}
	}
	var ok, bad atomic.Int64
	var stop atomic.Bool
	// The calls carry no deadline: one would travel to the server as
	// grpc-timeout, whose timer could fail a call near the end.
	time.AfterFunc(*dur, func() { stop.Store(true) })
	var firstErr atomic.Value
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < *conc; i++ {
		wg.Add(1)
		go func(c healthpb.HealthClient) {
			defer wg.Done()
			req := &healthpb.HealthCheckRequest{}
			for !stop.Load() {
				resp, err := c.Check(context.Background(), req)
				if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
					ok.Add(1)
					continue
				}
				bad.Add(1)
				firstErr.CompareAndSwap(nil, fmt.Sprint(err, resp))
			}
		}(clients[i%*conns])
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	fmt.Printf("requests %d rps %.0f errors %d\n", ok.Load(), float64(ok.Load())/el, bad.Load())
	if bad.Load() != 0 {
		fmt.Fprintf(os.Stderr, "grpc-load: first failure: %v\n", firstErr.Load())
		os.Exit(1)
	}
}
