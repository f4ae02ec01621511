#!/usr/bin/env bash
# container-test.sh: run the echo-server image (make image) two ways with
# podman and check what each must do.
#
#   (a) --security-opt seccomp=deploy/seccomp-io_uring.json: the io_uring
#       backend; echo-client drives it with 0 errors; /metrics shows
#       uringrt_backend_info{backend="uring"}; /healthz and /readyz answer;
#       SIGTERM (podman stop) exits 0. The same with the Kubernetes base's
#       profile (deploy/k8s/files, flattened to the OCI format), on amd64.
#   (b) podman's default seccomp profile: it serves through Go's net and logs
#       exactly one warning naming seccomp and deploy/seccomp-io_uring.json;
#       backend="std" in /metrics; with -backend uring it exits non-zero
#       with that message.
#
# Env: IMAGE (default localhost/uringrt-echo:latest, built with `make image`
# if absent), PORT_BASE (default 17410: uses PORT_BASE..PORT_BASE+5 on
# loopback), CLIENT (an echo-client binary; default: go build). Every step
# is bounded by `timeout`, the whole run by TOTAL_TIMEOUT (default 600 s),
# and the containers are removed on exit. Exit 0 when all checks pass.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${CONTAINER_TEST_INNER:-}" ]; then
  CONTAINER_TEST_INNER=1 exec timeout --kill-after=10 "${TOTAL_TIMEOUT:-600}" "$0" "$@"
fi

IMAGE=${IMAGE:-localhost/uringrt-echo:latest}
PORT_BASE=${PORT_BASE:-17410}
podman=(podman --runtime runc)
run=("${podman[@]}" run --network=host --ulimit nofile=1024:1024 --ulimit nproc=1000:1000)
tag=uringrt-ct-$$
names=()
fail=0
tmp=$(mktemp -d)

