#!/usr/bin/env bash
# WebSocket servers side by side (bench/cmd/ws-server: gorilla/websocket on
# net/http, nbio's nbhttp websocket, uringws on uringhttp, plus a second
# gorilla as the A/A control), one load client for all (bench/wsload, C,
# single-threaded epoll), in alternating rounds; prints medians and ratios.
#
#   scripts/bench-ws.sh                       # everything, ROUNDS=5
#   SCENARIOS="echo-pinned" ROUNDS=3 scripts/bench-ws.sh
#   SERVERS="gorilla uringws" scripts/bench-ws.sh
#
# Scenarios:
#   echo-pinned    1,000 connections, 1 KiB binary messages, depth 1; server
#                  on CPU 0 with GOMAXPROCS=1 (one loop, one nbio poller),
#                  wsload on CPU 1: messages/s, p50/p99, server CPU
#   echo-unpinned  the same without taskset, GOMAXPROCS and loops default
#   bcast          10,000 connections on /bcast, pinned as echo-pinned; one
#                  publishes 1 KiB, 4 broadcasts in flight; deliveries/s
#                  (gorilla and uringws encode each broadcast once: prepared
#                  messages)
#   idle           15,000 connections (IDLE_CONNS) each echo one message and
#                  stay open: server RSS growth per connection (after a GC,
#                  /stats) and goroutines, without and with permessage-deflate
#                  negotiated (idle-deflate)
# wsload prints server CPU per message (srv_ns_per_msg), the figure that
# stays comparable when other work on the machine starves both processes.
# Each measurement holds /tmp/uringrt-bench.lock (NOLOCK=1: the caller holds
# it for the whole run, `flock /tmp/uringrt-bench.lock env NOLOCK=1 ...`). nbio runs with its
# handlers on the poller (-nbio-inline), its faster setting here.
# Environment: SCENARIOS SERVERS ROUNDS DUR WARM IDLE_CONNS PORT OUT NOLOCK
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SCENARIOS=${SCENARIOS:-echo-pinned echo-unpinned bcast idle idle-deflate}
SERVERS=${SERVERS:-gorilla nbio uringws gorilla@aa}
ROUNDS=${ROUNDS:-5}
DUR=${DUR:-5}
WARM=${WARM:-2}
IDLE_CONNS=${IDLE_CONNS:-15000}
PORT=${PORT:-17900}
OUT=${OUT:-/tmp/bench-ws-$(date +%Y%m%d-%H%M%S)}
LOCK=/tmp/uringrt-bench.lock
mkdir -p "$OUT/bin"
RAW=$OUT/raw.txt
: >"$RAW"
. "$ROOT/scripts/lib.sh"

echo "# building into $OUT/bin" >&2
(cd "$ROOT/bench" && GOFLAGS="${GOFLAGS:-} -mod=mod" go build -o "$OUT/bin/ws-server" ./cmd/ws-server)
cc -O2 -Wall -o "$OUT/bin/wsload" "$ROOT/bench/wsload/wsload.c" "$ROOT/bench/wsload/run.c" -lm
have=$("$OUT/bin/ws-server" -list)
ulimit -n 20000

# Connection bursts of 10,000-15,000 need listen backlogs and a device
# backlog above the defaults; raise them for the run and restore them.
old_somax=$(sysctl -n net.core.somaxconn 2>/dev/null || echo)
old_backlog=$(sysctl -n net.core.netdev_max_backlog 2>/dev/null || echo)
restore() {
	cleanup
	[[ -n $old_somax ]] && sysctl -qw net.core.somaxconn="$old_somax" >/dev/null 2>&1 || true
	[[ -n $old_backlog ]] && sysctl -qw net.core.netdev_max_backlog="$old_backlog" >/dev/null 2>&1 || true
}
trap restore EXIT
sysctl -qw net.core.somaxconn=16384 >/dev/null 2>&1 || echo "# could not raise somaxconn" >&2
sysctl -qw net.core.netdev_max_backlog=16384 >/dev/null 2>&1 || true

# start SERVER PINNED DEFLATE: start ws-server (NAME or NAME@LABEL) on the next port.
start() {
	local srv=${1%@*} pinned=$2 deflate=$3 pre=() flags=()
	PORT=$((PORT + 2))
	[[ $pinned == 1 ]] && pre=(env GOMAXPROCS=1 taskset -c 0) && flags=(-loops 1)
	[[ $srv == nbio ]] && flags+=(-nbio-inline)
	[[ $deflate == 1 ]] && flags+=(-deflate)
	"${pre[@]}" "$OUT/bin/ws-server" -server "$srv" -addr 127.0.0.1:$PORT -stats-addr 127.0.0.1:$((PORT + 1)) "${flags[@]}" >/dev/null 2>&1 &
	SPID=$!
	wait_port
}

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
gstat() { curl -s "127.0.0.1:$((PORT + 1))/stats" | awk '/goroutines/ {print $2}'; }

