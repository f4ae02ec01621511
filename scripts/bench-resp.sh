#!/usr/bin/env bash
# RESP benchmark: redis-server, examples/resp (uringrt's callback API), its
# Go net twin (bench/cmd/std-resp) and redcon on Go's net
# (bench/cmd/resp-server -backend std), side by side in alternating rounds,
# medians and ratios against redis-server and the twin.
#
#   scripts/bench-resp.sh                                # 3 rounds
#   ROUNDS=1 N1=20000 N16=200000 MSGS=200 scripts/bench-resp.sh   # a quick check
#   SERVERS="redis resp twin" WORKLOADS="get16 fanout" scripts/bench-resp.sh
#   RESP_B=/tmp/old/resp SERVERS="redis resp respb twin redcon" scripts/bench-resp.sh  # respb: another
#                                                  build of examples/resp (A/B against this tree's)
#
# Each server runs pinned to CPU 0 with GOMAXPROCS=1 (one uringrt loop);
# every client runs on CPU 1. Workloads:
#   set1 get1     redis-benchmark -c 50 -n N1 -t set (then get) -P 1
#   set16 get16   the same with -P 16 and -n N16
#   fanout        bench/cmd/resp-fanout: 1 publisher, SUBS subscribers, MSGS
#                 messages of 64 bytes (PUBLISHes pipelined by 16); every
#                 subscriber checks it gets every message in order
#   slow0 slow1   resp-fanout with 10 subscribers and 1 KiB messages
#                 (SLOWMSGS of them), without (slow0) and with (slow1) one
#                 more subscriber that never reads: the readers' rate should
#                 hold and the server's peak RSS stay bounded while the
#                 stalled one is cut off (redcon has no pub/sub: skipped)
# Server CPU per request (or delivery) is utime+stime from /proc/PID/stat
# read just before and after the client's run. Each run also records
# other, the busy time of both CPUs that was neither the server's nor the
# client's, in % of one CPU over the run (another engineer's build or test
# on the machine, which takes the server's or the client's core away); the
# summary's medians leave out runs with other above MAXOTHER (15) and count
# them in "runs (left out)". Every server is stopped by
# its own PID; every client run is bounded by `timeout`.
#
# QUOTA=50 runs every server in a cgroup CPU quota of 50 % of one CPU
# (cfs_quota_us 5000 per 10000 us period): on a two-core machine one
# redis-benchmark on CPU 1 is slower than any server on CPU 0, so every
# server runs at the client's rate; under an equal quota the server is the
# bottleneck again, and requests/s compares what each does with the same
# CPU (its rate at a whole core is about 100/QUOTA times higher).
# Environment: SERVERS WORKLOADS ROUNDS N1 N16 SUBS MSGS SLOWMSGS PORT MAXOTHER QUOTA OUT
# (results directory, default /tmp/bench-resp-<timestamp>).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SERVERS=${SERVERS:-redis resp twin redcon}
WORKLOADS=${WORKLOADS:-set1 get1 set16 get16 fanout slow0 slow1}
ROUNDS=${ROUNDS:-3}
N1=${N1:-200000}
N16=${N16:-2000000}
SUBS=${SUBS:-1000}
MSGS=${MSGS:-10000}
SLOWMSGS=${SLOWMSGS:-50000}
PORT=${PORT:-17630}
# Under QUOTA the other column also holds the softirq time of the
# throttled epoll servers' traffic (not charged to any task with IRQ time
# accounting: 13-38 % of a CPU for redis-server and the Go net servers,
# under 10 % for examples/resp), so runs are kept up to 100 there.
MAXOTHER=${MAXOTHER:-$([[ -n ${QUOTA:-} ]] && echo 100 || echo 15)}
OUT=${OUT:-/tmp/bench-resp-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT/bin"
RAW=$OUT/raw.txt
: >"$RAW"

for tool in redis-server redis-benchmark taskset; do
	command -v $tool >/dev/null || { echo "bench-resp.sh: $tool not installed (apt-get install redis-server redis-tools util-linux)" >&2; exit 2; }
done
ulimit -n "$(ulimit -Hn)" # a thousand subscribers
echo "# building into $OUT/bin" >&2
(cd "$ROOT" && go build -o "$OUT/bin/resp" ./examples/resp)
(cd "$ROOT/bench" && go build -o "$OUT/bin/std-resp" ./cmd/std-resp &&
	go build -o "$OUT/bin/resp-server" ./cmd/resp-server && go build -o "$OUT/bin/resp-fanout" ./cmd/resp-fanout)
{ date -u; uname -r; redis-server --version; git -C "$ROOT" rev-parse --short HEAD; } >"$OUT/env.txt"

. "$ROOT/scripts/lib.sh"
CLK=$(getconf CLK_TCK)
QUOTA=${QUOTA:-}
CG=
if [[ -n $QUOTA ]]; then
	# cgroup v1's cpu controller, or v2 with cpu enabled at the root
	if [[ -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]]; then
		CG=/sys/fs/cgroup/cpu/uringrt-bench-resp
		mkdir -p "$CG"
		echo 10000 >"$CG/cpu.cfs_period_us"
		echo $((QUOTA * 100)) >"$CG/cpu.cfs_quota_us"
	elif grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
		CG=/sys/fs/cgroup/uringrt-bench-resp
		mkdir -p "$CG"
		echo "$((QUOTA * 100)) 10000" >"$CG/cpu.max"
	else
		echo "bench-resp.sh: QUOTA needs the cgroup cpu controller" >&2
		exit 2
	fi
	echo "quota=$QUOTA% of one CPU ($CG)" >>"$OUT/env.txt"
fi
# the prefix that starts a server inside the quota's cgroup (sh moves
# itself there, then execs the server: $! stays the server's PID)
IN_QUOTA=()
[[ -z $CG ]] || IN_QUOTA=(sh -c 'echo $$ >"$0" && exec "$@"' "$CG/cgroup.procs")

start_server() {
	local dir
	case $1 in
	redis)
		dir=$(mktemp -d)
		"${IN_QUOTA[@]}" taskset -c 0 redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no \
			--dir "$dir" --daemonize no >>"$OUT/servers.log" 2>&1 & ;;
	resp) "${IN_QUOTA[@]}" env GOMAXPROCS=1 taskset -c 0 "$OUT/bin/resp" -addr 127.0.0.1:$PORT -loops 1 2>>"$OUT/servers.log" & ;;
	respb) "${IN_QUOTA[@]}" env GOMAXPROCS=1 taskset -c 0 "$RESP_B" -addr 127.0.0.1:$PORT -loops 1 2>>"$OUT/servers.log" & ;;
	twin) "${IN_QUOTA[@]}" env GOMAXPROCS=1 taskset -c 0 "$OUT/bin/std-resp" -addr 127.0.0.1:$PORT 2>>"$OUT/servers.log" & ;;
	redcon) "${IN_QUOTA[@]}" env GOMAXPROCS=1 taskset -c 0 "$OUT/bin/resp-server" -addr 127.0.0.1:$PORT -backend std 2>>"$OUT/servers.log" & ;;
	esac
	SPID=$!
	wait_port
}

