#!/usr/bin/env bash
# HTTPS servers side by side (bench/cmd/h1-server -tls: a self-signed ECDSA
# P-256 certificate, HTTP/1.1, a 13-byte body): uringhttp (TLS on the
# loops), net/http on Go's net twice (the second copy, nethttp@aa, is the
# A/A control) and nbio's nbhttp (its fork of crypto/tls on its loops), in
# alternating rounds (A B C D A B C D ...), each measurement under
# `flock /tmp/uringrt-bench.lock`; prints medians and ratios.
#
#   scripts/bench-tls.sh                         # ROUNDS=5 DUR=5
#   flock /tmp/uringrt-bench.lock env NOLOCK=1 scripts/bench-tls.sh   # the lock once for the run
#   WORKLOADS=ka SERVERS="uringhttp nethttp" scripts/bench-tls.sh
#
# Workloads (pinned: the server on CPU 0 with GOMAXPROCS=1 and one loop or
# poller, wrk -t1 on CPU 1; wrk speaks TLS 1.3 with OpenSSL):
#   ka     keep-alive, wrk -c200
#   close  Connection: close, wrk -c100: a full handshake per request (wrk
#          resumes nothing)
#   idle   IDLE_CONNS (15,000) idle keep-alive connections after one request
#          each (bench/cmd/h1-idle -tls, Go's TLS 1.3 client): the server's
#          RSS per connection and goroutines, read after a GC (SIGUSR1)
# Environment: WORKLOADS SERVERS ROUNDS DUR IDLE_CONNS PORT OUT NOLOCK (1: the caller holds the lock)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORKLOADS=${WORKLOADS:-ka close idle}
SERVERS=${SERVERS:-uringhttp nethttp nbhttp nethttp@aa}
ROUNDS=${ROUNDS:-5}
DUR=${DUR:-5}
IDLE_CONNS=${IDLE_CONNS:-15000}
PORT=${PORT:-17640}
OUT=${OUT:-/tmp/bench-tls-$(date +%Y%m%d-%H%M%S)}
LOCK=/tmp/uringrt-bench.lock
mkdir -p "$OUT/bin"
RAW=$OUT/raw.txt
: >"$RAW"
command -v wrk >/dev/null || { echo "bench-tls.sh: wrk not installed (apt-get install wrk)" >&2; exit 2; }
echo "# building into $OUT/bin" >&2
(cd "$ROOT/bench" && go build -o "$OUT/bin/h1-server" ./cmd/h1-server && go build -o "$OUT/bin/h1-idle" ./cmd/h1-idle)
. "$ROOT/scripts/lib.sh"
CLK=$(getconf CLK_TCK)
ulimit -n 20000 2>/dev/null || true

# start_server SERVER: on CPU 0, GOMAXPROCS=1, one loop; sets SPID.
start_server() {
	GOMAXPROCS=1 taskset -c 0 "$OUT/bin/h1-server" -server "${1%%@*}" -tls -addr "127.0.0.1:$PORT" -size 13 -loops 1 >>"$OUT/srv.log" 2>&1 &
	SPID=$!
	wait_port
}