# measure SCENARIO SERVER: one round; appends "SCENARIO SERVER key=value..." to RAW.
measure() {
	local sc=$1 srv=$2 line
	case $sc in
	echo-pinned | bcast)
		start "$srv" 1 0
		if [[ $sc == bcast ]]; then
			line=$(taskset -c 1 "$OUT/bin/wsload" -a 127.0.0.1:$PORT -m bcast -c 10000 -s 1024 -d 4 -w "$WARM" -t "$DUR" -P "$SPID" -k 500)
		else
			line=$(taskset -c 1 "$OUT/bin/wsload" -a 127.0.0.1:$PORT -m echo -c 1000 -s 1024 -w "$WARM" -t "$DUR" -P "$SPID")
		fi ;;
	echo-unpinned)
		start "$srv" 0 0
		line=$("$OUT/bin/wsload" -a 127.0.0.1:$PORT -m echo -c 1000 -s 1024 -w "$WARM" -t "$DUR" -P "$SPID") ;;
	idle | idle-deflate)
		local z=() before g0 after g1 ready
		[[ $sc == idle-deflate ]] && z=(-z)
		start "$srv" 0 1
		g0=$(gstat)
		before=$(rss_kb "$SPID")
		coproc LOAD { "$OUT/bin/wsload" -a 127.0.0.1:$PORT -m idle -c "$IDLE_CONNS" -s 1024 -t 30 -k 500 "${z[@]}"; }
		read -r ready <&"${LOAD[0]}" || true
		g1=$(gstat)
		after=$(rss_kb "$SPID")
		kill "$LOAD_PID" 2>/dev/null || true
		wait "$LOAD_PID" 2>/dev/null || true
		line="$ready rss_before_kb=$before rss_after_kb=$after per_conn_b=$(((after - before) * 1024 / IDLE_CONNS)) goroutines_before=$g0 goroutines_after=$g1" ;;
	esac
	cleanup
	echo "$sc $srv $line" | tee -a "$RAW" >&2
}

for sc in $SCENARIOS; do
	for r in $(seq "$ROUNDS"); do
		for srv in $SERVERS; do
			grep -qx "${srv%@*}" <<<"$have" || { echo "# $srv: not built into ws-server, skipped" >&2; continue; }
			if [[ ${NOLOCK:-0} != 1 ]]; then exec 9>"$LOCK" && flock 9; fi
			measure "$sc" "$srv" || echo "$sc $srv FAILED" | tee -a "$RAW" >&2
			if [[ ${NOLOCK:-0} != 1 ]]; then flock -u 9; fi
		done
	done
done

# Medians per scenario and server, and ratios against gorilla and nbio.
awk '
function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
{ key = $1 " " $2; if (!(key in seen)) { seen[key] = 1; order[++k] = key }
  for (i = 3; i <= NF; i++) { split($i, kv, "="); if (kv[2] != "") { n[key, kv[1]]++; v[key, kv[1], n[key, kv[1]]] = kv[2]; f[kv[1]] = 1 } } }
END {
  for (x = 1; x <= k; x++) { key = order[x]; split(key, ks, " "); sc = ks[1]; srv = ks[2]
    line = sprintf("%-14s %-12s", sc, srv)
    for (fld in f) if ((key, fld) in n) { m = n[key, fld]; delete a; for (i = 1; i <= m; i++) a[i] = v[key, fld, i] + 0
      M[key, fld] = med(a, m); line = line sprintf(" %s=%g", fld, M[key, fld]) }
    print line }
  print ""
  for (x = 1; x <= k; x++) { key = order[x]; split(key, ks, " "); sc = ks[1]; srv = ks[2]
    nf = split((sc ~ /^idle/) ? "per_conn_b" : "msgs_per_s srv_ns_per_msg", flds, " ")
    for (q = 1; q <= nf; q++) { fld = flds[q]
    for (b = 1; b <= 2; b++) { base = sc " " (b == 1 ? "gorilla" : "nbio")
      if (srv != (b == 1 ? "gorilla" : "nbio") && ((base, fld) in M) && M[base, fld] > 0)
        printf "%-14s %-12s %s %.2fx %s\n", sc, srv, fld, M[key, fld] / M[base, fld], (b == 1 ? "gorilla" : "nbio") } } } }
' "$RAW" | tee "$OUT/summary.txt"
echo "# raw rounds: $RAW" >&2
