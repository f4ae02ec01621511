#!/usr/bin/env bash
# The one-command echo benchmark of uringrt: Go's net against the runtime's
# two APIs, in alternating rounds, with medians and ratios to Go's net.
#
# usage: scripts/bench.sh           Go's net (bench/cmd/std-echo), echo-server's
#                                   default net.Conn API, echo-server -api callback,
#                                   and Go's net again as an A/A control
#        scripts/bench.sh -matrix   the same plus echo-server -backend std (the
#                                   runtime's fallback onto Go's net) and
#                                   -locked-loops (loops on locked threads
#                                   waiting in io_uring_enter)
#
# Each round runs every server once, in that order, a fresh process each,
# against echo-client -c CONNS -s SIZE for DURATION after a 1 s warm-up. The
# summary gives, per server, the medians of msgs/s, server CPU per message
# and p99, each beside its ratio to Go's net's median and the range of its
# ratios to Go's net of the same round, and which path used the ring:
# the SQEs and CQEs per message counted by the server's /metrics over the
# measured window. The A/A control is a second Go's net server in every
# round: its ratio is how far two identical servers differ on this machine
# at this moment, so read the other ratios against it.
#
# Environment: ROUNDS (default 3), DURATION (measured window, default 5s),
# CONNS (default 1000), SIZE (default 12 bytes), PIN (1: each server on
# CPU 0 with GOMAXPROCS=1, the client on CPU 1; default 0: both unpinned,
# with the defaults, as a user runs them).
# The servers listen on 127.0.0.1:7777, echo-server's metrics on 127.0.0.1:9100.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$ROOT/bin
SERVER=$BIN/echo-server
CLIENT=$BIN/echo-client
STDECHO=$BIN/std-echo
ADDR=127.0.0.1:7777
PORT=7777
METRICS_ADDR=127.0.0.1:9100
METRICS_PORT=9100
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5s}
CONNS=${CONNS:-1000}
SIZE=${SIZE:-12}
PIN=${PIN:-0}
LOGDIR=$(mktemp -d "${TMPDIR:-/tmp}/uringrt-bench.XXXXXX")

log() { echo "bench: $*" >&2; }
die() { log "$*"; exit 1; }

VARIANTS=(net conn callback net2)
case ${1:-} in
'') ;;
-matrix) VARIANTS=(net conn callback std locked net2) ;;
*) echo "usage: scripts/bench.sh [-matrix]" >&2; exit 2 ;;
esac
case $ROUNDS in '' | *[!0-9]* | 0) echo "bench: ROUNDS must be a positive integer" >&2; exit 2 ;; esac
case $PIN in
0) SRV_PREFIX=() CLI_PREFIX=() ;;
1)
	command -v taskset >/dev/null || die "PIN=1 needs taskset (util-linux)"
	[ "$(nproc)" -ge 2 ] || die "PIN=1 needs two CPUs"
	SRV_PREFIX=(env GOMAXPROCS=1 taskset -c 0) CLI_PREFIX=(taskset -c 1)
	;;
*) echo "bench: PIN must be 0 or 1" >&2; exit 2 ;;
esac

# variant_label NAME: how the summary names a server.
variant_label() {
	case $1 in
	net) echo "Go's net (bench/cmd/std-echo)" ;;
	net2) echo "Go's net again (A/A control)" ;;
	conn) echo "uringrt net.Conn (echo-server)" ;;
	callback) echo "uringrt callback (-api callback)" ;;
	std) echo "uringrt -backend std" ;;
	locked) echo "uringrt net.Conn -locked-loops" ;;
	esac
}

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
# start_server VARIANT: start its server, wait up to 10 s for it to accept.
start_server() {
	local cmd
	case $1 in
	net | net2) cmd=("$STDECHO" -addr "$ADDR") ;;
	conn) cmd=("$SERVER" -addr "$ADDR" -metrics-addr "$METRICS_ADDR") ;;
	callback) cmd=("$SERVER" -addr "$ADDR" -metrics-addr "$METRICS_ADDR" -api callback) ;;
	std) cmd=("$SERVER" -addr "$ADDR" -metrics-addr "$METRICS_ADDR" -backend std) ;;
	locked) cmd=("$SERVER" -addr "$ADDR" -metrics-addr "$METRICS_ADDR" -locked-loops) ;;
	esac
	wait_free "$PORT" || die "port $PORT is in use by another process"
	wait_free "$METRICS_PORT" || die "port $METRICS_PORT is in use by another process"
	local slog=$LOGDIR/server.log
	"${SRV_PREFIX[@]}" "${cmd[@]}" >"$slog" 2>&1 &
	SERVER_PID=$!
	local i
	for i in $(seq 1 100); do
		if ! kill -0 "$SERVER_PID" 2>/dev/null; then
			SERVER_PID=
			cat "$slog" >&2
			die "${cmd[*]} exited before accepting connections"
		fi
		port_busy "$PORT" && return 0
		sleep 0.1
	done
	stop_server
	die "${cmd[*]} did not accept on $ADDR within 10 s"
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

# client VARIANT: one measured run against the running server; prints the
# summary line (with the ring's counts for a uringrt server).
client() {
	local metrics=()
	case $1 in net | net2) ;; *) metrics=(-metrics-url "http://$METRICS_ADDR/metrics") ;; esac
	"${CLI_PREFIX[@]}" "$CLIENT" -addr "$ADDR" -c "$CONNS" -s "$SIZE" -d "$DURATION" \
		-server-pid "$SERVER_PID" "${metrics[@]}" 2>"$LOGDIR/client.log"
	local rc=$?
	[ $rc -eq 0 ] || { tail -n 5 "$LOGDIR/client.log" >&2; log "echo-client exited $rc"; }
	return $rc
}

