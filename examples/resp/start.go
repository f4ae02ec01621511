package main

import (
	"net"

	"github.com/uringrt/uringrt/runtime"
)

// start makes the runtime, its listener and the server with lim. The
// runtime's per-connection cap on kept input and queued output,
// Config.MaxWriteBuffer, is raised above lim.maxRequest so that a request
// over the limit gets the parser's RESP error before the runtime's cap
// closes the connection.
func start(addr string, loops int, backend uringrt.Backend, lim limits) (*uringrt.Runtime, net.Listener, *server, error) {
	rt, err := uringrt.New(uringrt.Config{Loops: loops, Backend: backend,
		MaxWriteBuffer: max(lim.maxRequest+8<<20, uringrt.DefaultMaxWriteBuffer)})
	if err != nil {
		return nil, nil, nil, err
	}
	ln, err := rt.Listen("tcp", addr)
	if err != nil {
		rt.Close()
		return nil, nil, nil, err
	}
	srv := newServer(loops > 1 || rt.Backend() == uringrt.BackendStd, lim)
	return rt, ln, srv, nil
}
