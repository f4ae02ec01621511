#!/usr/bin/env bash
# The one-command echo benchmark of uringrt.
#
# usage: scripts/bench.sh           one run: echo-server (default API and
#                                   backend) against echo-client -c 1000 -s 12 -d 10s
#        scripts/bench.sh -matrix   -api conn, -api callback and -backend std in
#                                   alternating rounds; medians and ratios to std
#
# Environment: ROUNDS (matrix rounds, default 3), DURATION (measured window,
# default 10s), CONNS (default 1000), SIZE (default 12).
# The server listens on 127.0.0.1:7777 with metrics on 127.0.0.1:9100.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$ROOT/bin
SERVER=$BIN/echo-server
CLIENT=$BIN/echo-client
ADDR=127.0.0.1:7777
PORT=7777
METRICS_ADDR=127.0.0.1:9100
METRICS_PORT=9100
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
CONNS=${CONNS:-1000}
SIZE=${SIZE:-12}
LOGDIR=$(mktemp -d "${TMPDIR:-/tmp}/uringrt-bench.XXXXXX")

log() { echo "bench: $*" >&2; }
die() { log "$*"; exit 1; }

MATRIX=
case ${1:-} in
'') ;;
-matrix) MATRIX=1 ;;
*) echo "usage: scripts/bench.sh [-matrix]" >&2; exit 2 ;;
esac
case $ROUNDS in '' | *[!0-9]* | 0) echo "bench: ROUNDS must be a positive integer" >&2; exit 2 ;; esac

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# wait_free PORT: up to 10 s for a previous server's port to be released.
wait_free() {
	local i
	for i in $(seq 1 100); do
		port_busy "$1" || return 0
		sleep 0.1
	done
	return 1
}

SERVER_PID=
# start_server ARGS...: start the server, wait up to 10 s for it to accept.
start_server() {
	wait_free "$PORT" || die "port $PORT is in use by another process"
	wait_free "$METRICS_PORT" || die "port $METRICS_PORT is in use by another process"
	local slog=$LOGDIR/server.log
	"$SERVER" -addr "$ADDR" -metrics-addr "$METRICS_ADDR" "$@" >"$slog" 2>&1 &
	SERVER_PID=$!
	local i
	for i in $(seq 1 100); do
		if ! kill -0 "$SERVER_PID" 2>/dev/null; then
			SERVER_PID=
			cat "$slog" >&2
			die "echo-server $* exited before accepting connections"
		fi
		port_busy "$PORT" && return 0
		sleep 0.1
	done
	stop_server
	die "echo-server $* did not accept on $ADDR within 10 s"
}

# stop_server: SIGTERM, up to 5 s, then SIGKILL.
stop_server() {
	[ -n "$SERVER_PID" ] || return 0
	local i
	kill -TERM "$SERVER_PID" 2>/dev/null
	for i in $(seq 1 50); do
		kill -0 "$SERVER_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$SERVER_PID" 2>/dev/null && { log "server ignored SIGTERM: SIGKILL"; kill -KILL "$SERVER_PID" 2>/dev/null; }
	wait "$SERVER_PID" 2>/dev/null
	SERVER_PID=
}
trap 'stop_server; exit 130' INT TERM
trap 'stop_server; rm -rf "$LOGDIR"' EXIT

# client: one measured run against the running server; prints the summary line.
client() {
	"$CLIENT" -addr "$ADDR" -c "$CONNS" -s "$SIZE" -d "$DURATION" \
		-server-pid "$SERVER_PID" -metrics-url "http://$METRICS_ADDR/metrics" 2>"$LOGDIR/client.log"
	local rc=$?
	[ $rc -eq 0 ] || { tail -n 5 "$LOGDIR/client.log" >&2; log "echo-client exited $rc"; }
	return $rc
}

# field LINE KEY: the value of KEY=value in a summary line, or "-".
field() { echo "$1" | tr ' ' '\n' | awk -F= -v k="$2" '$1 == k { print $2; f = 1 } END { if (!f) print "-" }'; }