# one WORKLOAD SERVER ROUND: one measurement (run under the lock).
one() {
	local w=$1 s=$2 r=$3 url=https://127.0.0.1:$PORT/ out extra=()
	start_server "$s"
	if [[ $w == idle ]]; then
		kill -USR1 "$SPID"
		sleep 1
		local b a
		b=$(grep '^stats ' "$OUT/srv.log" | tail -1)
		coproc IDLER { taskset -c 1 "$OUT/bin/h1-idle" -tls -addr "127.0.0.1:$PORT" -n "$IDLE_CONNS" 2>>"$OUT/clients.log"; }
		read -r _ n <&"${IDLER[0]}" || true
		sleep 2
		kill -USR1 "$SPID"
		sleep 1.5
		a=$(grep '^stats ' "$OUT/srv.log" | tail -1)
		eval "exec ${IDLER[1]}>&-"
		wait "$IDLER_PID" 2>/dev/null || true
		cleanup
		awk -v s="$s" -v r="$r" -v n="${n:-0}" -v b="$b" -v a="$a" 'BEGIN{
			split(b, x, "[ =]"); split(a, y, "[ =]")
			printf "workload=idle server=%s round=%d conns=%d bytes_per_conn=%.0f goroutines_before=%d goroutines_after=%d\n",
				s, r, n, (n ? (y[3] - x[3]) / n : 0), x[5], y[5] }' | tee -a "$RAW" >&2
		return
	fi
	[[ $w == close ]] && extra=(-H 'Connection: close')
	local c=200
	[[ $w == close ]] && c=100
	local t0 t1
	t0=$(cpu_ticks "$SPID")
	out=$(taskset -c 1 wrk -t1 -c$c -d"${DUR}s" "${extra[@]}" "$url")
	t1=$(cpu_ticks "$SPID")
	cleanup
	echo "$out" >>"$OUT/clients.log"
	if echo "$out" | grep -q -e 'Non-2xx' -e 'Socket errors'; then echo "# $w $s: $(echo "$out" | grep -e 'Non-2xx' -e 'Socket errors')" >&2; fi
	echo "$out" | awk -v w="$w" -v s="$s" -v r="$r" -v d=$((t1 - t0)) -v clk="$CLK" '/ requests in /{n=$1} /^Requests\/sec:/{rps=$2}
		END{printf "workload=%s server=%s round=%d requests=%d rps=%s srv_us_per_req=%.2f\n", w, s, r, n, rps, (n ? d * 1e6 / clk / n : 0)}' | tee -a "$RAW" >&2
}

median() { # WORKLOAD SERVER FIELD
	awk -v w="$1" -v b="$2" -v k="$3" '
	{ delete v; for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
	  if (v["workload"] == w && v["server"] == b && v[k] != "") a[++n] = v[k] }
	END { if (!n) { print "nan"; exit }
	  for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	  print (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2) }' "$RAW"
}

for w in $WORKLOADS; do
	rounds=$ROUNDS
	[[ $w == idle ]] && rounds=1
	for r in $(seq "$rounds"); do
		for s in $SERVERS; do
			[[ $w == idle && $s == *@* ]] && continue
			export -f one start_server cleanup wait_port cpu_ticks
			export OUT PORT DUR IDLE_CONNS RAW CLK SPID
			if [[ ${NOLOCK:-} == 1 ]]; then one "$w" "$s" "$r"; else flock "$LOCK" bash -c "one $w $s $r"; fi
			sleep 1
		done
	done
done

SUM=$OUT/summary.md
{
	echo "| workload | server | req/s (median of $ROUNDS) | vs net/http | server CPU us/req | CPU/req vs net/http |"
	echo "|---|---|---|---|---|---|"
	for w in $WORKLOADS; do
		[[ $w == idle ]] && continue
		base=$(median "$w" nethttp rps) bcpu=$(median "$w" nethttp srv_us_per_req)
		for s in $SERVERS; do
			awk -v w="$w" -v s="$s" -v r="$(median "$w" "$s" rps)" -v c="$(median "$w" "$s" srv_us_per_req)" -v base="$base" -v bcpu="$bcpu" \
				'function ratio(a, b) { return (a == "nan" || b == "nan" || b == 0) ? "-" : sprintf("%.2fx", a / b) }
				BEGIN { printf "| %s | %s | %.0f | %s | %s | %s |\n", w, s, r, ratio(r, base), c, ratio(c, bcpu) }'
		done
	done
	if grep -q 'workload=idle' "$RAW"; then
		echo
		echo "| idle TLS keep-alive connections | server | RSS per connection | goroutines before -> after |"
		echo "|---|---|---|---|"
		awk '/workload=idle/{ delete v; for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
			printf "| %d | %s | %.2f KiB | %d -> %d |\n", v["conns"], v["server"], v["bytes_per_conn"] / 1024, v["goroutines_before"], v["goroutines_after"] }' "$RAW"
	fi
} >"$SUM"
cat "$SUM"
echo "# raw: $RAW" >&2
