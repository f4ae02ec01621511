#!/usr/bin/env bash
# Per connection under wrk's `Connection: close` (server pinned to CPU 0 with
# GOMAXPROCS=1 and one loop, wrk -t1 -c100 on CPU 1): how often the server's
# CPU went idle (a switch from a server thread to the idle task on CPU 0),
# how often wrk woke a server thread, and how often anything else woke one,
# from `perf record -a -e sched:sched_switch,sched:sched_waking` over 2 s in
# the middle of a 6 s run (events are filtered by task name, so other
# processes' work does not count). Rounds alternate the given servers.
#
#   scripts/close-wakes.sh ROUNDS NAME=BIN[:SERVER[:ENV=V,...]] ...
#
# BIN is a bench/cmd/h1-server binary; SERVER defaults to uringhttp. Run it
# under the bench lock.
set -uo pipefail
R=$1
shift
PORT=${PORT:-17850}
. "$(dirname "$0")/lib.sh"
D=$(mktemp -d)
opens() { awk '/Tcp:/ && $2 ~ /^[0-9]/ {print $6}' /proc/net/snmp; }
for r in $(seq "$R"); do
	for spec in "$@"; do
		start_h1_pinned "$spec"
		sleep 0.2
		timeout 20 taskset -c 1 wrk -t1 -c100 -d6s -H 'Connection: close' "http://127.0.0.1:$PORT/" >"$D/wrk.txt" &
		WPID=$!
		sleep 2
		n0=$(opens)
		perf record -q -a -o "$D/perf.data" -e sched:sched_switch -e sched:sched_waking -- sleep 2 >/dev/null 2>&1
		n1=$(opens)
		wait $WPID
		cleanup
		perf script -i "$D/perf.data" -F comm,cpu,event,trace 2>/dev/null | awk -v n=$((n1 - n0)) -v nm="$name" -v rps="$(awk '/^Requests\/sec:/{print $2}' "$D/wrk.txt")" '
			/sched_switch/ && $1 == "h1-server" && (/next_comm=swapper/ || /==> swapper/) { idle++ }
			/sched_waking/ && /comm=h1-server/ { if ($1 == "wrk") bywrk++; else if ($1 != "h1-server") byother++; else byself++ }
			END { printf "round %d %-10s rps %7.0f | per conn: server CPU to idle %.3f, server woken by wrk %.3f, by itself %.3f, by others %.3f (conns %d)\n",
				'"$r"', nm, rps, idle / n, bywrk / n, byself / n, byother / n, n }'
	done
done
rm -rf "$D"