log "building bin/echo-server and bin/echo-client"
mkdir -p "$BIN"
(cd "$ROOT" && go build -o "$SERVER" ./cmd/echo-server && go build -o "$CLIENT" ./cmd/echo-client) || die "build failed"

if [ -z "$MATRIX" ]; then
	start_server
	log "echo-server -api conn (the default; make bench-matrix compares it with -api callback and -backend std), pid $SERVER_PID on $ADDR; echo-client -c $CONNS -s $SIZE -d $DURATION"
	line=$(client)
	rc=$?
	stop_server
	[ -n "$line" ] || exit 1
	echo "$line"
	echo "  msgs/s:                              $(field "$line" tps)"
	echo "  latency p50 / p99 / p99.9 (us):      $(field "$line" p50_us) / $(field "$line" p99_us) / $(field "$line" p999_us)"
	echo "  CQEs per enter:                      $(field "$line" cqes_per_enter)"
	echo "  server context switches / 1000 msgs: $(field "$line" server_ctxsw_per_1k)"
	echo "  server CPU ns / msg:                 $(field "$line" server_cpu_ns_per_msg)"
	echo "  client CPU ns / msg:                 $(field "$line" client_cpu_ns_per_msg)"
	exit $rc
fi

# --- matrix ----------------------------------------------------------------------
VARIANTS=(conn callback std)
variant_args() {
	case $1 in
	conn) echo "-api conn" ;;
	callback) echo "-api callback" ;;
	std) echo "-backend std" ;;
	esac
}
RESULTS=$LOGDIR/matrix.txt
failed=0
for round in $(seq 1 "$ROUNDS"); do
	for v in "${VARIANTS[@]}"; do
		# shellcheck disable=SC2046
		start_server $(variant_args "$v")
		line=$(client) || failed=1
		stop_server
		log "round $round/$ROUNDS $v: ${line:-FAILED}"
		[ -n "$line" ] && echo "variant=$v $line" >>"$RESULTS"
	done
done
[ -s "$RESULTS" ] || die "no run succeeded"

echo "echo benchmark matrix: -c $CONNS -s $SIZE -d $DURATION, $ROUNDS rounds, medians (ratios to -backend std)"
awk '
function median(key,   n, i, j, t, a) {
	n = cnt[key]; if (n == 0) return "";
	for (i = 1; i <= n; i++) a[i] = val[key, i];
	for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
	return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function show(x, fmt) { return x == "" ? "-" : sprintf(fmt, x) }
function ratio(v, k) { return (median(v SUBSEP k) == "" || median("std" SUBSEP k) == "" || median("std" SUBSEP k) == 0) ? "" : sprintf("(%.2fx)", median(v SUBSEP k) / median("std" SUBSEP k)) }
{
	v = ""; for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "variant") v = kv[2]; else { k = v SUBSEP kv[1]; val[k, ++cnt[k]] = kv[2] } }
	if (!(v in seen)) { seen[v] = 1; order[++nv] = v }
}
END {
	printf "%-9s %18s %9s %9s %22s %18s %15s\n", "variant", "msgs/s", "p50_us", "p99_us", "server_cpu_ns/msg", "ctxsw/1k msgs", "cqes/enter"
	for (i = 1; i <= nv; i++) {
		v = order[i]
		printf "%-9s %10s %-7s %9s %9s %12s %-9s %9s %-8s %15s\n", v,
			show(median(v SUBSEP "tps"), "%.0f"), ratio(v, "tps"),
			show(median(v SUBSEP "p50_us"), "%.0f"), show(median(v SUBSEP "p99_us"), "%.0f"),
			show(median(v SUBSEP "server_cpu_ns_per_msg"), "%.0f"), ratio(v, "server_cpu_ns_per_msg"),
			show(median(v SUBSEP "server_ctxsw_per_1k"), "%.1f"), ratio(v, "server_ctxsw_per_1k"),
			show(median(v SUBSEP "cqes_per_enter"), "%.2f")
	}
}' "$RESULTS"
exit $failed
