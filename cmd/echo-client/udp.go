package main

import (
	"context"
	"net"

	"github.com/uringrt/uringrt/runtime"
)

// dialConns opens the connections of the goroutine-per-connection engine:
// TCP through Go's net, or with -network udp connected UDP sockets, from
// rt (uringrt PacketConns, -engine uring or auto) or Go's net (rt nil).
// Each message is then one datagram and its echo one datagram; a datagram
// lost stalls its connection until the run ends (loopback does not lose
// them while the socket buffers have room, which closed-loop ping-pong
// keeps).
func dialConns(ctx context.Context, cfg config, rt *uringrt.Runtime) ([]net.Conn, error) {
	if cfg.network != "udp" {
		return dialAll(ctx, cfg)
	}
	conns := make([]net.Conn, cfg.conns)
	err := dialEach(ctx, cfg, func(ctx context.Context, i int) error {
		raddr, err := net.ResolveUDPAddr("udp", cfg.addr)
		if err != nil {
			return err
		}
		if rt != nil {
			c, err := rt.DialUDP("udp", nil, raddr)
			if err != nil {
				return err
			}
			conns[i] = c
			return nil
		}
		c, err := net.DialUDP("udp", nil, raddr)
		if err != nil {
			return err
		}
		conns[i] = c
		return nil
	})
	if err != nil {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		return nil, err
	}
	return conns, nil
}
