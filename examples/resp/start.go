package main

import (
	"net"

	"github.com/uringrt/uringrt/runtime"
)

// start makes the runtime (cfg), its listener and the server with lim.
// The runtime's per-connection cap on kept input and queued output,
// Config.MaxWriteBuffer, is raised above lim.maxRequest so that a request
// over the limit gets the parser's RESP error before the runtime's cap
// closes the connection.
func start(addr string, cfg uringrt.Config, lim limits) (*uringrt.Runtime, net.Listener, *server, error) {
	cfg.MaxWriteBuffer = max(lim.maxRequest+8<<20, uringrt.DefaultMaxWriteBuffer)
	loops := max(cfg.Loops, 1)
	rt, err := uringrt.New(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	ln, err := rt.Listen("tcp", addr)
	if err != nil {
		rt.Close()
		return nil, nil, nil, err
	}
	srv := newServer(loops > 1 || rt.Backend() == uringrt.BackendStd, lim)
	srv.writesBlock = rt.Backend() == uringrt.BackendStd
	return rt, ln, srv, nil
}
