package uringrt

import (
	"context"
	"sync"
	"time"

	"github.com/uringrt/uringrt/sched"
)

// Shutdown stops accepting, asks connections to finish and waits for them,
// then closes the runtime. Callback connections stop reading and close once
// their queued output is sent (or, for a peer that does not read, reset at
// Config.CloseTimeout), after the wait for a peer still sending that
// CallbackConn.Close describes; net.Conn connections get a read deadline of
// now, so a handler blocked in Read returns and closes (so does one that
// joins during the drain: accepted by an Accept already past accept4, or
// dialed). If ctx ends first,
// everything still open is closed and ctx.Err() is returned.
func (rt *Runtime) Shutdown(ctx context.Context) error {
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return nil
	}
	lns, _, _ := rt.snapshotLocked()
	rt.mu.Unlock()
	for _, ln := range lns {
		ln.Close()
	}
	for _, l := range rt.loops {
		l.post(request{kind: reqShutdownCB})
	}
	rt.mu.Lock()
	var wait chan struct{}
	if rt.connCountLocked() > 0 {
		wait = make(chan struct{})
		rt.drained = wait
	}
	_, conns, stds := rt.snapshotLocked()
	// Connections tracked from now on (an Accept past its accept4 when
	// the listener closed, a Dial) get their deadline in track.
	rt.draining = true
	rt.mu.Unlock()
	now := time.Now()
	for _, fd := range conns {
		if !fd.cb { // callback conns were told through their loops
			(&Conn{fd: fd}).SetReadDeadline(now)
		}
	}
	for _, c := range stds {
		if sc, ok := c.(*stdConn); ok {
			sc.drain(now) // and callback timeouts set no later deadline
		} else {
			c.SetReadDeadline(now)
		}
	}
	var err error
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if cerr := rt.Close(); err == nil {
		err = cerr
	}
	return err
}

// Close closes every listener and connection, cancels everything in flight,
// waits for those CQEs, and releases the rings and workers: afterwards no
// goroutine or descriptor of the runtime is left. Every callback
// connection it closes gets its OnClose (a MayBlocker handler's on the
// workers, which run what is queued for 5 s at most). It returns nil, or
// an error when the worker pool's handlers did not finish within 5 s. It
// is idempotent.
func (rt *Runtime) Close() error {
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return nil
	}
	rt.closed = true
	lns, conns, stds := rt.snapshotLocked()
	rt.mu.Unlock()
	for _, ln := range lns {
		ln.Close()
	}
	for _, c := range stds {
		c.Close()
	}
	// Every net.Conn is closed at once (their loops cancel and close them
	// in batches), then each is awaited, also when a concurrent Close owns
	// it: before the loops stop.
	var wg sync.WaitGroup
	for _, fd := range conns {
		if fd.cb {
			continue // a callback conn: its loop closes it
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			fd.close()
			<-fd.closed
		}()
	}
	wg.Wait()
	rt.stopLoops()
	// The loops' last closes queued the OnClose of every MayBlocker
	// connection on the pool: those run (cancelling them left connections
	// without OnClose), for 5 s at most; what is left then is cancelled.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rt.pool.Close(ctx, sched.Drain); err == nil {
		return nil
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Second)
	defer cancel2()
	return rt.pool.Close(ctx2, sched.CancelQueued)
}
