package uringrt

import (
	"net"
	"sync"
)

// defaultRT is the runtime behind the package-level Listen, Dial,
// DialContext and the zero ListenConfig and Dialer: started on first use
// with the zero Config (BackendAuto), closed by CloseDefault.
var defaultRT struct {
	mu sync.Mutex
	rt *Runtime
}

// Default returns the package's default runtime (zero Config: BackendAuto,
// GOMAXPROCS loops, no metrics until EnableMetrics or uringprom.Register),
// starting it on first use. It lives until
// CloseDefault; the first use after that starts a new one. A missing
// io_uring is no error (BackendAuto falls back to Go's net with one
// warning). A shortage of descriptors or memory at the first use (EMFILE
// at RLIMIT_NOFILE, ENFILE, ENOMEM) is: it returns New's error wrapping
// ErrSetupResources and the errno, and starts nothing, so the next call
// tries io_uring again instead of serving through Go's net for good.
//
// Its loops are goroutines (the default Config: not locked to OS threads),
// and it holds a ring and an eventfd per loop: a program (or a test
// checked with goleak) that wants them gone calls CloseDefault.
func Default() (*Runtime, error) {
	defaultRT.mu.Lock()
	defer defaultRT.mu.Unlock()
	if defaultRT.rt == nil {
		rt, err := New(Config{})
		if err != nil {
			return nil, err // not kept: the next call tries again
		}
		defaultRT.rt = rt
	}
	return defaultRT.rt, nil
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
	defaultRT.rt = nil
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
