#!/usr/bin/env bash
# Alternating A/B rounds of HTTP/1.1 servers (bench/cmd/h1-server builds), pinned
# (server on CPU 0 with GOMAXPROCS=1 and one loop, client on CPU 1), with what
# other processes took from the machine during each run: a run during which
# they used more than OTHER_MAX % of a CPU is repeated, up to TRIES times.
#
#   scripts/ab-uringhttp.sh WORKLOAD ROUNDS NAME=BIN[:SERVER[:ENV=V,...]] ...
#   scripts/ab-uringhttp.sh close 5 old=/tmp/h1-main new=/tmp/h1-new nethttp=/tmp/h1-new:nethttp
#
# WORKLOAD: close (wrk -t1 -c100, Connection: close), ka (wrk -t1 -c200,
# keep-alive), rate:RPS (h2load --h1 -c32 at RPS requests/s). SERVER defaults
# to uringhttp. Prints one line per run: req/s, server CPU per request (us),
# CPU 0 and CPU 1 idle, other processes' CPU and the client's CPU (ms), and
# other processes' share of a CPU (other_pct). Environment: DUR (s, 4), PORT,
# OTHER_MAX (%, 15), TRIES (3). Run it under the bench lock.
set -uo pipefail
W=$1 R=$2
shift 2
PORT=${PORT:-17900}
DUR=${DUR:-4}
OTHER_MAX=${OTHER_MAX:-15}
TRIES=${TRIES:-3}
. "$(dirname "$0")/lib.sh"
CLK=$(getconf CLK_TCK)
LOG=$(mktemp -d)
cpu() { awk -v c="cpu$1" '$1==c{print $5+$6}' /proc/stat; }
total() { awk '$1=="cpu"{print $2+$3+$4+$7+$8+$9}' /proc/stat; }
quiet() { # wait (at most 10 s) until the machine is under 10 % busy
	for _ in $(seq 40); do
		local x y
		x=$(total); sleep 0.25; y=$(total)
		[[ $((y - x)) -le $((CLK / 20)) ]] && return
	done
}
run() { # NAME BIN SERVER ENVS -> one line
	local name=$1 bin=$2 srv=$3 envs=$4 url out reqs rps
	PORT=$((PORT + 1))
	url=http://127.0.0.1:$PORT/
	quiet
	env ${envs//,/ } GOMAXPROCS=1 taskset -c 0 "$bin" -server "$srv" -addr "127.0.0.1:$PORT" -size 13 -loops 1 >"$LOG/srv.log" 2>&1 &
	SPID=$!
	wait_port || return 1
	sleep 0.2
	local a0 a1 t0 t1 i00 i01 i10 i11
	a0=$(total) t0=$(cpu_ticks "$SPID") i00=$(cpu 0) i10=$(cpu 1)
	case $W in
	close) out=$(/usr/bin/time -o "$LOG/cli" -f '%U %S' timeout $((DUR + 10)) taskset -c 1 wrk -t1 -c100 -d"${DUR}s" -H 'Connection: close' "$url") ;;
	ka) out=$(/usr/bin/time -o "$LOG/cli" -f '%U %S' timeout $((DUR + 10)) taskset -c 1 wrk -t1 -c200 -d"${DUR}s" "$url") ;;
	rate:*) out=$(/usr/bin/time -o "$LOG/cli" -f '%U %S' timeout $((DUR + 15)) taskset -c 1 h2load --h1 -t1 -c32 -m1 --rps=$((${W#rate:} / 32)) -D "$DUR" --warm-up-time=1 "$url") ;;
	esac
	t1=$(cpu_ticks "$SPID") a1=$(total) i01=$(cpu 0) i11=$(cpu 1)
	cleanup
	if [[ $W == rate:* ]]; then
		reqs=$(echo "$out" | awk '/^requests:/{print $8}') rps=$(echo "$out" | awk '/^finished in/{gsub(",","",$4); print $4}')
	else
		reqs=$(echo "$out" | awk '/ requests in /{print $1}') rps=$(echo "$out" | awk '/^Requests\/sec:/{print $2}')
	fi
	awk -v nm="$name" -v rps="$rps" -v n="$reqs" -v hz="$CLK" -v s=$((t1 - t0)) -v busy=$((a1 - a0)) -v i0=$((i01 - i00)) -v i1=$((i11 - i10)) \
		-v cli="$(awk '{print $1 + $2}' "$LOG/cli")" 'BEGIN{
		ms = 1000 / hz; other = busy * ms - s * ms - cli * 1000
		printf "%-10s rps %8.0f srv_us %6.2f idle0_ms %5d idle1_ms %5d other_ms %5d cli_ms %5d other_pct %d\n", nm, rps, s * 1e6 / hz / n, i0 * ms, i1 * ms, other, cli * 1000, other / 10 / '"$DUR"' }'
}
for r in $(seq "$R"); do
	for spec in "$@"; do
		name=${spec%%=*} rest=${spec#*=}
		IFS=: read -r bin srv envs <<<"$rest"
		for try in $(seq "$TRIES"); do
			line=$(run "$name" "$bin" "${srv:-uringhttp}" "${envs:-}")
			o=$(echo "$line" | awk '{print $NF}')
			[[ ${o:-0} -le $OTHER_MAX || $try == "$TRIES" ]] && break
			echo "  (noisy: $line; again)" >&2
			sleep 1
		done
		echo "round $r $line"
		sleep 0.5
	done
done
rm -rf "$LOG"
