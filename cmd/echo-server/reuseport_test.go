package main

import (
	"strconv"
	"testing"
)

// TestReusePortFlag: -reuseport with two loops gives each loop its own
// SO_REUSEPORT listening socket; both accept (the kernel spreads the
// connections by address hash) and every echo comes back.
func TestReusePortFlag(t *testing.T) {
	for _, api := range []string{"callback", "conn"} {
		t.Run(api, func(t *testing.T) {
			s := startServer(t, "-api", api, "-backend", "uring", "-loops", "2", "-reuseport")
			echoMsgs(t, s.addr, 32, 2)
			text := scrape(t, s.metric)
			for loop := range 2 {
				v, ok := sample(text, "uringrt_connections_accepted_total", `loop="`+strconv.Itoa(loop)+`"`)
				if !ok || v <= 0 {
					t.Errorf("loop %d accepted %v connections (present %v), want > 0 of 33", loop, v, ok)
				}
			}
			s.stop(t)
		})
	}
}
