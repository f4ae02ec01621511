#!/bin/sh
# WebSocket echo A/B: uringws on uringhttp against gorilla/websocket on
# net/http (and a second gorilla run as the A/A control), 1 KiB binary
# messages over CONNS connections in closed loop, server pinned to CPU 0
# with GOMAXPROCS=1 and the load (the uringws test binary's raw-frame
# client, a goroutine per connection on Go's net) on CPU 1. Alternating
# rounds; prints each run's messages/s.
# Usage: scripts/ws-echo-ab.sh [rounds] (CONNS=1000 SECS=5)
set -eu
ROUNDS=${1:-5}
CONNS=${CONNS:-1000}
SECS=${SECS:-5}
cd "$(dirname "$0")/.."
BIN=$(mktemp -d)/uringws.test
go test -c -o "$BIN" ./uringws/
ulimit -n 20000
run() { # kind port
	mkfifo "$BIN.$2.in"
	(sleep $((SECS + 60)) > "$BIN.$2.in") &
	holder=$!
	taskset -c 0 env GOMAXPROCS=1 URINGWS_ECHO_SERVER=$1 URINGWS_ECHO_ADDR=127.0.0.1:$2 "$BIN" -test.run '^TestEchoServerProcess$' < "$BIN.$2.in" > /dev/null &
	srv=$!
	sleep 1
	r=$(taskset -c 1 env URINGWS_ECHO_CLIENT=127.0.0.1:$2 URINGWS_ECHO_CONNS=$CONNS URINGWS_ECHO_SECS=$SECS "$BIN" -test.run '^TestEchoClientProcess$' | awk '/msgs\/s/ {print $2}')
	kill $holder 2>/dev/null || true
	wait $srv 2>/dev/null || true
	rm -f "$BIN.$2.in"
	echo "$1 $r"
}
port=19000
for i in $(seq "$ROUNDS"); do
	for kind in uringws gorilla gorilla; do
		port=$((port + 1))
		run $kind $port
	done
done
