#!/usr/bin/env bash
# Real-server benchmark: the same small servers (bench/cmd/http-server,
# bench/cmd/resp-server) on uringrt's listener and on Go's net, side by side
# in alternating rounds (std uring std uring ...), medians and ratios.
#
#   scripts/bench-http.sh                       # all workloads, 3 rounds, 5 s each
#   WORKLOADS="http-ka resp" ROUNDS=5 DUR=10 scripts/bench-http.sh
#   BACKENDS="std uring uring-locked" WORKLOADS=h2 scripts/bench-http.sh
#   RATE=20000 WORKLOADS="http-ka h2" scripts/bench-http.sh  # a fixed offered load (h2load --rps)
#   PIN=0 scripts/bench-http.sh                  # unpinned, the default GOMAXPROCS (as users run)
#   BACKENDS="std uring std2" scripts/bench-http.sh  # std2: Go's net again, an A/A control
#   ROTATE=1 scripts/bench-http.sh               # round r starts with the r-th backend (order effects spread)
#   BACKENDS="std uring:/tmp/old/bin uring" scripts/bench-http.sh   # A/B: /tmp/old/bin
#       holds http-server and resp-server built at another commit (a
#       previous run's $OUT/bin will do)
#
# Workloads (client pinned to CPU 1, server to CPU 0 with GOMAXPROCS=1 and
# one uringrt loop):
#   http-ka     net/http, wrk -t1 -c200 (keep-alive)
#   http-close  net/http, wrk -t1 -c$CLOSE_CONNS -H 'Connection: close' (a new connection per request)
#   h2          net/http HTTP/2 over crypto/tls, h2load -t1 -c32 -m10
#   resp        tidwall/redcon, redis-benchmark -c50 -t set,get (no pipelining)
#   grpc        grpc-go's health service (a unary Check over h2c), bench/cmd/grpc-load
#               -conns $GRPC_CONNS -c $GRPC_CALLERS (4 connections, 64 concurrent calls)
# Needs wrk, h2load (Debian nghttp2-client) and redis-benchmark (redis-tools);
# grpc uses its own load program (bench/cmd/grpc-load), built with the servers.
#
# RATE=N (requests/s in total) runs http-ka and h2 at a fixed offered load
# with h2load --rps (http-ka over HTTP/1.1: h2load --h1), so every server
# does the same work and CPU per request compares what each pays for it at
# that load; the summary then also shows h2load's mean and max request time
# ("lat"), since wrk and redis-benchmark cannot hold a rate, other workloads
# run closed loop. PIN=0 runs server and client unpinned with Go's default
# GOMAXPROCS (the machine's cores) and uringrt's default loops.
#
# Server CPU per request comes from /proc/PID/stat (utime+stime) read just
# before and after the client's run. Every server is stopped by its own PID.
# Environment: WORKLOADS ROUNDS DUR CONNS CLOSE_CONNS (http-close's, default
# CONNS) GRPC_CONNS GRPC_CALLERS PORT OUT (results directory, default /tmp/bench-http-<timestamp>).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORKLOADS=${WORKLOADS:-http-ka http-close h2 resp grpc}
# BACKENDS: std (Go's net), std2 (the same, a second process: an A/A control), uring (uringrt,
# the default wait in Go's netpoller), uring-locked (uringrt with Config.LockedLoops),
# uring-netpoll (net.Conn readers waiting in Go's netpoller, the default from GOMAXPROCS 2),
# uring-loop (net.Conn readers waiting on the loop's POLLIN, the default with GOMAXPROCS 1)
BACKENDS=${BACKENDS:-std uring}
ROUNDS=${ROUNDS:-3}
DUR=${DUR:-5}
CONNS=${CONNS:-200}
CLOSE_CONNS=${CLOSE_CONNS:-$CONNS}
GRPC_CONNS=${GRPC_CONNS:-4}
GRPC_CALLERS=${GRPC_CALLERS:-64}
PORT=${PORT:-17620}
RATE=${RATE:-}
PIN=${PIN:-1}
ROTATE=${ROTATE:-0}
if [[ $PIN == 1 ]]; then CLI=(taskset -c 1); SRV=(taskset -c 0); GMP=1; else CLI=(); SRV=(); GMP=$(nproc); fi
OUT=${OUT:-/tmp/bench-http-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT/bin"
RAW=$OUT/raw.txt
: >"$RAW"

for tool in wrk h2load redis-benchmark; do
	command -v $tool >/dev/null || { echo "bench-http.sh: $tool not installed (apt-get install wrk nghttp2-client redis-tools)" >&2; exit 2; }
done
echo "# building into $OUT/bin" >&2
(cd "$ROOT/bench" && go build -o "$OUT/bin/http-server" ./cmd/http-server && go build -o "$OUT/bin/resp-server" ./cmd/resp-server &&
	go build -o "$OUT/bin/grpc-server" ./cmd/grpc-server && go build -o "$OUT/bin/grpc-load" ./cmd/grpc-load)

. "$ROOT/scripts/lib.sh"
CLK=$(getconf CLK_TCK)

# run_client WORKLOAD -> prints "requests rps [mean_ms max_ms]"
run_client() {
	local url=http://127.0.0.1:$PORT/ out
	if [[ -n $RATE && ($1 == http-ka || $1 == h2) ]]; then
		# h2load's --rps is per client: 32 clients share RATE.
		local c=32 h1=() scheme=https
		[[ $1 == http-ka ]] && h1=(--h1) scheme=http
		out=$("${CLI[@]}" h2load "${h1[@]}" -t1 -c$c -m1 --rps=$((RATE / c)) -D "$DUR" --warm-up-time=1 "$scheme://127.0.0.1:$PORT/")
		echo "$out" >>"$OUT/clients.log"
		echo "$out" | awk '/^finished in/{gsub(",","",$4); s=$4} /^requests:/{r=$8} /^time for request:/{max=$5; mean=$6} END{print r, s, mean, max}'
		return
	fi
	case $1 in
	http-ka)
		out=$("${CLI[@]}" wrk -t1 -c"$CONNS" -d"${DUR}s" "$url")
		echo "$out" >>"$OUT/clients.log"
		echo "$out" | awk '/ requests in /{r=$1} /^Requests\/sec:/{s=$2} END{print r, s}' ;;
	http-close)
		out=$("${CLI[@]}" wrk -t1 -c"$CLOSE_CONNS" -d"${DUR}s" -H 'Connection: close' "$url")
		echo "$out" >>"$OUT/clients.log"
		echo "$out" | awk '/ requests in /{r=$1} /^Requests\/sec:/{s=$2} END{print r, s}' ;;
	h2)
		out=$("${CLI[@]}" h2load -t1 -c32 -m10 -D "$DUR" --warm-up-time=1 "https://127.0.0.1:$PORT/")
		echo "$out" >>"$OUT/clients.log"
		echo "$out" | awk '/^finished in/{gsub(",","",$4); s=$4} /^requests:/{r=$8} END{print r, s}' ;;
	resp)
		local n=$((DUR * 40000))
		out=$("${CLI[@]}" redis-benchmark -h 127.0.0.1 -p "$PORT" -c 50 -n "$n" -t set,get --csv)
		echo "$out" >>"$OUT/clients.log"
		# two tests of n requests each; rps: the mean of SET's and GET's
		echo "$out" | awk -F'"' -v n="$n" '/^"(SET|GET)"/{s+=$4; k++} END{print 2*n, s/k}' ;;
	grpc)
		# the load program of this run's build, whatever binaries the server comes from
		out=$("${CLI[@]}" "$OUT/bin/grpc-load" -addr 127.0.0.1:$PORT -conns "$GRPC_CONNS" -c "$GRPC_CALLERS" -d "${DUR}s")
		echo "$out" >>"$OUT/clients.log"
		echo "$out" | awk '{print $2, $4}' ;;
	esac
}

