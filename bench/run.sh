#!/usr/bin/env bash
# Echo benchmark harness: std net vs gnet vs the uringrt echo-server.
#
# usage: bench/run.sh [-rounds 3] [-d 10s] [-configs i,ii,iii]
#                     [-servers std,gnet,uring-callback,uring-conn]
#
# The seed experiments use more uringrt servers: uring-blocking (pollable
# blocking, 20 workers), uring-ring, uring-async (each also -iowq20: io-wq
# capped at 20 workers), and for batched waiting (a property of locked
# loops, -locked-loops: DEFER_TASKRUN and min_complete) uring-conn-locked,
# uring-callback-locked, uring-conn-nobatch and uring-callback-nobatch
# (locked, COOP_TASKRUN, min_complete 1), uring-callback-idlepoll (locked,
# busy-polls 20 us before sleeping) and uring-callback-dedicated (that,
# and waits keep the P: -dedicated).
#
# Every server runs pinned to CPU 0 with GOMAXPROCS=1 (uringrt with -loops 1),
# the client pinned to CPU 1. Configurations:
#   i   -c 1000 -s 12   -depth 1
#   ii  -c 100  -s 512  -depth 1
#   iii -c 10   -s 4096 -depth 8
# For each config the servers run in alternating rounds (A B C A B C ...)
# after one unrecorded warm-up round. Each run's JSON line is appended to
# bench/out/results.jsonl (the previous file is kept as results.prev.jsonl);
# at the end bench/out/report prints the table (also in bench/out/report.md)
# and draws bench/out/echo.png. A server that fails to build or start is
# marked failed and the others go on.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BENCH=$ROOT/bench
OUT=${OUT:-$BENCH/out}
ROUNDS=3
DURATION=10s
CONFIGS=i,ii,iii
SERVERS=std,gnet,uring-callback,uring-conn
SERVER_CPU=0
CLIENT_CPU=1
BASE_PORT=17700

usage() {
	sed -n '4,5p' "$0" | sed 's/^# //' >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	-rounds) ROUNDS=${2:?}; shift 2 ;;
	-d) DURATION=${2:?}; shift 2 ;;
	-configs) CONFIGS=${2:?}; shift 2 ;;
	-servers) SERVERS=${2:?}; shift 2 ;;
	-h | --help) usage ;;
	*) echo "run.sh: unknown argument $1" >&2; usage ;;
	esac
done
case $ROUNDS in '' | *[!0-9]* | 0) echo "run.sh: -rounds must be a positive integer" >&2; exit 2 ;; esac

log() { echo "run.sh: $*" >&2; }

# seconds DURATION: whole seconds of a Go duration (rounded up), for timeouts.
seconds() {
	awk -v d="$1" 'BEGIN {
		n = d + 0; u = substr(d, length(n "") + 1)
		f = (u == "ms") ? 0.001 : (u == "m") ? 60 : (u == "h") ? 3600 : (u == "us" || u == "µs") ? 1e-6 : 1
		s = n * f; printf "%d\n", (s == int(s)) ? s : int(s) + 1 }'
}

config_args() {
	case $1 in
	i) echo "-c 1000 -s 12 -depth 1" ;;
	ii) echo "-c 100 -s 512 -depth 1" ;;
	iii) echo "-c 10 -s 4096 -depth 8" ;;
	*) return 1 ;;
	esac
}

IFS=, read -r -a CONFIG_LIST <<<"$CONFIGS"
IFS=, read -r -a SERVER_LIST <<<"$SERVERS"
for c in "${CONFIG_LIST[@]}"; do
	config_args "$c" >/dev/null || { echo "run.sh: unknown config $c (want i, ii or iii)" >&2; exit 2; }
done
for s in "${SERVER_LIST[@]}"; do
	case $s in std | gnet | uring-callback | uring-conn | uring-blocking | uring-ring | uring-ring-iowq20 | uring-async | uring-async-iowq20 | uring-conn-nobatch | uring-callback-nobatch | uring-conn-locked | uring-callback-locked | uring-callback-idlepoll | uring-callback-dedicated) ;; *) echo "run.sh: unknown server $s" >&2; exit 2 ;; esac
done

mkdir -p "$OUT"
declare -A FAILED=()

