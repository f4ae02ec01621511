package uringrt

import (
	"fmt"
	"net"
)

// ListenerRuntime returns the Runtime whose Listen (or ListenConfig.Listen,
// or the package-level Listen for the default runtime) made ln, and true;
// nil and false for any other listener (one from net.Listen, a wrapper).
// Protocol servers use it to serve a listener on its own runtime without
// being told which that is.
func ListenerRuntime(ln net.Listener) (*Runtime, bool) {
	switch l := ln.(type) {
	case *listener:
		return l.rt, true
	case *stdListener:
		return l.rt, true
	case *reuseListener:
		return l.rt, true
	}
	return nil, false
}

// errNotOurListener is Serve's error for a listener rt did not make.
func (rt *Runtime) errNotOurListener(ln net.Listener) error {
	if other, ok := ListenerRuntime(ln); ok && other != rt {
		return fmt.Errorf("uringrt: Serve: the listener belongs to another runtime: call Serve on the runtime whose Listen made it (uringrt.ListenerRuntime(ln) returns it)")
	}
	return fmt.Errorf("uringrt: Serve: %T is not a listener of this runtime: make it with this runtime's Listen or a uringrt.ListenConfig with Runtime set to it", ln)
}