for w in $WORKLOADS; do
	for r in $(seq "$ROUNDS"); do
		order=($BACKENDS)
		if [[ $ROTATE == 1 ]]; then
			# round r starts at the r-th backend: no backend always runs first
			k=$(((r - 1) % ${#order[@]}))
			order=("${order[@]:k}" "${order[@]:0:k}")
		fi
		for b in "${order[@]}"; do
			# b is a backend name, or NAME:DIR for the binaries built in
			# DIR (another commit's, for an A/B of uringrt against itself)
			bk=${b%%:*} bin=$OUT/bin
			[[ $b == *:* ]] && bin=${b#*:}
			[[ $bk == std2 ]] && bk=std
			case $w in
			resp) cmd=("$bin/resp-server" -addr 127.0.0.1:$PORT -backend $bk) ;;
			grpc) cmd=("$bin/grpc-server" -addr 127.0.0.1:$PORT -backend $bk) ;;
			h2) cmd=("$bin/http-server" -addr 127.0.0.1:$PORT -backend $bk -tls) ;;
			*) cmd=("$bin/http-server" -addr 127.0.0.1:$PORT -backend $bk) ;;
			esac
			[[ $PIN == 1 ]] || cmd+=(-loops 0)
			GOMAXPROCS=$GMP "${SRV[@]}" "${cmd[@]}" 2>>"$OUT/servers.log" &
			SPID=$!
			wait_port
			t0=$(cpu_ticks $SPID)
			read -r reqs rps mean max < <(run_client "$w")
			t1=$(cpu_ticks $SPID)
			cleanup
			us=$(awk -v d=$((t1 - t0)) -v c="$CLK" -v n="$reqs" 'BEGIN{ if (n > 0) printf "%.2f", d * 1e6 / c / n; else print "nan" }')
			line="workload=$w backend=$b round=$r requests=$reqs rps=$rps srv_us_per_req=$us${mean:+ mean=$mean max=$max}"
			echo "$line" | tee -a "$RAW" >&2
			sleep 1
		done
	done
