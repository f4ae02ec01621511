package uringrt

// EnableMetrics turns on, from now, the counters that Config.Metrics turns
// on at New (bytes, pollable outcomes, accept errors, UDP datagrams, the
// loops' per-iteration ring counters), for a runtime made without it, such
// as the default runtime: runtime/uringprom's Register calls it. Those
// counters then count from this call; the rest (connections, closes,
// timeouts, refusals) count from New either way. It cannot be turned off
// again; Config still reports the Config given to New. Any goroutine; both
// backends.
func (rt *Runtime) EnableMetrics() { rt.metrics.Store(true) }

// MetricsEnabled reports whether the counters of Config.Metrics are on
// (Config.Metrics, or EnableMetrics since).
func (rt *Runtime) MetricsEnabled() bool { return rt.metrics.Load() }
