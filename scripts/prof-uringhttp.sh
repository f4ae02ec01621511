#!/usr/bin/env bash
# Where a request's CPU goes: uringhttp and fasthttp (bench/cmd/h1-server),
# each pinned to CPU 0 with GOMAXPROCS=1 under wrk -t1 -c200 on CPU 1
# (13-byte body, keep-alive); perf records CPU 0 (cpu-clock, call graphs)
# for PERF_SECS while wrk runs, then prints each server's top symbols
# (self time) and the samples per request, into $OUT/report-SERVER.txt.
#
#   scripts/prof-uringhttp.sh                 # DUR=8 PERF_SECS=4
#   SERVERS="uringhttp fasthttp nethttp" scripts/prof-uringhttp.sh
# Needs perf (linux-perf) and wrk; run as root (perf -a).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SERVERS=${SERVERS:-uringhttp fasthttp}
DUR=${DUR:-8}
PERF_SECS=${PERF_SECS:-4}
PORT=${PORT:-17640}
TOP=${TOP:-40}
OUT=${OUT:-/tmp/prof-uringhttp-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT/bin"
for tool in wrk perf; do
	command -v $tool >/dev/null || { echo "prof-uringhttp.sh: $tool not installed" >&2; exit 2; }
done
(cd "$ROOT/bench" && go build -o "$OUT/bin/h1-server" ./cmd/h1-server)
. "$ROOT/scripts/lib.sh"

for s in $SERVERS; do
	GOMAXPROCS=1 taskset -c 0 "$OUT/bin/h1-server" -server "$s" -addr "127.0.0.1:$PORT" -size 13 -loops 1 >>"$OUT/servers.log" 2>&1 &
	SPID=$!
	wait_port
	taskset -c 1 wrk -t1 -c200 -d"${DUR}s" "http://127.0.0.1:$PORT/" >"$OUT/wrk-$s.txt" &
	WPID=$!
	sleep 2
	perf record -o "$OUT/perf-$s.data" -a -C 0 -e cpu-clock -g -- sleep "$PERF_SECS" >/dev/null 2>&1
	wait $WPID
	cleanup
	rps=$(awk '/^Requests\/sec:/{print $2}' "$OUT/wrk-$s.txt")
	# the server's own CPU time (CPU 0 is shared with whatever else runs
	# there): cpu-clock's event count is in nanoseconds
	ns=$(perf report -i "$OUT/perf-$s.data" --stdio --no-children --sort comm -g none 2>/dev/null |
		awk '/^# Event count/{n = $NF} $NF == "h1-server" {gsub("%", "", $1); p = $1} END{ printf "%.0f", n * p / 100 }')
	us=$(awk -v ns="$ns" -v r="$rps" -v t="$PERF_SECS" 'BEGIN{ printf "%.2f", ns / 1000 / (r * t) }')
	{
		echo "# $s: $rps requests/s (wrk -t1 -c200, ${DUR}s); perf $PERF_SECS s of CPU 0: h1-server ran $((ns / 1000000)) ms, ~$us us of CPU a request"
		echo "# self %  us/request  symbol"
		perf report -i "$OUT/perf-$s.data" --stdio --no-children --comms h1-server --percentage relative --sort symbol -g none 2>/dev/null |
			awk -v us="$us" '/^#/ || NF < 3 {next} { p = $1; sub("%", "", p); sym = $3; for (i = 4; i <= NF && $i != "-"; i++) sym = sym " " $i; printf "%7.2f%%  %8.3f  %s\n", p, p * us / 100, sym }' | awk -v top="$TOP" 'NR <= top'
		# (awk, not head: under pipefail perf's SIGPIPE would end the script)
		echo "# by component: self %, us/request"
		perf report -i "$OUT/perf-$s.data" --stdio --no-children --comms h1-server --percentage relative --sort symbol -g none 2>/dev/null |
			awk -v us="$us" '/^#/ || NF < 3 {next}
			{ p = $1; sub("%", "", p); k = $2; sym = $3
			  if (k == "[k]") c = "kernel"
			  else if (sym ~ /uringrt\/uringhttp/) c = "uringhttp (HTTP layer)"
			  else if (sym ~ /uringrt\/uringrt\/runtime/) c = "uringrt runtime (loop, ring, callbacks)"
			  else if (sym ~ /valyala\/fasthttp/) c = "fasthttp"
			  else if (sym ~ /^net\/http|^net\/textproto|^net\/url|^mime/) c = "net/http, textproto, url"
			  else if (sym ~ /^runtime\.|^internal\/runtime|^aeshash|^gcWriteBarrier|^runtime·/) c = "Go runtime (scheduler, malloc, GC, maps)"
			  else if (sym ~ /^sync|^context|^time\.|^strconv|^bytes\.|^strings\.|^internal\/bytealg|^indexbyte|^bufio|^io\.|^fmt|^sort|^unicode|^errors/) c = "std (sync, context, time, bytes, ...)"
			  else if (sym ~ /^internal\/poll|^syscall|^internal\/runtime\/syscall|^net\./) c = "Go net, poll, syscall"
			  else c = "other (" k ")"
			  t[c] += p }
			END { for (c in t) printf "%7.2f%%  %8.3f  %s\n", t[c], t[c] * us / 100, c }' | sort -rn
	} >"$OUT/report-$s.txt"
	cat "$OUT/report-$s.txt"
	sleep 1
done
echo "reports: $OUT/report-*.txt" >&2
