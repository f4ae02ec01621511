#!/usr/bin/env bash
# How long the echo-server's /healthz takes to answer while its loop is
# saturated: the latency other goroutines on the loop's P see (GOMAXPROCS=1,
# one loop, server on CPU 0, load generator and curl on CPU 1).
#
#   scripts/healthz-under-load.sh                       # bin/echo-server -api callback, config iii
#   BIN=/tmp/old/echo-server ARGS="-api conn" CONFIG=i scripts/healthz-under-load.sh
#
# Environment: BIN [bin/echo-server], ARGS [-api callback], CONFIG (an
# echoload config of ../shared/bench: i ii iii iv) [iii], SAMPLES [20],
# ECHOLOAD [/tmp/perf-work/bin/echoload, built by ../shared/bench/run.sh],
# PORT [17640] (the metrics port is PORT+1). Prints the median and the
# largest of SAMPLES /healthz times (seconds), then the echo msgs/s. The
# load stops by itself after 1 s of warm-up and 5 s measured.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$ROOT/bin/echo-server}
ARGS=${ARGS:--api callback}
CONFIG=${CONFIG:-iii}
SAMPLES=${SAMPLES:-20}
ECHOLOAD=${ECHOLOAD:-/tmp/perf-work/bin/echoload}
PORT=${PORT:-17640}
MPORT=$((PORT + 1))
[[ -x $ECHOLOAD ]] || { echo "healthz-under-load.sh: no echoload at $ECHOLOAD (run ../shared/bench/run.sh once, or set ECHOLOAD)" >&2; exit 2; }
case $CONFIG in
i) load="-c 1000 -s 12 -d 1" ;; ii) load="-c 100 -s 512 -d 1" ;;
iii) load="-c 10 -s 4096 -d 8" ;; iv) load="-c 16 -s 65536 -d 4" ;;
*) echo "unknown config $CONFIG" >&2; exit 2 ;;
esac
SPID= LPID=
cleanup() {
	for p in $LPID $SPID; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	SPID= LPID=
}
trap cleanup EXIT
# shellcheck disable=SC2086
GOMAXPROCS=1 taskset -c 0 "$BIN" -addr 127.0.0.1:$PORT -loops 1 -metrics-addr 127.0.0.1:$MPORT $ARGS >/dev/null 2>&1 &
SPID=$!
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$MPORT) 2>/dev/null && break; sleep 0.05; done
out=$(mktemp)
# shellcheck disable=SC2086
taskset -c 1 "$ECHOLOAD" -p $PORT $load -w 1 -t 5 >"$out" &
LPID=$!
sleep 1.5
for _ in $(seq "$SAMPLES"); do
	taskset -c 1 curl -s -o /dev/null -m 5 -w '%{time_total}\n' "http://127.0.0.1:$MPORT/healthz"
	sleep 0.1
done | sort -n | awk '{a[NR] = $1} END {printf "healthz seconds: median %s max %s (%d samples)\n", a[int((NR + 1) / 2)], a[NR], NR}'
wait "$LPID" || true
LPID=
grep -o 'tps=[0-9]*' "$out" || echo "load: $(cat "$out")"
rm -f "$out"
