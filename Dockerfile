# syntax=docker/dockerfile:1

# uringrt echo-server image.
#
#   docker build -t uringrt .
#   docker run --security-opt seccomp=deploy/seccomp-io_uring.json \
#       -p 7777:7777 -p 9100:9100 uringrt
#
# Docker's default seccomp profile denies io_uring_setup (EPERM); without the
# profile above the server still runs, on Go's net (see deploy/README.md).

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
WORKDIR /src
ENV CGO_ENABLED=0
# Modules first, so a source change does not re-download them.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -o /out/echo-server ./cmd/echo-server && \
    go build -trimpath -o /out/echo-client ./cmd/echo-client

# Static binaries (CGO_ENABLED=0) need no libc: distroless static, which
# runs as the non-root user "nonroot" (uid 65532).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/echo-server /out/echo-client /
USER nonroot:nonroot
# 7777: echo protocol; 9100: Prometheus /metrics.
EXPOSE 7777 9100
ENTRYPOINT ["/echo-server", "-addr", "0.0.0.0:7777", "-metrics-addr", "0.0.0.0:9100"]
