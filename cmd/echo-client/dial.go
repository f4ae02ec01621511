package main

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
)

// dialAll opens cfg.conns connections with at most cfg.dialConcurrency dials
// in flight. On the first failure it stops, closes what it opened and returns
// an error naming the address and the cause.
func dialAll(ctx context.Context, cfg config) ([]net.Conn, error) {
	conns := make([]net.Conn, cfg.conns)
	d := net.Dialer{Timeout: cfg.dialTimeout}
	firstErr := dialEach(ctx, cfg, func(ctx context.Context, i int) error {
		c, err := d.DialContext(ctx, cfg.network, cfg.addr)
		if err != nil {
			return err
		}
		conns[i] = c
		return nil
	})
	if firstErr != nil {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		return nil, firstErr
	}
	return conns, nil
}

// dialEach calls dial for connections 0..cfg.conns-1 with at most
// cfg.dialConcurrency in flight. On the first failure it cancels the rest
// and returns an error naming the address and the cause.
func dialEach(ctx context.Context, cfg config, dial func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for range min(cfg.dialConcurrency, cfg.conns) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= cfg.conns || ctx.Err() != nil {
					return
				}
				if err := dial(ctx, i); err != nil {
					errOnce.Do(func() {
						firstErr = fmt.Errorf("cannot connect to %s: %w", cfg.addr, cause(err))
						cancel()
					})
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = fmt.Errorf("cannot connect to %s: %w", cfg.addr, ctx.Err())
	}
	return firstErr
}
