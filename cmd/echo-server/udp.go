package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/uringrt/uringrt/runtime"
)

// runUDP is echo-server -network udp: one UDP socket (a uringrt
// PacketConn) echoing every datagram to its sender, read by -udp-readers
// goroutines (default 1, which keeps each sender's echoes in order), until
// SIGINT or SIGTERM (after -drain-delay, /readyz answering 503). It
// returns the exit code.
func runUDP(rt *uringrt.Runtime, o options, reg *prometheus.Registry, logger *slog.Logger, stderr io.Writer) int {
	pc, err := rt.ListenPacket("udp", o.addr)
	if err != nil {
		rt.Close()
		fmt.Fprintf(stderr, "echo-server: %v\n", err)
		return 2
	}
	// Room for bursts from many clients.
	pc.SetReadBuffer(4 << 20)
	pc.SetWriteBuffer(4 << 20)
	hs := new(health)
	msrv, err := startMetrics(&o, reg, hs)
	if err != nil {
		pc.Close()
		rt.Close()
		fmt.Fprintf(stderr, "echo-server: metrics: %v\n", err)
		return 2
	}
	hs.listening.Store(true)
	readers := max(o.udpReaders, 1)
	logger.Info("echo-server listening", "addr", pc.LocalAddr().String(), "network", "udp", "readers", readers,
		"backend", rt.Backend().String(), "loops", rt.Config().Loops, "metrics", metricsAddrOf(msrv), "version", version)
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() { echoUDP(pc, logger) })
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	s := <-sig
	hs.draining.Store(true)
	if o.drainDelay > 0 {
		logger.Info("draining: /readyz answers 503", "signal", s.String(), "drain_delay", o.drainDelay)
		select {
		case <-time.After(o.drainDelay):
		case s = <-sig:
		}
	}
	logger.Info("shutting down", "signal", s.String())
	ctx, cancel := context.WithTimeout(context.Background(), o.shutdownTimeout)
	defer cancel()
	if err := rt.Shutdown(ctx); err != nil { // closes pc
		logger.Warn("shutdown", "err", err)
	}
	wg.Wait()
	if msrv != nil {
		msrv.srv.Shutdown(ctx)
	}
	logger.Info("shutdown complete")
	return 0
}

// echoUDP sends every datagram back to its sender until pc is closed.
func echoUDP(pc *uringrt.PacketConn, logger *slog.Logger) {
	buf := make([]byte, 64<<10)
	for {
		n, from, err := pc.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			logger.Debug("udp read", "err", err) // e.g. ECONNREFUSED from an earlier reply
			continue
		}
		if _, err := pc.WriteToUDPAddrPort(buf[:n], from); err != nil && errors.Is(err, net.ErrClosed) {
			return
		}
	}
}
