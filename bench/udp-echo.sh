#!/usr/bin/env bash
# UDP echo: uringrt's echo-server -network udp (a PacketConn; uringrt-ms:
# with -udp-multishot) against Go's net (bench/cmd/std-udp-echo), side by
# side in alternating rounds (A B C A B C ...), each server pinned to CPU 0 with GOMAXPROCS=1 and the same
# client (echo-client -network udp -engine net, Go's net) pinned to CPU 1.
# Prints every run and the medians and ratio of tps and server CPU/message.
#
#   bench/udp-echo.sh    # ROUNDS=5 C=50 S=64 DUR=5s WARM=1s PORT=17390 SERVERS="std uringrt uringrt-ms"
#
# Every run is bounded (the client stops itself); each server is stopped by
# its own PID.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
C=${C:-50}
S=${S:-64}
DUR=${DUR:-5s}
WARM=${WARM:-1s}
PORT=${PORT:-17390}
SERVERS=${SERVERS:-std uringrt uringrt-ms}
MPORT=$((PORT + 1))
WORK=${WORK:-$(mktemp -d /tmp/udp-echo.XXXXXX)}
mkdir -p "$WORK/bin"
go build -o "$WORK/bin/" ./cmd/echo-server ./cmd/echo-client
(cd bench && go build -o "$WORK/bin/" ./cmd/std-udp-echo)

run_one() { # server-name -> "tps server_cpu_ns_per_msg"
	local name=$1 pid
	case $name in
	uringrt) GOMAXPROCS=1 taskset -c 0 "$WORK/bin/echo-server" -network udp -addr 127.0.0.1:$PORT -loops 1 -metrics-addr 127.0.0.1:$MPORT 2>"$WORK/$name.log" &
		pid=$! ;;
	uringrt-ms) GOMAXPROCS=1 taskset -c 0 "$WORK/bin/echo-server" -network udp -udp-multishot -addr 127.0.0.1:$PORT -loops 1 -metrics-addr 127.0.0.1:$MPORT 2>"$WORK/$name.log" &
		pid=$! ;;
	std) GOMAXPROCS=1 taskset -c 0 "$WORK/bin/std-udp-echo" -addr 127.0.0.1:$PORT 2>"$WORK/$name.log" &
		pid=$! ;;
	esac
	sleep 0.5
	local out
	out=$(GOMAXPROCS=1 taskset -c 1 "$WORK/bin/echo-client" -network udp -engine net -addr 127.0.0.1:$PORT \
		-c "$C" -s "$S" -d "$DUR" -warmup "$WARM" -server-pid $pid 2>>"$WORK/client.log") || true
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	echo "$name $out" >>"$WORK/runs.txt"
	echo "$name $out" >&2
}

: >"$WORK/runs.txt"
for ((r = 1; r <= ROUNDS; r++)); do
	for s in $SERVERS; do run_one "$s"; done
done
awk -v servers="$SERVERS" '
function median(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
{ s = $1; for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "tps") tps[s, ++nt[s]] = kv[2]; if (kv[1] == "server_cpu_ns_per_msg") cpu[s, ++nc[s]] = kv[2]; if (kv[1] == "errors") err[s] += kv[2] } }
END {
	ns = split(servers, list, " ")
	for (k = 1; k <= ns; k++) { s = list[k]; delete a; for (i = 1; i <= nt[s]; i++) a[i] = tps[s, i]; mt[s] = median(a, nt[s]); delete a; for (i = 1; i <= nc[s]; i++) a[i] = cpu[s, i]; mc[s] = median(a, nc[s])
		printf "%-8s median tps=%d server_cpu_ns_per_msg=%d runs=%d errors=%d\n", s, mt[s], mc[s], nt[s], err[s] }
	for (k = 1; k <= ns; k++) { s = list[k]; if (s != "std" && mt["std"] > 0 && mc["std"] > 0)
		printf "ratio %s/std: tps %.2fx, server CPU per message %.2fx\n", s, mt[s] / mt["std"], mc[s] / mc["std"] }
}' "$WORK/runs.txt"
echo "runs and logs: $WORK" >&2
