# syntax=docker/dockerfile:1

# uringrt echo-server image, for builders with a registry:
#
#   docker build -t uringrt .
#   docker run --security-opt seccomp=deploy/seccomp-io_uring.json -p 7777:7777 uringrt
#
# Offline (no registry), `make image` builds the same image with podman from
# deploy/image/Containerfile: the last stage below is that file verbatim, and
# both lay out the root filesystem with scripts/image-rootfs.sh.
#
# /metrics stays on loopback in the image; publish it only where you want it
# scraped: append `-metrics-addr 0.0.0.0:9100` and `-p 9100:9100`.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    VERSION=docker scripts/image-rootfs.sh /rootfs

FROM scratch AS rootfs
COPY --from=build /rootfs/ /

# ---- deploy/image/Containerfile, verbatim from here ----
FROM scratch
COPY --from=rootfs / /
USER 65532:65532
# 7777: echo protocol. 9100: /metrics, /healthz, /readyz, on loopback only
# unless the operator passes -metrics-addr 0.0.0.0:9100 (see deploy/README.md).
EXPOSE 7777
ENTRYPOINT ["/echo-server", "-addr", "0.0.0.0:7777", "-metrics-addr", "127.0.0.1:9100"]
