#!/usr/bin/env bash
# Per-request counts of one HTTP/1.1 server of bench/cmd/h1-server under
# wrk: system calls (io_uring_enter, eventfd writes, futex, epoll_pwait,
# sendto, close ...), context switches and wake-ups, from
# `perf stat -e 'syscalls:sys_enter_*,sched:*' -p PID` for PERF_SECS in the
# middle of a DUR-second wrk run, divided by the requests wrk made then;
# with the server's and wrk's CPU per request from /proc.
#
#   scripts/count-uringhttp.sh                          # every server, close and unpinned
#   SERVERS="uringhttp fasthttp" MODES="ka close unpinned" scripts/count-uringhttp.sh
#   BIN=/tmp/h1-server-old SERVERS=uringhttp scripts/count-uringhttp.sh   # another build
#
# Modes: ka (server on CPU 0 with GOMAXPROCS=1 and one loop, wrk -t1 -c200
# on CPU 1), close (the same with -c100 and Connection: close), unpinned
# (GOMAXPROCS = cores, the default loops, wrk -t1 -c200 anywhere). Needs
# perf and wrk; run as root. Counts hardly depend on the machine's load,
# CPU per request does: run it under the bench lock.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SERVERS=${SERVERS:-uringhttp nethttp fasthttp}
MODES=${MODES:-close unpinned}
DUR=${DUR:-8}
PERF_SECS=${PERF_SECS:-3}
PORT=${PORT:-17650}
OUT=${OUT:-/tmp/count-uringhttp-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
for tool in wrk perf; do
	command -v $tool >/dev/null || { echo "count-uringhttp.sh: $tool not installed" >&2; exit 2; }
done
if [[ -z ${BIN:-} ]]; then
	BIN=$OUT/h1-server
	(cd "$ROOT/bench" && go build -o "$BIN" ./cmd/h1-server)
fi
. "$ROOT/scripts/lib.sh"
CLK=$(getconf CLK_TCK)
EV=sched:sched_switch,sched:sched_wakeup,cpu-migrations
for s in io_uring_enter write read sendto recvfrom ioctl getsockopt futex epoll_pwait epoll_ctl accept4 close shutdown setsockopt getsockname nanosleep sched_yield; do
	EV=$EV,syscalls:sys_enter_$s
done

for m in $MODES; do
	for s in $SERVERS; do
		wrk=(taskset -c 1 wrk -t1 -c200 -d"${DUR}s")
		case $m in
		unpinned)
			GOMAXPROCS=$(nproc) "$BIN" -server "$s" -addr "127.0.0.1:$PORT" -size 13 -loops 0 >>"$OUT/servers.log" 2>&1 &
			wrk=(wrk -t1 -c200 -d"${DUR}s") ;;
		ka | close)
			GOMAXPROCS=1 taskset -c 0 "$BIN" -server "$s" -addr "127.0.0.1:$PORT" -size 13 -loops 1 >>"$OUT/servers.log" 2>&1 &
			[[ $m == close ]] && wrk=(taskset -c 1 wrk -t1 -c100 -d"${DUR}s" -H 'Connection: close') ;;
		*) echo "count-uringhttp.sh: mode $m: want ka, close or unpinned" >&2; exit 2 ;;
		esac
		SPID=$!
		wait_port
		"${wrk[@]}" "http://127.0.0.1:$PORT/" >"$OUT/wrk-$s-$m.txt" &
		WPID=$!
		sleep 2
		t0=$(cpu_ticks "$SPID") w0=$(cpu_ticks "$(pgrep -n -x wrk)")
		perf stat -e "$EV" -p "$SPID" -x, -o "$OUT/stat-$s-$m.txt" -- sleep "$PERF_SECS"
		t1=$(cpu_ticks "$SPID") w1=$(cpu_ticks "$(pgrep -n -x wrk)")
		wait $WPID
		cleanup
		rps=$(awk '/^Requests\/sec:/{print $2}' "$OUT/wrk-$s-$m.txt")
		n=$(awk -v r="$rps" -v t="$PERF_SECS" 'BEGIN{printf "%d", r * t}')
		echo "== $s $m: $rps req/s; CPU us/req: server $(awk -v d=$((t1 - t0)) -v c="$CLK" -v n="$n" 'BEGIN{printf "%.1f", d * 1e6 / c / n}'), wrk $(awk -v d=$((w1 - w0)) -v c="$CLK" -v n="$n" 'BEGIN{printf "%.1f", d * 1e6 / c / n}')"
		awk -F, -v n="$n" '/^[0-9]/ && $1 > 0 { sub("syscalls:sys_enter_", "", $3); printf "  %-16s %8.3f /req\n", $3, $1 / n }' "$OUT/stat-$s-$m.txt"
	done
done
