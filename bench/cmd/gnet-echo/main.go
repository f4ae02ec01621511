// Command gnet-echo is an echo server on github.com/panjf2000/gnet/v2, the
// event-loop comparison of the benchmark: one event loop per GOMAXPROCS,
// OnTraffic echoes what arrived with c.Next(-1) and c.Write on the loop.
// It exits 0 on SIGTERM or SIGINT.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/panjf2000/gnet/v2/pkg/logging"
)

// echoServer echoes every byte back on the event loop.
type echoServer struct {
	gnet.BuiltinEventEngine
}

// OnTraffic writes back everything read so far.
func (*echoServer) OnTraffic(c gnet.Conn) gnet.Action {
	buf, err := c.Next(-1)
	if err != nil {
		return gnet.Close
	}
	if _, err := c.Write(buf); err != nil {
		return gnet.Close
	}
	return gnet.None
}

func main() {
	addr := flag.String("addr", "127.0.0.1:7777", "listen `address`")
	flag.Parse()
	proto := "tcp://" + *addr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		gnet.Stop(sctx, proto)
	}()
	loops := runtime.GOMAXPROCS(0)
	err := gnet.Run(&echoServer{}, proto,
		gnet.WithMulticore(true),
		gnet.WithNumEventLoop(loops),
		gnet.WithReusePort(false),
		gnet.WithLogLevel(logging.ErrorLevel))
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "gnet-echo: %v\n", err)
		os.Exit(1)
	}
}
