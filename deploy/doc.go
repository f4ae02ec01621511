// Package deploy holds what it takes to run uringrt's echo-server outside a
// developer's shell: the seccomp profile that lets a container use io_uring
// (seccomp-io_uring.json), the Grafana dashboard over the runtime's
// Prometheus metrics (grafana/uringrt.json), the image's final stage
// (image/Containerfile, which the repository's Dockerfile ends with), and
// the Kubernetes base (k8s/, a Go module of its own). See README.md in this
// directory.
//
// The Go code here only reads those artifacts, so that the package's tests
// hold them to the metric names and syscalls the runtime actually uses: the
// seccomp profile parses, denies by default and allows io_uring_*; every
// metric the dashboard queries (DashboardMetricNames) is one a live runtime
// exports; a real Prometheus scrapes the echo-server; the repository's
// Dockerfile ends with the image's final stage verbatim; and the Kubernetes
// manifests decode strictly with k8s.io/api (in the k8s module).
package deploy
