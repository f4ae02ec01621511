package main

import (
	"net"

	"github.com/uringrt/uringrt/runtime"
)

// start makes the runtime and its listener for srv.
func start(srv *server, addr string, cfg uringrt.Config) (*uringrt.Runtime, net.Listener, error) {
	rt, err := uringrt.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	ln, err := rt.Listen("tcp", addr)
	if err != nil {
		rt.Close()
		return nil, nil, err
	}
	return rt, ln, nil
}
