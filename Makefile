# uringrt: build, test and benchmark.

.PHONY: build test bench bench-matrix image container-test k8s-files k8s-test

build:
	mkdir -p bin
	go build -o bin/echo-server ./cmd/echo-server
	go build -o bin/echo-client ./cmd/echo-client

# The runtime package alone takes 6-9 minutes under -race on 2 cores, close
# to go test's default 10-minute timeout: the same bound as CI's.
test:
	go test -race -timeout 40m ./...

# The echo benchmark (about 1.5 min): Go's net (bench/cmd/std-echo), the
# runtime's net.Conn and callback APIs (echo-server) and Go's net again as an
# A/A control, in 3 alternating rounds of 5 s at 1000 connections x 12 B;
# prints medians, ratios to Go's net and which path used the ring.
# ROUNDS=, DURATION=, CONNS=, SIZE=, PIN=1 (server CPU 0, client CPU 1).
bench:
	scripts/bench.sh

# The same plus echo-server -backend std and -locked-loops.
bench-matrix:
	scripts/bench.sh -matrix

# The echo-server image, built offline with podman: static binaries and a
# nonroot passwd laid out by scripts/image-rootfs.sh, FROM scratch
# (deploy/image/Containerfile). IMAGE= names it.
IMAGE ?= localhost/uringrt-echo:latest
PODMAN ?= podman --runtime runc

image:
	scripts/image-rootfs.sh build/image/rootfs
	$(PODMAN) build --build-context rootfs=build/image/rootfs -f deploy/image/Containerfile -t $(IMAGE) build/image

# Build the image and run it under the project's seccomp profile and under
# podman's default one (scripts/container-test.sh).
container-test: image
	IMAGE=$(IMAGE) scripts/container-test.sh

# deploy/k8s reads a copy of the dashboard and the seccomp profile
# flattened to the OCI format for amd64 nodes (kustomize loads no file
# outside its directory); regenerate them.
k8s-files:
	cd deploy/k8s && go test -count=1 -run TestFilesInSync . -update

# The Kubernetes base: strict decode into k8s.io/api types (own module).
k8s-test:
	cd deploy/k8s && go test ./...
