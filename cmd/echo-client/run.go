package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uringrt/uringrt/runtime"
)

// maxErrorLines bounds how many connection errors are printed one by one.
const maxErrorLines = 10

// sample is the state of the run at one edge of the measured window.
type sample struct {
	at      time.Time
	msgs    uint64 // echoes checked since the start
	sent    uint64 // open loop: messages sent since the start
	cpu     time.Duration
	proc    procSample
	procErr error
	metrics map[string]float64
	metErr  error
}

// run dials, warms up, measures and prints the summary to stdout; progress
// and errors go to stderr. It returns the exit code: 0 ok, 1 on any
// connection error or echo mismatch.
func run(ctx context.Context, cfg config, stdout, stderr io.Writer) int {
	var outMu sync.Mutex
	logf := func(format string, args ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintf(stderr, "echo-client: "+format+"\n", args...)
	}
	if err := raiseNoFile(); err != nil {
		logf("warning: cannot raise the open-file limit: %v", err)
	}
	var printed atomic.Int64
	s := &runState{base: time.Now()}
	s.errOut = func(msg string) {
		switch n := printed.Add(1); {
		case n <= maxErrorLines:
			logf("%s", msg)
		case n == maxErrorLines+1:
			logf("further connection errors are counted, not shown")
		}
	}
	rt, err := newClientRuntime(cfg)
	if err != nil {
		logf("%v", err)
		return 1
	}
	dialStart := time.Now()
	eng, err := startEngine(ctx, cfg, s, rt)
	if err != nil {
		logf("%v", err)
		return 1
	}
	logf("%d connections open in %.2fs", cfg.conns, time.Since(dialStart).Seconds())
	workers, allDone := eng.workers, eng.allDone
	stopProgress := startProgress(s, workers, logf)

	interrupted := !wait(ctx, allDone, cfg.warmup)
	s.phase.Store(phaseMeasure)
	start := takeSample(ctx, cfg, s, workers)
	if !interrupted {
		interrupted = !wait(ctx, allDone, cfg.duration)
	}
	end := takeSample(ctx, cfg, s, workers)
	s.phase.Store(phaseStop)
	eng.stop()
	stopProgress()

	sum := summarize(cfg, s, workers, start, end, logf)
	if eng.open != nil {
		sched, late := eng.open()
		sum.addOpen(cfg, s, sched, late, start, end, logf)
	}
	if err := sum.write(stdout, cfg.json); err != nil {
		logf("writing the summary: %v", err)
		return 1
	}
	switch {
	case sum.Errors > 0:
		return 1
	case ctx.Err() != nil:
		logf("interrupted: %v", context.Cause(ctx))
		return 1
	}
	return 0
}

// engine is a started run: its workers, a channel closed when all have
// ended, stop (closes everything; the counters are final after it), and
// in open loop the schedule and the client's lateness (after stop).
type engine struct {
	workers []*worker
	allDone <-chan struct{}
	stop    func()
	open    func() (*schedule, *lateness)
}

// startEngine dials and starts the traffic: on the uring loop through the
// callback API (rt non-nil, TCP or unix), or a goroutine per connection on
// Go's net or, with -network udp, on rt's PacketConns.
func startEngine(ctx context.Context, cfg config, s *runState, rt *uringrt.Runtime) (*engine, error) {
	if rt != nil && cfg.network != "udp" {
		e, ws, err := startUring(ctx, rt, s, cfg)
		if err != nil {
			return nil, err
		}
		eng := &engine{workers: ws, allDone: e.done, stop: e.stop}
		if o := e.open; o != nil {
			eng.open = func() (*schedule, *lateness) { return o.schedule.Load(), &o.late }
		}
		return eng, nil
	}
	// With -network udp on io_uring the PacketConns live on rt, which
	// is closed after them (its loop thread, ring and eventfd).
	closeRT := func() {
		if rt != nil {
			rt.Close()
		}
	}
	conns, err := dialConns(ctx, cfg, rt)
	if err != nil {
		closeRT()
		return nil, err
	}
	if cfg.rate > 0 {
		e, ws, allDone := startNetOpen(s, conns, cfg)
		return &engine{workers: ws, allDone: allDone,
			stop: func() { e.stopAll(); closeRT() },
			open: func() (*schedule, *lateness) { return e.sched, &e.late }}, nil
	}
	ws, allDone, wg := startWorkers(s, conns, cfg)
	return &engine{workers: ws, allDone: allDone, stop: func() {
		for _, c := range conns {
			c.Close()
		}
		wg.Wait()
		closeRT()
	}}, nil
}

// startWorkers starts one goroutine per connection. allDone is closed when
// every worker has returned.
func startWorkers(s *runState, conns []net.Conn, cfg config) ([]*worker, <-chan struct{}, *sync.WaitGroup) {
	workers := make([]*worker, len(conns))
	allDone := make(chan struct{})
	var live atomic.Int64
	live.Store(int64(len(conns)))
	wg := new(sync.WaitGroup)
	for i, c := range conns {
		w := newWorker(i, c, cfg.size, cfg.depth)
		w.yield = cfg.yield
		workers[i] = w
		wg.Go(func() {
			w.run(s)
			if live.Add(-1) == 0 {
				close(allDone)
			}
		})
	}
	return workers, allDone, wg
}

