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
// GOMAXPROCS loops, no metrics), starting it on first use.
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
