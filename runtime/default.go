package uringrt

import (
	"net"
	"sync"
)

// defaultRT is the runtime behind the package-level Listen, Dial,
// DialContext and the zero ListenConfig and Dialer: started on first use
// with the zero Config (BackendAuto), closed by CloseDefault.
var defaultRT struct {
	mu  sync.Mutex
	rt  *Runtime
	err error
}

// Default returns the package's default runtime (zero Config: BackendAuto,
// GOMAXPROCS loops, no metrics), starting it on first use. It lives until
// CloseDefault; the first use after that starts a new one. A missing
// io_uring is no error (BackendAuto falls back to Go's net with one
// warning); the error, if any, is New's and is returned by every later
// call too.
//
// Its loops are goroutines locked to OS threads, and it holds a ring and
// an eventfd per loop: a program (or a test checked with goleak) that
// wants them gone calls CloseDefault.
func Default() (*Runtime, error) {
	defaultRT.mu.Lock()
	defer defaultRT.mu.Unlock()
	if defaultRT.rt == nil && defaultRT.err == nil {
		defaultRT.rt, defaultRT.err = New(Config{})
	}
	return defaultRT.rt, defaultRT.err
}

// CloseDefault closes the default runtime if one was started, as
// Runtime.Close: its listeners and connections still open are closed, and
// its loops, rings, workers and descriptors are released, so no goroutine
// of the package is left (for goleak.VerifyNone or VerifyTestMain). The
// next package-level Listen, Dial or Default starts a new one. It returns
// Runtime.Close's error; with no default runtime it does nothing.
func CloseDefault() error {
	defaultRT.mu.Lock()
	rt := defaultRT.rt
	defaultRT.rt, defaultRT.err = nil, nil
	defaultRT.mu.Unlock()
	if rt == nil {
		return nil
	}
	return rt.Close()
}

// Listen is Default().Listen: net.Listen over io_uring.
func Listen(network, address string) (net.Listener, error) {
	rt, err := Default()
	if err != nil {
		return nil, err
	}
	return rt.Listen(network, address)
}

// Dial is Default().Dial: net.Dial over io_uring.
func Dial(network, address string) (net.Conn, error) {
	rt, err := Default()
	if err != nil {
		return nil, err
	}
	return rt.Dial(network, address)
}