// wait sleeps for d; it returns false if ctx ended or every worker stopped first.
func wait(ctx context.Context, allDone <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-allDone:
	}
	return false
}

// totalDone sums the messages completed by all workers.
func totalDone(workers []*worker) uint64 {
	var n uint64
	for _, w := range workers {
		n += w.done.Load()
	}
	return n
}

// startProgress prints one line a second until the returned stop is called.
func startProgress(s *runState, workers []*worker, logf func(string, ...any)) (stop func()) {
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		begin := time.Now()
		last, lastAt := totalDone(workers), begin
		for {
			select {
			case <-quit:
				return
			case now := <-tick.C:
				n := totalDone(workers)
				tps := float64(n-last) / now.Sub(lastAt).Seconds()
				last, lastAt = n, now
				phase := "warmup"
				switch s.phase.Load() {
				case phaseMeasure:
					phase = "measure"
				case phaseStop:
					return
				}
				logf("t=%.0fs %s tps=%.0f errors=%d", now.Sub(begin).Seconds(), phase, tps, s.errors.Load())
			}
		}
	}()
	return func() { close(quit); <-done }
}

// takeSample reads everything measured at an edge of the window: the
// message count first, then CPU times, then the server's metrics.
func takeSample(ctx context.Context, cfg config, s *runState, workers []*worker) sample {
	sm := sample{at: time.Now(), msgs: totalDone(workers), sent: s.sent.Load(), cpu: selfCPU()}
	if cfg.serverPID > 0 {
		sm.proc, sm.procErr = readProc(cfg.serverPID)
	}
	if cfg.metricsURL != "" {
		sm.metrics, sm.metErr = scrape(context.WithoutCancel(ctx), cfg.metricsURL, metricSQEs, metricCQEs, metricEnters)
	}
	return sm
}

// summarize computes the summary of the window [start, end].
func summarize(cfg config, s *runState, workers []*worker, start, end sample, logf func(string, ...any)) *summary {
	var h histogram
	for _, w := range workers {
		h.merge(&w.hist)
	}
	msgs := end.msgs - start.msgs
	secs := end.at.Sub(start.at).Seconds()
	sum := &summary{
		P50us:     usOf(h.quantile(0.50)),
		P99us:     usOf(h.quantile(0.99)),
		P999us:    usOf(h.quantile(0.999)),
		Errors:    s.errors.Load(),
		Conns:     cfg.conns,
		Msgs:      msgs,
		DurationS: secs,
		Size:      cfg.size,
		Depth:     cfg.depth,
	}
	if secs > 0 {
		sum.TPS = int64(float64(msgs)/secs + 0.5)
	}
	if cfg.rate > 0 {
		p90, p9999, mx := usOf(h.quantile(0.90)), usOf(h.quantile(0.9999)), usOf(h.max)
		sum.P90us, sum.P9999us, sum.MaxUs = &p90, &p9999, &mx
	}
	if msgs == 0 {
		return sum
	}
	perMsg := func(d time.Duration) *int64 { v := int64(d) / int64(msgs); return &v }
	sum.ClientCPU = perMsg(end.cpu - start.cpu)
	if cfg.serverPID > 0 {
		if err := firstErr(start.procErr, end.procErr); err != nil {
			logf("warning: server stats of pid %d: %v", cfg.serverPID, err)
		} else {
			sum.ServerCPU = perMsg(end.proc.cpu - start.proc.cpu)
			v := float64(max(end.proc.ctxsw-start.proc.ctxsw, 0)) * 1000 / float64(msgs)
			sum.ServerCtxsw = &v
		}
	}
	if cfg.metricsURL != "" {
		if err := firstErr(start.metErr, end.metErr); err != nil {
			logf("warning: metrics from %s: %v", cfg.metricsURL, err)
		} else {
			delta := func(name string) float64 { return end.metrics[name] - start.metrics[name] }
			sqes, cqes := delta(metricSQEs)/float64(msgs), delta(metricCQEs)/float64(msgs)
			sum.ServerSQEs, sum.ServerCQEs = &sqes, &cqes
			if d := delta(metricEnters); d > 0 {
				v := delta(metricCQEs) / d
				sum.CQEsPerEnter = &v
			} else {
				logf("warning: %s did not grow during the window at %s", metricEnters, cfg.metricsURL)
			}
		}
	}
	return sum
}

// firstErr returns the first non-nil error.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// newClientRuntime returns the uringrt runtime the client runs on (-engine
// uring, or auto where io_uring works), or nil for Go's net.
func newClientRuntime(cfg config) (*uringrt.Runtime, error) {
	if cfg.engine == "net" {
		return nil, nil
	}
	rt, err := uringrt.New(uringrt.Config{Loops: 1, Backend: uringrt.BackendUring,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		if cfg.engine == "uring" {
			return nil, fmt.Errorf("-engine uring: %w", err)
		}
		return nil, nil
	}
	return rt, nil
}
