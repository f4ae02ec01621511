#!/usr/bin/env bash
# The quadratic head-scanning attack, uringhttp beside net/http: CLIENTS
# connections each send one request head of HEAD bytes as LINE-byte header
# lines, one every EVERY, while a probe opens a fresh connection for GET /
# every 100 ms (bench/cmd/headscan-attack). Servers are bench/cmd/h1-server
# unpinned with their defaults, in alternating rounds; each run prints the
# server's CPU seconds during the attack (utime+stime from /proc) and the
# probes' p50/p99.
#
#   flock /tmp/uringrt-bench.lock scripts/attack-headscan.sh                # ROUNDS=2, the full attack (~20 s a run)
#   CLIENTS=5 HEAD=200000 ROUNDS=1 scripts/attack-headscan.sh              # scaled down
#   BIN_old=/tmp/h1-server-main SERVERS="uringhttp nethttp uringhttp@old" scripts/attack-headscan.sh
#
# A server written NAME@LABEL is server NAME run from the binary $BIN_LABEL
# (another build, e.g. one from before a change). The server is stopped by
# its own PID.
# Environment: SERVERS ROUNDS CLIENTS HEAD LINE EVERY RHT PORT
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SERVERS=${SERVERS:-uringhttp nethttp}
ROUNDS=${ROUNDS:-2}
CLIENTS=${CLIENTS:-20}
HEAD=${HEAD:-1000000}
LINE=${LINE:-64}
EVERY=${EVERY:-1ms}
PORT=${PORT:-17640}
RHT=${RHT:-0} # the servers' ReadHeaderTimeout: none, so that every head is read whole
. "$ROOT/scripts/lib.sh"
BIN=$(mktemp -d /tmp/attack-headscan.XXXXXX)
(cd "$ROOT/bench" && go build -o "$BIN/h1-server" ./cmd/h1-server && go build -o "$BIN/headscan-attack" ./cmd/headscan-attack)
HZ=$(getconf CLK_TCK)
echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ) build=$(git -C "$ROOT" rev-parse --short HEAD) clients=$CLIENTS head=$HEAD line=$LINE every=$EVERY read_header_timeout=$RHT load=\"$(cut -d' ' -f1-3 /proc/loadavg)\""
for r in $(seq "$ROUNDS"); do
	for spec in $SERVERS; do
		srv=${spec%%@*} bin=$BIN/h1-server
		if [[ $spec == *@* ]]; then
			v=BIN_${spec#*@}
			bin=${!v:?$v not set}
		fi
		PORT=$((PORT + 1))
		"$bin" -server "$srv" -addr "127.0.0.1:$PORT" -size 13 -loops 0 -read-header-timeout "$RHT" >/dev/null 2>&1 &
		SPID=$!
		wait_port
		t0=$(cpu_ticks "$SPID")
		res=$("$BIN/headscan-attack" -addr "127.0.0.1:$PORT" -clients "$CLIENTS" -head "$HEAD" -line "$LINE" -every "$EVERY")
		t1=$(cpu_ticks "$SPID")
		cleanup
		echo "round=$r server=$spec cpu_s=$(awk -v a="$t0" -v b="$t1" -v hz="$HZ" 'BEGIN{printf "%.2f", (b-a)/hz}') $res"
	done
done
rm -rf "$BIN"
