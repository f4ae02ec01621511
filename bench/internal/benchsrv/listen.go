// Package benchsrv holds what the real-server benchmarks share: a listener
// on uringrt (one loop) or on Go's net, chosen by flag, and the wait for
// SIGINT/SIGTERM.
package benchsrv

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/uringrt/uringrt/runtime"
	"github.com/uringrt/uringrt/runtime/experiment"
)

// Listen returns a TCP listener on addr: uringrt's (backend "uring", with
// loops event loops; 0 = GOMAXPROCS; "uring-locked": the same with
// Config.LockedLoops; "uring-netpoll": with net.Conn readers waiting in Go's
// netpoller whatever GOMAXPROCS is, experiment.Switches.NetpollReadiness;
// "uring-loop": with them waiting on their loop's POLLIN,
// experiment.Switches.LoopReadiness) or Go's net (backend "std"). close
// releases the listener and the runtime.
func Listen(backend, addr string, loops int) (ln net.Listener, close func(), err error) {
	switch backend {
	case "std":
		ln, err = net.Listen("tcp", addr)
		if err != nil {
			return nil, nil, err
		}
		return ln, func() { ln.Close() }, nil
	case "uring", "uring-locked", "uring-netpoll", "uring-loop":
		rt, err := uringrt.New(uringrt.Config{Backend: uringrt.BackendUring, Loops: loops, LockedLoops: backend == "uring-locked",
			Switches: experiment.Switches{NetpollReadiness: backend == "uring-netpoll", LoopReadiness: backend == "uring-loop"}})
		if err != nil {
			return nil, nil, err
		}
		ln, err = rt.Listen("tcp", addr)
		if err != nil {
			rt.Close()
			return nil, nil, err
		}
		return ln, func() { ln.Close(); rt.Close() }, nil
	}
	return nil, nil, fmt.Errorf("-backend must be uring, uring-locked, uring-netpoll, uring-loop or std, not %q", backend)
}

// SignalContext is cancelled by SIGINT or SIGTERM.
func SignalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