# --- build -------------------------------------------------------------------
log "building into $OUT"
(cd "$ROOT" && go build -o "$OUT/echo-client" ./cmd/echo-client) || { log "echo-client failed to build"; exit 1; }
(cd "$BENCH" && go build -o "$OUT/report" ./cmd/report) || { log "report failed to build"; exit 1; }
uring_built=
for s in "${SERVER_LIST[@]}"; do
	case $s in
	std) (cd "$BENCH" && go build -o "$OUT/std-echo" ./cmd/std-echo) >"$OUT/build-$s.log" 2>&1 ;;
	gnet) (cd "$BENCH" && go build -o "$OUT/gnet-echo" ./cmd/gnet-echo) >"$OUT/build-$s.log" 2>&1 ;;
	uring-*)
		if [ -z "$uring_built" ]; then
			(cd "$ROOT" && go build -o "$OUT/echo-server" ./cmd/echo-server) >"$OUT/build-uring.log" 2>&1
			uring_built=$?
		fi
		cp "$OUT/build-uring.log" "$OUT/build-$s.log"
		[ "$uring_built" = 0 ]
		;;
	esac
	if [ $? -ne 0 ]; then
		FAILED[$s]="build failed"
		log "server $s: FAILED to build: $(head -c 300 "$OUT/build-$s.log" | tr '\n' ' ')"
	fi
done

server_cmd() { # server addr
	case $1 in
	std) echo "$OUT/std-echo -addr $2" ;;
	gnet) echo "$OUT/gnet-echo -addr $2" ;;
	uring-callback) echo "$OUT/echo-server -addr $2 -api callback -backend uring -loops 1 -metrics-addr=" ;;
	uring-conn) echo "$OUT/echo-server -addr $2 -api conn -backend uring -loops 1 -metrics-addr=" ;;
	# The seed experiments (DESIGN.md, Experiments 1 and 3): pollable policies
	# with work capped at 20 workers, and batched waiting off.
	uring-blocking) echo "$OUT/echo-server -addr $2 -api conn -backend uring -loops 1 -pollable blocking -workers 20 -metrics-addr=" ;;
	uring-ring) echo "$OUT/echo-server -addr $2 -api conn -backend uring -loops 1 -pollable ring -metrics-addr=" ;;
	uring-ring-iowq20) echo "$OUT/echo-server -addr $2 -api conn -backend uring -loops 1 -pollable ring -iowq-max-workers 20 -metrics-addr=" ;;
	uring-async) echo "$OUT/echo-server -addr $2 -api conn -backend uring -loops 1 -pollable async -metrics-addr=" ;;
	uring-async-iowq20) echo "$OUT/echo-server -addr $2 -api conn -backend uring -loops 1 -pollable async -iowq-max-workers 20 -metrics-addr=" ;;
	uring-conn-locked) echo "$OUT/echo-server -addr $2 -api conn -backend uring -loops 1 -locked-loops -metrics-addr=" ;;
	uring-callback-locked) echo "$OUT/echo-server -addr $2 -api callback -backend uring -loops 1 -locked-loops -metrics-addr=" ;;
	uring-conn-nobatch) echo "$OUT/echo-server -addr $2 -api conn -backend uring -loops 1 -locked-loops -batch off -metrics-addr=" ;;
	uring-callback-nobatch) echo "$OUT/echo-server -addr $2 -api callback -backend uring -loops 1 -locked-loops -batch off -metrics-addr=" ;;
	# Busy-poll 20 us before sleeping (Config.IdlePoll).
	uring-callback-idlepoll) echo "$OUT/echo-server -addr $2 -api callback -backend uring -loops 1 -locked-loops -idle-poll 20us -metrics-addr=" ;;
	# ... and keep the P through waits of up to 1 ms (Config.DedicatedLoops).
	uring-callback-dedicated) echo "$OUT/echo-server -addr $2 -api callback -backend uring -loops 1 -locked-loops -idle-poll 20us -dedicated -metrics-addr=" ;;
	esac
}

# --- server lifecycle ----------------------------------------------------------
SERVER_PID=
PORT=$BASE_PORT

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# next_port: a port nobody listens on (a fresh one per run).
next_port() {
	local i
	for i in $(seq 1 200); do
		PORT=$((PORT + 1))
		port_busy "$PORT" || return 0
	done
	log "no free port found near $PORT"
	return 1
}