# supports SERVER WORKLOAD: redcon (bench/cmd/resp-server) has no pub/sub
supports() { [[ $1 != redcon || $2 != fanout && $2 != slow* ]]; }

# run_client WORKLOAD -> "units rate cpu_us_per_unit extra"
run_client() {
	local out P n t
	case $1 in
	set1 | get1 | set16 | get16)
		t=${1%%[0-9]*} P=${1#$t}
		n=$N1
		[[ $P == 16 ]] && n=$N16
		local t0 t1
		t0=$(cpu_ticks "$SPID")
		out=$(timeout 300 taskset -c 1 redis-benchmark -h 127.0.0.1 -p "$PORT" -c 50 -n "$n" -t "$t" -P "$P" --csv)
		t1=$(cpu_ticks "$SPID")
		echo "$out" >>"$OUT/clients.log"
		echo "$out" | awk -F'"' -v n="$n" -v d=$((t1 - t0)) -v c="$CLK" \
			'/^"(SET|GET)"/{r=$4} END{printf "%d %s %.3f -\n", n, r, d * 1e6 / c / n}' ;;
	fanout | slow0 | slow1)
		local args=(-subs "$SUBS" -msgs "$MSGS" -size 64)
		[[ $1 == slow0 ]] && args=(-subs 10 -msgs "$SLOWMSGS" -size 1024)
		[[ $1 == slow1 ]] && args=(-subs 10 -stalled 1 -msgs "$SLOWMSGS" -size 1024)
		out=$(timeout 300 taskset -c 1 "$OUT/bin/resp-fanout" -addr 127.0.0.1:$PORT -pid "$SPID" -timeout 240s "${args[@]}" || true)
		echo "$out" >>"$OUT/clients.log"
		echo "$out" | awk '{for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
			printf "%s %s %s hwm_kb=%s,stalled_closed=%s,ok=%s\n", v["deliveries"], v["deliveries_s"], v["server_us"], v["server_hwm_kb"], v["stalled_closed"], v["ok"]}' ;;
	esac
	# the client's CPU time (this subshell's waited-for descendants), ticks
	awk '{print $16 + $17}' "/proc/$BASHPID/stat" >"$OUT/client_ticks"
}

