#!/usr/bin/env bash
# Scaling on one machine: the echo-server with 1 loop and with 2 loops
# (with and without -reuseport) side by side with Go's net at GOMAXPROCS=1
# and 2, in alternating rounds (A B C D E A B C D E ...). Reports per
# server the median messages/s, the median server CPU (% of one core) and
# messages/s per server core (msgs/s / (srv_cpu/100)), and the ratios.
#
#   bench/scaling.sh                      # defaults below
#   ROUNDS=5 DUR=5 bench/scaling.sh
#
# Environment [defaults]: ROUNDS [3], DUR WARM seconds [5 1], CONNS SIZE
# DEPTH [1000 12 1] (echoload -c -s -d), PORT [17201], WORK [/tmp/uringrt-
# scaling], SHARED (the shared harness, for echoload.c) [../shared/bench,
# else /work/shared/bench],
# SERVERS [std-1 std-2 uring-1 uring-2 uring-2-reuseport conn-1 conn-2].
# QUIET_IDLE QUIET_MAX: before each run wait (at most QUIET_MAX s) until the
# machine is QUIET_IDLE % idle [80 60]. Nothing is pinned: two loops need both cores, and the client (one
# thread) shares them, so compare msgs/s per server core.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
DUR=${DUR:-5}
WARM=${WARM:-1}
CONNS=${CONNS:-1000}
SIZE=${SIZE:-12}
DEPTH=${DEPTH:-1}
PORT=${PORT:-17201}
WORK=${WORK:-/tmp/uringrt-scaling}
if [[ -z ${SHARED:-} ]]; then
	SHARED=../shared/bench
	[[ -d $SHARED ]] || SHARED=/work/shared/bench
fi
SERVERS=${SERVERS:-std-1 std-2 uring-1 uring-2 uring-2-reuseport conn-1 conn-2}
mkdir -p "$WORK"
OUT=$WORK/raw-$(date +%Y%m%d-%H%M%S).txt
: >"$OUT"

go build -o "$WORK/echo-server" ./cmd/echo-server
gcc -O2 -o "$WORK/echoload" "$SHARED/echoload/echoload.c"

# server NAME -> GMP and ARGS
server() {
	case $1 in
	std-1) GMP=1 ARGS="-backend std -api conn" ;;
	std-2) GMP=2 ARGS="-backend std -api conn" ;;
	uring-1) GMP=1 ARGS="-backend uring -api callback -loops 1" ;;
	uring-2) GMP=2 ARGS="-backend uring -api callback -loops 2" ;;
	uring-2-reuseport) GMP=2 ARGS="-backend uring -api callback -loops 2 -reuseport" ;;
	conn-1) GMP=1 ARGS="-backend uring -api conn -loops 1" ;;
	conn-2) GMP=2 ARGS="-backend uring -api conn -loops 2 -reuseport" ;;
	*) echo "unknown server $1" >&2; exit 2 ;;
	esac
}

QUIET_IDLE=${QUIET_IDLE:-80}
QUIET_MAX=${QUIET_MAX:-60}
# wait_quiet: wait (at most QUIET_MAX s) until the whole machine is
# QUIET_IDLE % idle; prints the last idle %.
wait_quiet() {
	local t0=$SECONDS a b idle=0 l
	while :; do
		read -r l </proc/stat; set -- $l; shift; a=($(($1 + $2 + $3 + $4 + $5 + $6 + $7 + $8)) $(($4 + $5)))
		sleep 0.5
		read -r l </proc/stat; set -- $l; shift; b=($(($1 + $2 + $3 + $4 + $5 + $6 + $7 + $8)) $(($4 + $5)))
		if ((b[0] > a[0])); then idle=$((100 * (b[1] - a[1]) / (b[0] - a[0]))); fi
		if ((idle >= QUIET_IDLE || SECONDS - t0 >= QUIET_MAX)); then break; fi
	done
	echo "$idle"
}

SPID=
cleanup() {
	if [[ -n $SPID ]]; then
		kill "$SPID" 2>/dev/null || true
		wait "$SPID" 2>/dev/null || true
	fi
	SPID=
}
trap cleanup EXIT

for ((r = 1; r <= ROUNDS; r++)); do
	for s in $SERVERS; do
		server "$s"
		pre_idle=$(wait_quiet)
		# shellcheck disable=SC2086
		GOMAXPROCS=$GMP "$WORK/echo-server" -addr 127.0.0.1:$PORT -metrics-addr "" $ARGS 2>>"$WORK/server.log" &
		SPID=$!
		for _ in $(seq 100); do
			if (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null; then break; fi
			sleep 0.05
		done
		sleep 0.2
		line=$("$WORK/echoload" -p "$PORT" -c "$CONNS" -s "$SIZE" -d "$DEPTH" -w "$WARM" -t "$DUR" -P "$SPID" -l "$s") && rc=0 || rc=$?
		cleanup
		echo "round=$r rc=$rc pre_idle=$pre_idle $line" | tee -a "$OUT" >&2
		sleep 0.5
	done
done

awk -v servers="$SERVERS" '
function get(line, key,   m) { if (match(line, " " key "=[^ ]*")) return substr(line, RSTART + length(key) + 2, RLENGTH - length(key) - 2); return "" }
function med(arr, n,   i, j, t, a) { for (i = 1; i <= n; i++) a[i] = arr[i]; for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t } return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
{
	line = " " $0; s = get(line, "label"); n[s]++
	if (get(line, "rc") != 0) bad[s]++
	tps[s, n[s]] = get(line, "tps") + 0; cpu[s, n[s]] = get(line, "srv_cpu") + 0; oth[s, n[s]] = get(line, "other_cpu") + 0
	pc[s, n[s]] = (cpu[s, n[s]] > 0) ? tps[s, n[s]] * 100 / cpu[s, n[s]] : 0
}
END {
	ns = split(servers, S, " ")
	printf "%-18s %5s %12s %9s %14s %8s %10s %5s\n", "server", "runs", "msgs/s", "srv_cpu%", "msgs/s/core", "x std-1", "other_cpu%", "bad"
	for (i = 1; i <= ns; i++) {
		s = S[i]; k = n[s]; if (!k) continue
		for (j = 1; j <= k; j++) { a[j] = tps[s, j]; b[j] = cpu[s, j]; c[j] = pc[s, j]; o[j] = oth[s, j] }
		mt[s] = med(a, k); mc[s] = med(b, k); mp[s] = med(c, k); mo[s] = med(o, k)
	}
	for (i = 1; i <= ns; i++) {
		s = S[i]; if (!n[s]) continue
		printf "%-18s %5d %12.0f %9.1f %14.0f %8.2f %10.1f %5d\n", s, n[s], mt[s], mc[s], mp[s], ("std-1" in mt && mt["std-1"] > 0) ? mt[s] / mt["std-1"] : 0, mo[s], bad[s] + 0
	}
}' "$OUT"
echo "raw: $OUT" >&2