done

# summary: medians per workload and backend, ratios against std
{
echo "| workload | backend | req/s | server CPU us/req | req/s vs Go net | CPU/req vs Go net |"
echo "|---|---|---|---|---|---|"
for w in $WORKLOADS; do
	for b in $BACKENDS; do
		awk -v w="$w" -v b="$b" '
		function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
		{ split($0, f, " "); for (i in f) { split(f[i], kv, "="); v[kv[1]] = kv[2] }
		  if (v["workload"] != w) next
		  if (v["backend"] == "std") { sr[++ns] = v["rps"]; sc[ns] = v["srv_us_per_req"] }
		  if (v["backend"] == b) { ur[++nu] = v["rps"]; uc[nu] = v["srv_us_per_req"] } }
		END { a = med(sr, ns); c2 = med(sc, ns); r = med(ur, nu); d = med(uc, nu)
		  printf "| %s | %s | %.0f | %.1f | %.2fx | %.2fx |\n", w, b, r, d, (a ? r / a : 0), (c2 ? d / c2 : 0) }' "$RAW"
	done
done
echo
echo "per round, req/s and CPU/req against Go net (std) of the same round:"
for w in $WORKLOADS; do
	awk -v w="$w" -v bl="$BACKENDS" '
	{ split($0, f, " "); delete v; for (i in f) { split(f[i], kv, "="); v[kv[1]] = kv[2] }
	  if (v["workload"] != w) next
	  rps[v["backend"], v["round"]] = v["rps"]; cpu[v["backend"], v["round"]] = v["srv_us_per_req"]
	  if (v["round"] + 0 > nr) nr = v["round"] + 0 }
	function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
	END { nb = split(bl, b, " ")
	  for (j = 1; j <= nb; j++) { if (b[j] == "std") continue
	    line = sprintf("%s %s req/s:", w, b[j]); line2 = "  CPU/req:"
	    for (r = 1; r <= nr; r++) { s = rps["std", r]; c = cpu["std", r]
	      x[r] = s ? rps[b[j], r] / s : 0; y[r] = c ? cpu[b[j], r] / c : 0
	      line = line sprintf(" %.2f", x[r]); line2 = line2 sprintf(" %.2f", y[r]) }
	    printf "%s (median %.2f)%s (median %.2f)\n", line, med(x, nr), line2, med(y, nr) } }' "$RAW"
done
} | tee "$OUT/summary.md"
echo "raw: $RAW" >&2