for r in $(seq "$ROUNDS"); do
	# alternate the servers' order from round to round
	order=($SERVERS)
	if ((r % 2 == 0)); then
		for ((i = 0, j = ${#order[@]} - 1; i < j; i++, j--)); do t=${order[i]}; order[i]=${order[j]}; order[j]=$t; done
	fi
	for s in "${order[@]}"; do
		for w in $WORKLOADS; do
			supports "$s" "$w" || continue
			# a fresh server per pub/sub workload (its peak RSS is reported);
			# one per server and round for the redis-benchmark ones
			if [[ -z $SPID || $w == fanout || $w == slow* ]]; then
				cleanup
				start_server "$s"
			fi
			b0=$(cpus_busy) s0=$(cpu_ticks "$SPID") w0=$(date +%s%N)
			read -r units rate us extra < <(run_client "$w")
			b1=$(cpus_busy) s1=$(cpu_ticks "$SPID") w1=$(date +%s%N)
			# busy time of the two CPUs that was neither the server's nor
			# the client's, in % of one CPU over the run
			other=$(((b1 - b0 - (s1 - s0) - $(cat "$OUT/client_ticks")) * 100 * 1000000000 / CLK / (w1 - w0 + 1)))
			line="workload=$w server=$s round=$r units=$units rate=$rate srv_us=$us other=$other extra=$extra"
			echo "$line" | tee -a "$RAW" >&2
			if [[ $w == fanout || $w == slow* ]]; then cleanup; fi
		done
		cleanup
		sleep 1
	done
done

# summary: medians per workload and server; ratios against redis-server and the twin
{
echo "| workload | server | rate/s | server CPU us/unit | rate vs redis | rate vs twin | CPU vs twin | runs (left out) | notes (last round) |"
echo "|---|---|---|---|---|---|---|---|---|"
for w in $WORKLOADS; do
	for s in $SERVERS; do
		supports "$s" "$w" || continue
		awk -v w="$w" -v s="$s" -v maxother="$MAXOTHER" '
		function med(a, n,   i, j, t) { if (n == 0) return 0
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
		{ delete v; for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = substr($i, length(kv[1]) + 2) }
		  if (v["workload"] != w) next
		  if (v["other"] + 0 > maxother + 0) { if (v["server"] == s) left++; next }
		  if (v["server"] == "redis") { rr[++nr] = v["rate"] }
		  if (v["server"] == "twin") { tr[++nt] = v["rate"]; tc[nt] = v["srv_us"] }
		  if (v["server"] == s) { sr[++ns] = v["rate"]; sc[ns] = v["srv_us"]; note = v["extra"] } }
		END { a = med(rr, nr); b = med(tr, nt); bc = med(tc, nt); r = med(sr, ns); c = med(sc, ns)
		  printf "| %s | %s | %.0f | %.3f | %s | %s | %s | %d (%d) | %s |\n", w, s, r, c,
		    (a ? sprintf("%.2fx", r / a) : "-"), (b ? sprintf("%.2fx", r / b) : "-"), (bc ? sprintf("%.2fx", c / bc) : "-"), ns, left, note }' "$RAW"
	done
done
} | tee "$OUT/summary.md"
echo "raw: $RAW" >&2