# wait_port PORT PID: wait up to 10 s for PID to accept on PORT.
wait_port() {
	local i
	for i in $(seq 1 100); do
		kill -0 "$2" 2>/dev/null || return 1
		port_busy "$1" && return 0
		sleep 0.1
	done
	return 1
}

# stop_server: SIGTERM, up to 5 s, then SIGKILL.
stop_server() {
	[ -n "$SERVER_PID" ] || return 0
	local i
	kill -TERM "$SERVER_PID" 2>/dev/null
	for i in $(seq 1 50); do
		kill -0 "$SERVER_PID" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$SERVER_PID" 2>/dev/null; then
		log "server pid $SERVER_PID ignored SIGTERM for 5 s: SIGKILL"
		kill -KILL "$SERVER_PID" 2>/dev/null
	fi
	wait "$SERVER_PID" 2>/dev/null
	SERVER_PID=
}
trap 'stop_server; exit 130' INT TERM
trap 'stop_server' EXIT

RESULTS=$OUT/results.jsonl
[ -f "$RESULTS" ] && mv "$RESULTS" "$OUT/results.prev.jsonl"
: >"$RESULTS"

# record SERVER CONFIG ROUND JSON_OR_EMPTY WHY
record() {
	local head="{\"server\":\"$1\",\"config\":\"$2\",\"round\":$3"
	if [ -n "$4" ]; then
		echo "$head,${4#\{}" >>"$RESULTS"
	else
		echo "$head,\"failed\":\"$5\"}" >>"$RESULTS"
	fi
}

# one_run SERVER CONFIG ROUND DURATION WARMUP: round 0 is the warm-up, not recorded.
one_run() {
	local s=$1 c=$2 round=$3 dur=$4 warm=$5 json rc why=
	if [ -n "${FAILED[$s]:-}" ]; then
		[ "$round" -gt 0 ] && record "$s" "$c" "$round" "" "${FAILED[$s]}"
		return
	fi
	next_port || return
	local addr=127.0.0.1:$PORT tag="$c-$s-r$round"
	# shellcheck disable=SC2046
	GOMAXPROCS=1 taskset -c "$SERVER_CPU" $(server_cmd "$s" "$addr") >"$OUT/server-$tag.log" 2>&1 &
	SERVER_PID=$!
	if ! wait_port "$PORT" "$SERVER_PID"; then
		why="server did not start (see bench/out/server-$tag.log)"
		log "config $c round $round $s: FAILED: $why"
		stop_server
		[ "$round" -gt 0 ] && record "$s" "$c" "$round" "" "$why"
		return
	fi
	local limit=$(($(seconds "$dur") + $(seconds "$warm") + 60))
	# shellcheck disable=SC2046
	json=$(timeout -k 5 "$limit" taskset -c "$CLIENT_CPU" "$OUT/echo-client" -addr "$addr" \
		$(config_args "$c") -d "$dur" -warmup "$warm" -json -server-pid "$SERVER_PID" 2>"$OUT/client-$tag.log")
	rc=$?
	stop_server
	case $json in
	'{'*) ;;
	*) json= why="client exit $rc: $(tail -n 1 "$OUT/client-$tag.log")" ;;
	esac
	if [ "$round" -eq 0 ]; then
		log "config $c warm-up $s: ${json:-$why}"
		return
	fi
	record "$s" "$c" "$round" "$json" "$why"
	log "config $c round $round/$ROUNDS $s: ${json:-FAILED: $why}"
}

# --- the runs --------------------------------------------------------------------
for c in "${CONFIG_LIST[@]}"; do
	log "config $c: $(config_args "$c"), $ROUNDS rounds of $DURATION"
	for s in "${SERVER_LIST[@]}"; do one_run "$s" "$c" 0 1s 500ms; done
	for round in $(seq 1 "$ROUNDS"); do
		for s in "${SERVER_LIST[@]}"; do one_run "$s" "$c" "$round" "$DURATION" 1s; done
	done
done

"$OUT/report" -png "$OUT/echo.png" "$RESULTS" | tee "$OUT/report.md"
log "results: $RESULTS, table: $OUT/report.md, chart: $OUT/echo.png"
