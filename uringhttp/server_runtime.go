package uringhttp

import (
	"errors"
	"fmt"
	"net"

	uringrt "github.com/uringrt/uringrt/runtime"
)

// serveRuntime is the runtime Serve serves ln on: the one that made it.
func (s *Server) serveRuntime(ln net.Listener) (*uringrt.Runtime, error) {
	rt, ok := uringrt.ListenerRuntime(ln)
	if !ok {
		return nil, fmt.Errorf("uringhttp: Serve: %T is not a uringrt listener: make it with uringrt.Listen, a Runtime's Listen or a uringrt.ListenConfig (serve a net.Listen listener with net/http)", ln)
	}
	if s.Runtime != nil && s.Runtime != rt {
		return nil, errors.New("uringhttp: Serve: Server.Runtime is not the runtime that made the listener: leave Server.Runtime nil (Serve uses the listener's runtime) or listen with Server.Runtime")
	}
	return rt, nil
}
