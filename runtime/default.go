package runtime

import (
	"net"
	"sync"
)

// defaultRT is the runtime behind the package-level Listen and Dial,
// started on first use with the zero Config (BackendAuto).
var defaultRT struct {
	once sync.Once
	rt   *Runtime
	err  error
}

// Default returns the package's default runtime (zero Config: BackendAuto,
// GOMAXPROCS loops, no metrics), starting it on first use. It lives for the
// process. A missing io_uring is no error (BackendAuto falls back to Go's
// net with one warning); the error, if any, is New's and is returned by
// every later call too.
func Default() (*Runtime, error) {
	defaultRT.once.Do(func() { defaultRT.rt, defaultRT.err = New(Config{}) })
	return defaultRT.rt, defaultRT.err
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
