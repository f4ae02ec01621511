#!/usr/bin/env bash
# image-rootfs.sh OUTDIR: lay out the echo-server image's root filesystem in
# OUTDIR, the one layout both the offline build (make image) and the
# multi-stage Dockerfile copy into their FROM scratch image:
#
#   /echo-server, /echo-client   static Go binaries (CGO_ENABLED=0, -trimpath)
#   /etc/passwd, /etc/group      the nonroot user and group, uid/gid 65532
#
# VERSION (default: git describe, else "dev") is stamped into -version.
set -euo pipefail
out=${1:?usage: image-rootfs.sh OUTDIR}
cd "$(dirname "$0")/.."
version=${VERSION:-$(git describe --always --dirty 2>/dev/null || echo dev)}
rm -rf "$out"
mkdir -p "$out/etc"
export CGO_ENABLED=0
go build -trimpath -ldflags "-s -w -X main.version=$version" -o "$out/echo-server" ./cmd/echo-server
go build -trimpath -ldflags "-s -w" -o "$out/echo-client" ./cmd/echo-client
printf 'root:x:0:0:root:/:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/:/sbin/nologin\n' >"$out/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$out/etc/group"
chmod 0755 "$out/echo-server" "$out/echo-client"
chmod 0644 "$out/etc/passwd" "$out/etc/group"
