#!/usr/bin/env bash
# Where each CPU's time goes per connection under wrk's `Connection: close`
# (server pinned to CPU 0 with GOMAXPROCS=1 and one loop, wrk -t1 -c100 on
# CPU 1): req/s, then per connection (TCP active opens in the 3 s window):
# wrk's CPU, other work on CPU 1, CPU 1 idle (wrk waiting for the server),
# the server's CPU and CPU 0 idle. Rounds alternate the given servers.
#
#   scripts/close-idle.sh ROUNDS NAME=BIN[:SERVER[:ENV=V,...]] ...
#   scripts/close-idle.sh 3 old=/tmp/h1-old new=/tmp/h1-new nethttp=/tmp/h1-new:nethttp
#
# BIN is a bench/cmd/h1-server binary; SERVER defaults to uringhttp. The
# active opens are the machine's (/proc/net/snmp): run it when nothing else
# churns connections, under the bench lock.
set -uo pipefail
R=$1
shift
PORT=${PORT:-17800}
. "$(dirname "$0")/lib.sh"
ticks() { awk '$1=="cpu0"||$1=="cpu1"{printf "%d %d ", $2+$3+$4+$7+$8+$9, $5+$6}' /proc/stat; }
opens() { awk '/Tcp:/ && $2 ~ /^[0-9]/ {print $6}' /proc/net/snmp; }
for r in $(seq "$R"); do
	for spec in "$@"; do
		start_h1_pinned "$spec"
		sleep 0.3
		taskset -c 1 wrk -t1 -c100 -d6s -H 'Connection: close' "http://127.0.0.1:$PORT/" >/tmp/close-idle-wrk.txt &
		WPID=$!
		sleep 1.5
		WP=$(pgrep -n -x wrk)
		a=$(ticks) w0=$(cpu_ticks "$WP") s0=$(cpu_ticks "$SPID") n0=$(opens)
		sleep 3
		b=$(ticks) w1=$(cpu_ticks "$WP") s1=$(cpu_ticks "$SPID") n1=$(opens)
		wait $WPID
		cleanup
		rps=$(awk '/^Requests\/sec:/{print $2}' /tmp/close-idle-wrk.txt)
		echo "$a $b $w0 $w1 $s0 $s1 $n0 $n1" | awk -v r="$r" -v nm="$name" -v rps="$rps" -v hz="$(getconf CLK_TCK)" '{ n = $14 - $13; u = 1e6 / hz
			printf "round %d %-10s rps %7.0f | us/conn: wrk %5.1f cpu1-other %5.1f cpu1-idle %5.1f | server %5.1f cpu0-idle %5.1f\n", r, nm, rps,
				($10-$9)*u/n, (($7-$3)-($10-$9))*u/n, ($8-$4)*u/n, ($12-$11)*u/n, ($6-$2)*u/n }'
		sleep 0.5
	done
done
