#!/usr/bin/env bash
# A/B of echo-server variants with the independent load generator of
# ../shared/bench (echoload, built there by its run.sh), alternating rounds
# (A B A B ...), medians; server pinned to CPU 0 (GOMAXPROCS=1, one loop),
# client to CPU 1, as in ../shared/bench/run.sh.
#
#   A="-api callback" B="-api callback -inc-buffers" CONFIGS="iii iv" scripts/ab-echo.sh
#
# Environment: A B (echo-server flags of each variant), BIN (echo-server,
# default bin/echo-server; BIN_A and BIN_B override it per variant), ECHOLOAD (default /tmp/perf-work/bin/echoload),
# CONFIGS [i ii iii iv], ROUNDS [3], DUR WARM [5 1], PORT [17630], OUT.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$ROOT/bin/echo-server}
ECHOLOAD=${ECHOLOAD:-/tmp/perf-work/bin/echoload}
CONFIGS=${CONFIGS:-i ii iii iv}
ROUNDS=${ROUNDS:-3}
DUR=${DUR:-5}
WARM=${WARM:-1}
PORT=${PORT:-17630}
OUT=${OUT:-/tmp/ab-echo-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
RAW=$OUT/raw.txt
: >"$RAW"
[[ -x $ECHOLOAD ]] || { echo "ab-echo.sh: no echoload at $ECHOLOAD (run ../shared/bench/run.sh once, or set ECHOLOAD)" >&2; exit 2; }
SPID=
cleanup() { if [[ -n $SPID ]]; then kill "$SPID" 2>/dev/null || true; wait "$SPID" 2>/dev/null || true; fi; SPID=; }
trap cleanup EXIT
cfg_args() {
	case $1 in
	i) echo "-c 1000 -s 12 -d 1" ;; ii) echo "-c 100 -s 512 -d 1" ;;
	iii) echo "-c 10 -s 4096 -d 8" ;; iv) echo "-c 16 -s 65536 -d 4" ;;
	*) echo "unknown config $1" >&2; exit 2 ;;
	esac
}
for cfg in $CONFIGS; do
	for r in $(seq "$ROUNDS"); do
		for v in A B; do
			args=${!v}
			vb=BIN_$v
			GOMAXPROCS=1 taskset -c 0 "${!vb:-$BIN}" -addr 127.0.0.1:$PORT -loops 1 -metrics-addr "" $args 2>>"$OUT/server.log" &
			SPID=$!
			for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.05; done
			sleep 0.2
			line=$(taskset -c 1 "$ECHOLOAD" -p "$PORT" $(cfg_args "$cfg") -w "$WARM" -t "$DUR" -P "$SPID" -l "$v")
			cleanup
			echo "cfg=$cfg round=$r variant=$v $line" | tee -a "$RAW" >&2
			sleep 0.3
		done
	done
done
echo "A: $A"
echo "B: $B"
awk '
function get(line, key) { if (match(line, " " key "=[^ ]*")) return substr(line, RSTART + length(key) + 2, RLENGTH - length(key) - 2); return "" }
function med(arr, n,   i, j, t, a) { for (i = 1; i <= n; i++) a[i] = arr[i]; for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t } return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
{ l = " " $0; k = get(l, "cfg") SUBSEP get(l, "variant"); n[k]++; cfgs[get(l, "cfg")] = 1
  split("tps p99_us srv_cpu_us_per_kmsg srv_vcsw_per_kmsg other_cpu", cols, " "); for (i in cols) v[k, cols[i], n[k]] = get(l, cols[i]) + 0 }
END { print "| cfg | A msgs/s | B msgs/s | B/A msgs/s | A us/kmsg | B us/kmsg | B/A CPU | A p99 us | B p99 us | A vcsw/k | B vcsw/k | other CPU % |"
  print "|---|---|---|---|---|---|---|---|---|---|---|---|"
  for (c in cfgs) { split("tps p99_us srv_cpu_us_per_kmsg srv_vcsw_per_kmsg other_cpu", cols, " ")
    for (x = 1; x <= 2; x++) { V = x == 1 ? "A" : "B"; k = c SUBSEP V; for (i in cols) { for (j = 1; j <= n[k]; j++) t[j] = v[k, cols[i], j]; M[V, cols[i]] = med(t, n[k]) } }
    printf "| %s | %.0f | %.0f | %.2fx | %.0f | %.0f | %.2fx | %.0f | %.0f | %.1f | %.1f | %.0f |\n", c, M["A","tps"], M["B","tps"], M["B","tps"]/M["A","tps"], M["A","srv_cpu_us_per_kmsg"], M["B","srv_cpu_us_per_kmsg"], M["B","srv_cpu_us_per_kmsg"]/M["A","srv_cpu_us_per_kmsg"], M["A","p99_us"], M["B","p99_us"], M["A","srv_vcsw_per_kmsg"], M["B","srv_vcsw_per_kmsg"], (M["A","other_cpu"]+M["B","other_cpu"])/2 } }' "$RAW" | tee "$OUT/summary.md"