cleanup() {
  for n in "${names[@]}"; do timeout 30 "${podman[@]}" rm -f -t 2 "$n" >/dev/null 2>&1 || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

say() { echo "container-test: $*"; }
bad() { echo "container-test: FAIL: $*" >&2; fail=1; }

# Containers a killed earlier run of this script left behind (its name prefix).
for n in $("${podman[@]}" ps -a --filter name=uringrt-ct- --format '{{.Names}}' 2>/dev/null); do
  timeout 30 "${podman[@]}" rm -f -t 2 "$n" >/dev/null 2>&1 || true
done
command -v podman >/dev/null || { echo "container-test: podman not installed (apt-get install -y podman runc)" >&2; exit 1; }
if ! "${podman[@]}" image exists "$IMAGE"; then
  say "building $IMAGE"
  timeout 900 make image IMAGE="$IMAGE"
fi
user=$("${podman[@]}" image inspect -f '{{.Config.User}}' "$IMAGE")
[ "$user" = 65532:65532 ] || bad "$IMAGE runs as user '$user', want 65532:65532"
CLIENT=${CLIENT:-}
if [ -z "$CLIENT" ]; then
  CLIENT=$tmp/echo-client
  timeout 600 go build -o "$CLIENT" ./cmd/echo-client
fi

# wait_http URL: until it answers 200, at most 20 s.
wait_http() {
  for _ in $(seq 1 100); do
    if curl -fsS -m 2 -o /dev/null "$1" 2>/dev/null; then return 0; fi
    sleep 0.2
  done
  return 1
}

# start NAME ECHO_PORT METRICS_PORT [podman args...] -- [server args...]
start() {
  local name=$1 ep=$2 mp=$3; shift 3
  local popts=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do popts+=("$1"); shift; done
  shift || true
  names+=("$name")
  timeout 60 "${run[@]}" -d --name "$name" "${popts[@]}" "$IMAGE" \
    -addr "127.0.0.1:$ep" -metrics-addr "127.0.0.1:$mp" "$@" >/dev/null
  if ! wait_http "http://127.0.0.1:$mp/readyz"; then
    bad "$name: /readyz not 200 within 20 s; logs:"
    timeout 30 "${podman[@]}" logs "$name" >&2 || true
    return 1
  fi
}

# drive NAME ECHO_PORT: echo-client for 2 s, 0 errors and some messages.
drive() {
  local out
  if ! out=$(timeout 60 "$CLIENT" -addr "127.0.0.1:$2" -c 50 -d 2s -warmup 200ms -engine net 2>&1); then
    bad "$1: echo-client failed: $out"; return
  fi
  local last
  last=$(echo "$out" | tail -n 1)
  say "$1: echo-client: $last"
  grep -q ' errors=0 ' <<<"$last" || bad "$1: echo-client saw errors: $out"
  grep -q '^tps=[1-9]' <<<"$last" || bad "$1: no messages echoed: $out"
  return 0
}

# stop NAME: SIGTERM, exit code 0 within 15 s.
stop() {
  timeout 30 "${podman[@]}" stop -t 15 "$1" >/dev/null
  local code
  code=$(timeout 30 "${podman[@]}" inspect -f '{{.State.ExitCode}}' "$1")
  [ "$code" = 0 ] || bad "$1: exit code $code after SIGTERM, want 0"
}

# (a) the project's profile: io_uring. -loop-readiness: net.Conn readers on
# the loop's POLLIN, so the echo runs through the ring under the profile
# (with two or more Ps they wait in Go's netpoller by default).
a=$tag-uring
say "(a) --security-opt seccomp=deploy/seccomp-io_uring.json"
if start "$a" "$PORT_BASE" $((PORT_BASE + 1)) --security-opt seccomp=deploy/seccomp-io_uring.json -- -backend auto -loop-readiness; then
  drive "$a" "$PORT_BASE"
  m=$(curl -fsS -m 5 "http://127.0.0.1:$((PORT_BASE + 1))/metrics")
  grep -q '^uringrt_backend_info{backend="uring"' <<<"$m" || bad "$a: no uringrt_backend_info{backend=\"uring\"}"
  cqes=$(echo "$m" | awk '/^uringrt_cqes_reaped_total/ {s += $2} END {print s + 0}')
  awk -v c="$cqes" 'BEGIN {exit !(c > 0)}' || bad "$a: uringrt_cqes_reaped_total is $cqes"
  curl -fsS -m 5 -o /dev/null "http://127.0.0.1:$((PORT_BASE + 1))/healthz" || bad "$a: /healthz"
  logs=$(timeout 30 "${podman[@]}" logs "$a" 2>&1)
  if grep -q 'level=WARN' <<<"$logs"; then bad "$a: warnings logged: $logs"; fi
  stop "$a"
  say "(a) backend uring, cqes_reaped=$cqes"
fi

# (a') the profile the Kubernetes base installs (flattened to the OCI format
# for amd64 nodes): io_uring too.
flat=deploy/k8s/files/seccomp-io_uring.oci-amd64.json
if [ "$(uname -m)" = x86_64 ]; then
  f=$tag-oci
  say "(a') --security-opt seccomp=$flat"
  if start "$f" $((PORT_BASE + 4)) $((PORT_BASE + 5)) --security-opt seccomp=$flat -- -backend uring; then
    drive "$f" $((PORT_BASE + 4))
    m=$(curl -fsS -m 5 "http://127.0.0.1:$((PORT_BASE + 5))/metrics")
    grep -q '^uringrt_backend_info{backend="uring"' <<<"$m" || bad "$f: no uringrt_backend_info{backend=\"uring\"}"
    stop "$f"
  fi
fi

# (b) podman's default profile: Go's net, one warning.
b=$tag-default
say "(b) podman's default seccomp profile"
if start "$b" $((PORT_BASE + 2)) $((PORT_BASE + 3)) --; then
  drive "$b" $((PORT_BASE + 2))
  m=$(curl -fsS -m 5 "http://127.0.0.1:$((PORT_BASE + 3))/metrics")
  grep -q '^uringrt_backend_info{backend="std"' <<<"$m" || bad "$b: no uringrt_backend_info{backend=\"std\"}"
  logs=$(timeout 30 "${podman[@]}" logs "$b" 2>&1)
  warns=$(echo "$logs" | grep -c 'level=WARN' || true)
  [ "$warns" = 1 ] || bad "$b: $warns warnings, want 1: $logs"
  w=$(echo "$logs" | grep 'level=WARN' || true)
  for want in seccomp deploy/seccomp-io_uring.json; do
    grep -q -- "$want" <<<"$w" || bad "$b: the warning does not name $want: $w"
  done
  stop "$b"
  say "(b) backend std, warning: ${w:0:160}..."
fi

# (b') -backend uring under the default profile: exits non-zero, naming the cause.
say "(b) -backend uring under podman's default profile"
c=$tag-must-fail
names+=("$c")
set +e
out=$(timeout 60 "${run[@]}" --name "$c" "$IMAGE" -backend uring -addr "127.0.0.1:$PORT_BASE" -metrics-addr "" 2>&1)
code=$?
set -e
[ "$code" != 0 ] && [ "$code" != 124 ] || bad "$c: exit $code, want non-zero (not a timeout)"
for want in seccomp deploy/seccomp-io_uring.json; do
  grep -q -- "$want" <<<"$out" || bad "$c: the error does not name $want: $out"
done
say "(b) -backend uring: exit $code"

if [ "$fail" != 0 ]; then
  echo "container-test: FAILED" >&2
  exit 1
fi
say "ok"
