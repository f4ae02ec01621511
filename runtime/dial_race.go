package uringrt

import (
	"context"
	"net"
	"time"
)

// dialRace dials addrs as net.Dialer does: for "tcp" with both families
// and FallbackDelay >= 0, the first family's addresses in order, raced by
// the other family's after the delay (Happy Eyeballs); else in order.
func (rt *Runtime) dialRace(ctx context.Context, d *Dialer, network string, addrs []net.Addr) (*Conn, error) {
	c, err := rt.dialRaceAddrs(ctx, d, network, addrs)
	if err != nil && d != nil && d.LocalAddr != nil {
		// net names the local address a dial was bound to in its error
		// ("dial tcp 127.0.0.2:0->127.0.0.1:80: connect: ...").
		if oe, ok := err.(*net.OpError); ok && oe.Source == nil {
			oe.Source = d.LocalAddr
		}
	}
	return c, err
}

func (rt *Runtime) dialRaceAddrs(ctx context.Context, d *Dialer, network string, addrs []net.Addr) (*Conn, error) {
	if d != nil && d.LocalAddr != nil {
		if addrs = filterLocal(addrs, d.LocalAddr); len(addrs) == 0 {
			return nil, &net.OpError{Op: "dial", Net: network, Source: d.LocalAddr,
				Err: &net.AddrError{Err: "no suitable address found", Addr: d.LocalAddr.String()}}
		}
	}
	delay := defaultFallbackDelay
	if d != nil && d.FallbackDelay != 0 {
		delay = d.FallbackDelay
	}
	var primaries, fallbacks []net.Addr
	if network == "tcp" && delay > 0 {
		first := addrs[0].(*net.TCPAddr).IP.To4() != nil
		for _, a := range addrs {
			if (a.(*net.TCPAddr).IP.To4() != nil) == first {
				primaries = append(primaries, a)
			} else {
				fallbacks = append(fallbacks, a)
			}
		}
	}
	if len(fallbacks) == 0 {
		return rt.dialAddrs(ctx, d, network, addrs, true)
	}
	type result struct {
		c       *Conn
		err     error
		primary bool
	}
	results := make(chan result, 2) // each racer sends once, never blocks
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	race := func(list []net.Addr, primary bool) {
		c, err := rt.dialAddrs(ctx, d, network, list, true)
		results <- result{c, err, primary}
	}
	go race(primaries, true)
	timer := time.NewTimer(delay)
	defer timer.Stop()
	started, pending := 1, 1
	var firstErr error
	for {
		select {
		case <-timer.C:
			if started == 1 {
				started, pending = 2, pending+1
				go race(fallbacks, false)
			}
		case r := <-results:
			pending--
			if r.err == nil {
				if pending > 0 { // the other racer's conn, if any, is closed
					go func() {
						if o := <-results; o.c != nil {
							o.c.Close()
						}
					}()
				}
				return r.c, nil
			}
			if r.primary || firstErr == nil {
				firstErr = r.err
			}
			if started == 1 {
				started, pending = 2, pending+1
				go race(fallbacks, false)
				continue
			}
			if pending == 0 {
				return nil, firstErr
			}
		}
	}
}
