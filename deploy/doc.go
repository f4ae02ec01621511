// Package deploy holds what it takes to run uringrt's echo-server outside a
// developer's shell: the seccomp profile that lets a container use io_uring
// (seccomp-io_uring.json), the Grafana dashboard over the runtime's
// Prometheus metrics (grafana/uringrt.json), the image's final stage
// (image/Containerfile, which the repository's Dockerfile ends with), and
// the Kubernetes base (k8s/, a Go module of its own). See README.md in this
// directory.
//
// The Go code here only reads those artifacts, so tests can hold them to the
// metric names and syscalls the runtime actually uses:
//
//	seccomp-io_uring.json  ->  deploy_test.go: parses, default deny, io_uring_* allowed
//	grafana/uringrt.json   ->  DashboardMetricNames  ->  deploy_test.go (fixed list)
//	                                               \->  runtime tests (live registry)
//	fixed list (knownMetrics)  ->  live_test.go: equal to a live runtime's families
//	scripts/prom-scrape.sh     ->  promscrape_test.go: a real Prometheus scrapes the echo-server
//	image/Containerfile        ->  image_test.go: ../Dockerfile ends with it verbatim
//	k8s/*.yaml                 ->  k8s/manifests_test.go (own module): strict k8s.io/api decode
package deploy