log "building bin/echo-server, bin/echo-client and bin/std-echo"
mkdir -p "$BIN"
(cd "$ROOT" && go build -o "$SERVER" ./cmd/echo-server && go build -o "$CLIENT" ./cmd/echo-client) || die "build failed"
(cd "$ROOT/bench" && go build -o "$STDECHO" ./cmd/std-echo) || die "build of bench/cmd/std-echo failed"

if [ "$PIN" = 1 ]; then
	SETUP="pinned: each server on CPU 0 with GOMAXPROCS=1, the client on CPU 1"
else
	SETUP="unpinned with the defaults (GOMAXPROCS=$(nproc) for each; PIN=1 pins)"
fi
log "${#VARIANTS[@]} servers x $ROUNDS rounds of echo-client -c $CONNS -s $SIZE -d $DURATION; $SETUP"

RESULTS=$LOGDIR/results.txt
failed=0
for round in $(seq 1 "$ROUNDS"); do
	for v in "${VARIANTS[@]}"; do
		start_server "$v"
		line=$(client "$v") || failed=1
		stop_server
		log "round $round/$ROUNDS $v: ${line:-FAILED}"
		[ -n "$line" ] && echo "round=$round variant=$v $line" >>"$RESULTS"
	done
done
[ -s "$RESULTS" ] || die "no run succeeded"

echo "echo benchmark: echo-client -c $CONNS -s $SIZE -d $DURATION, $ROUNDS alternating rounds, $SETUP."
echo "Medians; beside each, its ratio to Go's net's median, and the range of its ratios to Go's net of the same round."
echo
labels=""
for v in "${VARIANTS[@]}"; do labels="$labels$v=$(variant_label "$v");"; done
awk -v labels="$labels" -v order="${VARIANTS[*]}" '
function median(arr, n,   i, j, t, a) {
	if (n == 0) return "";
	for (i = 1; i <= n; i++) a[i] = arr[i];
	for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
	return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
# stat V K: median of K over V'"'"'s runs; sets RATIO to the ratio of that
# median to net'"'"'s and the range of the per-round ratios to net, or "" when
# net has no value for K.
function stat(v, k,   r, n, m, lo, hi, vals, nets, x, med, nmed) {
	n = 0; m = 0; lo = ""; hi = ""
	for (r = 1; r <= rounds; r++) {
		if (!((v, r, k) in val)) continue
		vals[++n] = val[v, r, k]
		if ((("net", r, k) in val) && val["net", r, k] > 0) {
			nets[++m] = val["net", r, k]
			x = val[v, r, k] / val["net", r, k]
			if (lo == "" || x < lo) lo = x
			if (hi == "" || x > hi) hi = x
		}
	}
	med = median(vals, n); nmed = median(nets, m)
	RATIO = (m == 0 || nmed == 0) ? "" : (m == 1 ? sprintf("%.2fx", med / nmed) : sprintf("%.2fx (%.2f-%.2f)", med / nmed, lo, hi))
	return med
}
function cell(v, k, fmt,   x) {
	x = stat(v, k)
	if (v == "net") RATIO = "1.00x"
	return x == "" ? "-" : sprintf("%-7s %s", sprintf(fmt, x), RATIO)
}
{
	for (i = 1; i <= NF; i++) {
		split($i, kv, "=")
		if (kv[1] == "round") r = kv[2]; else if (kv[1] == "variant") v = kv[2]; else f[kv[1]] = kv[2]
	}
	for (k in f) val[v, r, k] = f[k]
	delete f
	if (r > rounds) rounds = r
}
END {
	n = split(labels, ls, ";"); for (i = 1; i < n; i++) { split(ls[i], p, "="); label[p[1]] = p[2] }
	nv = split(order, vs, " ")
	printf "%-34s %-27s %-27s %s\n", "server", "msgs/s", "server CPU ns/msg", "p99 us"
	for (i = 1; i <= nv; i++) {
		v = vs[i]
		printf "%-34s %-27s %-27s %s\n", label[v], cell(v, "tps", "%.0f"), cell(v, "server_cpu_ns_per_msg", "%.0f"), cell(v, "p99_us", "%.0f")
	}
	print ""
	print "Which path used the ring (the server'"'"'s /metrics over the measured window, medians):"
	for (i = 1; i <= nv; i++) {
		v = vs[i]
		if (v == "net" || v == "net2") continue
		sq = stat(v, "server_sqes_per_msg"); cq = stat(v, "server_cqes_per_msg"); ce = stat(v, "cqes_per_enter")
		if (cq == "") {
			printf "  %-32s no /metrics figures (see the round lines above)\n", label[v]
		} else if (cq + 0 < 0.005) {
			printf "  %-32s readers waited in Go'"'"'s netpoller: the ring reaped no CQEs (%.3f SQEs, %.3f CQEs a message)\n", label[v], sq, cq
		} else {
			printf "  %-32s the ring: %.2f SQEs and %.2f CQEs a message%s\n", label[v], sq, cq, ce == "" ? "" : sprintf(", %.1f CQEs an io_uring_enter", ce)
		}
	}
	printf "  %-32s epoll through Go'"'"'s netpoller, no ring\n", label["net"]
	print ""
	print "Go'"'"'s net again (A/A) is a second copy of the baseline in every round: two identical servers"
	print "differ by its ratio on this machine now, so a ratio inside its range is no difference."
}' "$RESULTS"
exit $failed
