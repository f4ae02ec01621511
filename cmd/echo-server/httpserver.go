package main

import (
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// The metrics server (/metrics, /healthz, /readyz) shares the process's
// descriptors with the echo listener, so it is bounded on every side: a
// scraper that opens connections and idles, sends headers slowly,
// pipelines requests and never reads, or opens thousands of connections
// cannot hold more than metricsMaxConns descriptors nor hold one longer
// than the timeouts below. At the cap a new connection is accepted and an
// idle or silent one closed (evictingListener), so none of that starves
// the kubelet's /healthz and /readyz probes either.
const (
	// metricsMaxConnsDefault is -metrics-max-conns' default: Prometheus
	// keeps one connection per target, probes one each.
	metricsMaxConnsDefault = 64
	// metricsIdleTimeoutDefault is -metrics-idle-timeout's default: a
	// keep-alive connection idle this long after a response is closed
	// (Prometheus' shortest usual scrape interval is 15 s, and it
	// reconnects when needed).
	metricsIdleTimeoutDefault = 30 * time.Second
	// metricsReadHeaderTimeout bounds sending the request headers
	// (slowloris).
	metricsReadHeaderTimeout = 5 * time.Second
	// metricsReadTimeout bounds reading a whole request (GETs have no body).
	metricsReadTimeout = 10 * time.Second
	// metricsWriteTimeout bounds writing a response: a scraper that
	// pipelines requests and never reads is cut off.
	metricsWriteTimeout = 10 * time.Second
	// metricsMaxHeaderBytes caps request headers (1 MiB by default in
	// net/http).
	metricsMaxHeaderBytes = 8 << 10
	// metricsDeferAccept is the metrics listener's TCP_DEFER_ACCEPT, in
	// seconds: the kernel hands a connection to accept(2) once its first
	// bytes came, or, silent, after about this long (one SYN-ACK
	// retransmission). A probe or a scrape, which sends its request as
	// it connects, comes in at once with its request; a flood of
	// connections that send nothing, even one that reconnects as soon
	// as it is evicted, reaches the listener (and its cap) at most once
	// a second per client.
	metricsDeferAccept = 1
)

// health is what /healthz and /readyz report: the process runs (always
// 200 while it can answer), and it listens and is not draining.
type health struct {
	listening atomic.Bool
	draining  atomic.Bool
}

func (h *health) ready() bool { return h.listening.Load() && !h.draining.Load() }

// metricsServer is the HTTP server for /metrics, /healthz and /readyz.
type metricsServer struct {
	srv  *http.Server
	ln   *evictingListener
	host string // the host asked for (-metrics-addr), for the log
}

// metricsConfig is what the flags set on the metrics server.
type metricsConfig struct {
	maxConns    int
	idleTimeout time.Duration
	hostInfo    bool // export the kernel release and descriptor headroom
}

// newMetricsServer serves gatherer's metrics and h's state on ln, bounded
// as described above. Without hostInfo the kernel label of
// uringrt_backend_info is dropped and the process collector's descriptor
// gauges (process_open_fds, process_max_fds: how close the process is to
// EMFILE) are not exported.
func newMetricsServer(ln net.Listener, gatherer prometheus.Gatherer, h *health, mc metricsConfig) *metricsServer {
	if !mc.hostInfo {
		gatherer = redactingGatherer{gatherer}
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{
		MaxRequestsInFlight: 4,
		Timeout:             metricsWriteTimeout / 2,
	}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		switch {
		case h.draining.Load():
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("draining\n"))
		case !h.listening.Load():
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("not listening\n"))
		default:
			w.Write([]byte("ready\n"))
		}
	})
	deferAccept(ln, metricsDeferAccept)
	el := newEvictingListener(ln, mc.maxConns)
	return &metricsServer{
		ln: el,
		srv: &http.Server{
			ConnState:         el.connState,
			Handler:           mux,
			ReadHeaderTimeout: metricsReadHeaderTimeout,
			ReadTimeout:       metricsReadTimeout,
			WriteTimeout:      metricsWriteTimeout,
			IdleTimeout:       mc.idleTimeout,
			MaxHeaderBytes:    metricsMaxHeaderBytes,
		},
	}
}

func (m *metricsServer) serve() { m.srv.Serve(m.ln) }

// addr is the address the metrics server is bound to: the host asked for
// (Go shows 0.0.0.0 bound dual-stack as [::]) and the port bound, the
// kernel's choice for port 0.
func (m *metricsServer) addr() string {
	a := m.ln.Addr().String()
	if _, port, err := net.SplitHostPort(a); err == nil && m.host != "" {
		return net.JoinHostPort(m.host, port)
	}
	return a
}

// startMetrics listens on o.metricsAddr and serves the metrics server
// there; with no address it returns nil. The error is the listen's.
func startMetrics(o *options, gatherer prometheus.Gatherer, h *health) (*metricsServer, error) {
	if o.metricsAddr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", o.metricsAddr)
	if err != nil {
		return nil, err
	}
	hostInfo := o.metricsHostInfo == "on" || o.metricsHostInfo == "auto" && isLoopback(o.metricsAddr)
	m := newMetricsServer(ln, gatherer, h, metricsConfig{maxConns: o.metricsMaxConns, idleTimeout: o.metricsIdleTimeout, hostInfo: hostInfo})
	m.host, _, _ = net.SplitHostPort(o.metricsAddr)
	go m.serve()
	return m, nil
}

// metricsAddrOf is what the startup log names: the bound address, or ""
// without a metrics server.
func metricsAddrOf(m *metricsServer) string {
	if m == nil {
		return ""
	}
	return m.addr()
}

// isLoopback reports whether addr (host:port) binds only loopback.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// redactingGatherer drops what tells a remote scraper about the host: the
// kernel release (a label of uringrt_backend_info, for matching kernel
// exploits) and the descriptor headroom (process_open_fds and
// process_max_fds, for timing a descriptor-exhaustion attack).
type redactingGatherer struct{ g prometheus.Gatherer }

func (r redactingGatherer) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := r.g.Gather()
	out := mfs[:0]
	for _, mf := range mfs {
		switch mf.GetName() {
		case "process_open_fds", "process_max_fds":
			continue
		case "uringrt_backend_info":
			for _, m := range mf.Metric {
				for _, lp := range m.Label {
					if lp.GetName() == "kernel" {
						lp.Value = proto("redacted")
					}
				}
			}
		}
		out = append(out, mf)
	}
	return out, err
}

func proto(s string) *string { return &s }
