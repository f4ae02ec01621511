# uringrt: build, test and benchmark.

.PHONY: build test bench bench-matrix

build:
	mkdir -p bin
	go build -o bin/echo-server ./cmd/echo-server
	go build -o bin/echo-client ./cmd/echo-client

test:
	go test -race ./...

# One echo benchmark run: echo-server vs echo-client, 1000 conns, 12 B messages.
bench:
	scripts/bench.sh

# -api conn, -api callback and -backend std in alternating rounds (ROUNDS=, DURATION=).
bench-matrix:
	scripts/bench.sh -matrix
