#!/usr/bin/env bash
# HTTP/1.1 servers side by side: uringhttp (uringrt's server for any
# http.Handler), net/http on Go's net, net/http on uringrt's listener,
# fasthttp and nbio's nbhttp (bench/cmd/h1-server), and nginx (Debian's,
# one process, `return 200` of the same body), in alternating rounds (A B C D E A B C D E ...); prints medians
# and ratios and writes the table, dated and with its command, to
# $OUT/section.md, to replace the current table of BENCHMARKS.md's uringhttp
# section with (WRITE=0: not written).
#
#   scripts/bench-uringhttp.sh                     # everything, ROUNDS=3, DUR=5
#   ROUNDS=5 DUR=10 scripts/bench-uringhttp.sh
#   WORKLOADS="ka-13 close" SERVERS="uringhttp fasthttp" WRITE=0 scripts/bench-uringhttp.sh
#   IDLE=0 scripts/bench-uringhttp.sh              # without the idle-connection RSS part
#   BIN_old=/tmp/h1-server-main SERVERS="uringhttp uringhttp@old nethttp" scripts/bench-uringhttp.sh
#   SERVERS="uringhttp nethttp fasthttp nginx nethttp@aa" scripts/bench-uringhttp.sh   # with the anchors and an A/A control
#
# A server written NAME@LABEL is server NAME run from the binary $BIN_LABEL
# (another build, to A/B it in the same alternating rounds) with the extra
# flags $FLAGS_LABEL (e.g. FLAGS_one="-loops 1"); either may be unset.
# nethttp@aa (no BIN_aa, no FLAGS_aa) is a second copy of net/http: an A/A
# control, whose ratio to nethttp is what two identical servers differ by
# on the machine at that moment.
#
# nginx: Debian's nginx with one process doing the work (master_process
# off, worker_processes 1, the worker's CPU is the process's), keep-alive
# without a request limit, access log off, `return 200` of the same body
# with Content-Type text/plain; pinned it runs on CPU 0 as the Go servers;
# unpinned, worker_processes 1 still (nginx has no GOMAXPROCS). Needs
# nginx (apt-get install nginx).
#
# Workloads:
#   ka-13     pinned: server on CPU 0 with GOMAXPROCS=1 (uringrt 1 loop,
#             nbhttp 1 poller), wrk -t1 -c200 on CPU 1, keep-alive,
#             13-byte body
#   ka-4k     the same with a 4 KiB body
#   close     pinned, wrk -t1 -c100 -H 'Connection: close' (a connection per request)
#   unpinned  no taskset, GOMAXPROCS = cores, uringrt's default loops,
#             wrk -t1 -c200, 13 bytes
#   rate      pinned, h2load --h1 -c32 --rps: a fixed offered load of half
#             net/http's ka-13 median (RATE= to set it), server CPU per
#             request and p99 from h2load's per-request log
#   sleeper   rate, while one more connection (curl, keep-alive) asks
#             /sleep, whose handler sleeps 1 s, again and again: how much a
#             blocked handler delays the others (p99 against rate's)
# Then (IDLE=1, the default) 15,000 idle keep-alive connections (IDLE_CONNS),
# each after one request, to each server: its RSS per connection and
# goroutines, read after a GC (SIGUSR1) before and after.
#
# Server CPU per request comes from /proc/PID/stat (utime+stime) around
# the client's run. Every server is stopped by its own PID. Needs wrk and
# h2load (nghttp2-client). The machine drifts: only the ratios of one run
# mean anything; compare runs by their ratios.
# Environment: WORKLOADS SERVERS ROUNDS DUR RATE IDLE IDLE_CONNS PORT OUT WRITE
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORKLOADS=${WORKLOADS:-ka-13 ka-4k close unpinned rate sleeper}
SERVERS=${SERVERS:-uringhttp nethttp nethttp-uring fasthttp nbhttp}
ROUNDS=${ROUNDS:-3}
DUR=${DUR:-5}
RATE=${RATE:-}
IDLE=${IDLE:-1}
IDLE_CONNS=${IDLE_CONNS:-15000}
PORT=${PORT:-17630}
WRITE=${WRITE:-1}
OUT=${OUT:-/tmp/bench-uringhttp-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT/bin"
RAW=$OUT/raw.txt
: >"$RAW"

need=(wrk h2load)
[[ " $SERVERS " == *" nginx "* ]] && need+=(nginx)
for tool in "${need[@]}"; do
	command -v $tool >/dev/null || { echo "bench-uringhttp.sh: $tool not installed (apt-get install wrk nghttp2-client nginx)" >&2; exit 2; }
done
echo "# building into $OUT/bin" >&2
(cd "$ROOT/bench" && go build -o "$OUT/bin/h1-server" ./cmd/h1-server && go build -o "$OUT/bin/h1-idle" ./cmd/h1-idle)

. "$ROOT/scripts/lib.sh"
CLK=$(getconf CLK_TCK)
NCPU=$(nproc)

# nginx_conf SIZE: an nginx configuration for $PORT answering SIZE bytes
# as h1-server does (/sleep is not slept: nginx has no such handler).
nginx_conf() {
	local body=Hello,\ World! d=$OUT/nginx
	if [[ $1 != 13 ]]; then body=$(head -c "$1" /dev/zero | tr '\0' x); fi
	mkdir -p "$d/logs"
	cat >"$d/nginx.conf" <<-EOF
		daemon off;
		master_process off;
		worker_processes 1;
		error_log $d/logs/error.log warn;
		pid $d/nginx.pid;
		worker_rlimit_nofile 65536;
		events { worker_connections 65536; }
		http {
			access_log off;
			keepalive_requests 1000000000;
			client_body_temp_path $d/body;
			proxy_temp_path $d/proxy;
			fastcgi_temp_path $d/fastcgi;
			uwsgi_temp_path $d/uwsgi;
			scgi_temp_path $d/scgi;
			server {
				listen 127.0.0.1:$PORT;
				location / {
					default_type text/plain;
					return 200 "$body";
				}
			}
		}
	EOF
	echo "$d/nginx.conf"
}

# start_server SERVER SIZE PINNED: starts it in the background (SPID).
start_server() {
	local srv=(taskset -c 0) gmp=1 loops=1 name=${1%%@*} bin=$OUT/bin/h1-server flags=()
	if [[ $3 == 0 ]]; then srv=() gmp=$NCPU loops=0; fi
	if [[ $name == nginx ]]; then
		"${srv[@]}" nginx -c "$(nginx_conf "$2")" -p "$OUT/nginx" >>"$OUT/servers.log" 2>&1 &
		SPID=$!
		wait_port
		return
	fi
	if [[ $1 == *@* ]]; then
		local b=BIN_${1#*@} f=FLAGS_${1#*@}
		bin=${!b:-$bin}
		read -r -a flags <<<"${!f:-}"
	fi
	GOMAXPROCS=$gmp "${srv[@]}" "$bin" -server "$name" -addr "127.0.0.1:$PORT" -size "$2" -loops $loops "${flags[@]}" >>"$OUT/servers.log" 2>&1 &
	SPID=$!
	wait_port
}

# run_client WORKLOAD -> "requests rps [p99_ms]"
run_client() {
	local url=http://127.0.0.1:$PORT/ out
	case $1 in
	ka-13 | ka-4k)
		out=$(taskset -c 1 wrk -t1 -c200 -d"${DUR}s" "$url") ;;
	close)
		out=$(taskset -c 1 wrk -t1 -c100 -d"${DUR}s" -H 'Connection: close' "$url") ;;
	unpinned)
		out=$(wrk -t1 -c200 -d"${DUR}s" "$url") ;;
	rate | sleeper)
		local c=32 log=$OUT/h2load-req.log cpid=
		if [[ $1 == sleeper ]]; then
			# one connection, one 1 s request after another, for the whole run
			local urls=()
			for _ in $(seq $((DUR + 3))); do urls+=("${url}sleep"); done
			taskset -c 1 curl -s --max-time $((DUR + 10)) "${urls[@]}" >/dev/null 2>&1 &
			cpid=$!
			sleep 0.2
		fi
		out=$(taskset -c 1 h2load --h1 -t1 -c$c -m1 --rps=$((RATE / c)) -D "$DUR" --warm-up-time=1 --log-file="$log" "$url")
		echo "$out" >>"$OUT/clients.log"
		if [[ -n $cpid ]]; then kill "$cpid" 2>/dev/null || true; wait "$cpid" 2>/dev/null || true; fi
		local p99
		p99=$(awk -F'\t' '{print $3}' "$log" | sort -n | awk '{a[NR]=$1} END{ if (NR) { i = int(NR * 0.99); if (i < 1) i = 1; printf "%.3f", a[i] / 1000 } else print "nan" }')
		echo "$out" | awk -v p="$p99" '/^finished in/{gsub(",","",$4); s=$4} /^requests:/{r=$8} END{print r, s, p}'
		return ;;
	esac
	echo "$out" >>"$OUT/clients.log"
	if echo "$out" | grep -q -e 'Non-2xx' -e 'Socket errors'; then echo "# $1: errors or non-2xx answers: $(echo "$out" | grep -e 'Non-2xx' -e 'Socket errors')" >&2; fi
	echo "$out" | awk '/ requests in /{r=$1} /^Requests\/sec:/{s=$2} END{print r, s}'
}

# median WORKLOAD SERVER FIELD: the median of FIELD over the rounds
median() {
	awk -v w="$1" -v b="$2" -v k="$3" '
	{ delete v; for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
	  if (v["workload"] == w && v["server"] == b && v[k] != "" && v[k] != "nan") a[++n] = v[k] }
	END { if (!n) { print "nan"; exit }
	  for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	  print (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2) }' "$RAW"
}

for w in $WORKLOADS; do
	if [[ ($w == rate || $w == sleeper) && -z $RATE ]]; then
		peak=$(median ka-13 nethttp rps)
		if [[ $peak == nan ]]; then echo "# rate: no ka-13 nethttp figure; set RATE" >&2; continue; fi
		RATE=$(awk -v p="$peak" 'BEGIN{printf "%d", p / 2}')
		echo "# rate: $RATE requests/s (half of net/http's ka-13 median $peak)" >&2
	fi
	size=13 pinned=1
	[[ $w == ka-4k ]] && size=4096
	[[ $w == unpinned ]] && pinned=0
	for r in $(seq "$ROUNDS"); do
		for s in $SERVERS; do
			start_server "$s" $size $pinned
			t0=$(cpu_ticks "$SPID")
			read -r reqs rps p99 < <(run_client "$w")
			t1=$(cpu_ticks "$SPID")
			cleanup
			us=$(awk -v d=$((t1 - t0)) -v c="$CLK" -v n="$reqs" 'BEGIN{ if (n > 0) printf "%.2f", d * 1e6 / c / n; else print "nan" }')
			line="workload=$w server=$s round=$r requests=$reqs rps=$rps srv_us_per_req=$us${p99:+ p99_ms=$p99}"
			echo "$line" | tee -a "$RAW" >&2
			p99=
			sleep 1
		done
	done
done

# Idle keep-alive connections: the server's RSS per connection and its goroutines.
IDLE_RAW=$OUT/idle.txt
: >"$IDLE_RAW"
stats() { kill -USR1 "$SPID"; sleep 1; grep '^stats ' "$OUT/srv-idle.log" | tail -1; }
if [[ $IDLE == 1 ]]; then
	for s in $SERVERS; do
		[[ $s == nginx ]] && continue # no Go runtime stats to read
		: >"$OUT/srv-idle.log"
		GOMAXPROCS=1 taskset -c 0 "$OUT/bin/h1-server" -server "$s" -addr "127.0.0.1:$PORT" -size 13 -loops 1 >>"$OUT/srv-idle.log" 2>&1 &
		SPID=$!
		wait_port
		sleep 0.5
		b=$(stats)
		coproc IDLER { taskset -c 1 "$OUT/bin/h1-idle" -addr "127.0.0.1:$PORT" -n "$IDLE_CONNS" 2>>"$OUT/clients.log"; }
		read -r ready n <&"${IDLER[0]}" || true
		sleep 2
		a=$(stats)
		eval "exec ${IDLER[1]}>&-"
		wait "$IDLER_PID" 2>/dev/null || true
		cleanup
		line=$(awk -v s="$s" -v n="${n:-0}" -v b="$b" -v a="$a" 'BEGIN{
			split(b, x, "[ =]"); split(a, y, "[ =]")
			printf "server=%s conns=%d rss_before=%d rss_after=%d bytes_per_conn=%.0f goroutines_before=%d goroutines_after=%d",
				s, n, x[3], y[3], (n ? (y[3] - x[3]) / n : 0), x[5], y[5] }')
		echo "$line" | tee -a "$IDLE_RAW" >&2
		sleep 1
	done
fi

# Summary: medians, and ratios against net/http on Go's net and fasthttp.
SUM=$OUT/summary.md
{
	echo "| workload | round | server | req/s | vs net/http of the round | vs fasthttp of the round | vs nginx of the round | vs the first server of the round |"
	echo "|---|---|---|---|---|---|---|---|"
	first=${SERVERS%% *}
	awk -v first="$first" '{ delete v; for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		k = v["workload"] " " v["round"]; if (!(k in seen)) { seen[k] = 1; keys[++n] = k }
		rps[k, v["server"]] = v["rps"]; srv[k, ++m[k]] = v["server"] }
		function ratio(a, b) { return (a == "" || b == "" || b == 0) ? "-" : sprintf("%.2fx", a / b) }
		END { for (i = 1; i <= n; i++) { k = keys[i]; split(k, wr, " ")
			for (j = 1; j <= m[k]; j++) { s = srv[k, j]
				printf "| %s | %s | %s | %.0f | %s | %s | %s | %s |\n", wr[1], wr[2], s, rps[k, s], ratio(rps[k, s], rps[k, "nethttp"]), ratio(rps[k, s], rps[k, "fasthttp"]), ratio(rps[k, s], rps[k, "nginx"]), ratio(rps[k, s], rps[k, first]) } } }' "$RAW"
	echo
	echo "| workload | server | req/s | vs net/http | vs fasthttp | vs nginx | vs nbhttp | server CPU us/req | CPU/req vs net/http | p99 ms |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	for w in $WORKLOADS; do
		base=$(median "$w" nethttp rps) fast=$(median "$w" fasthttp rps) ngx=$(median "$w" nginx rps) nb=$(median "$w" nbhttp rps) bcpu=$(median "$w" nethttp srv_us_per_req)
		for s in $SERVERS; do
			awk -v w="$w" -v s="$s" -v r="$(median "$w" "$s" rps)" -v c="$(median "$w" "$s" srv_us_per_req)" -v p="$(median "$w" "$s" p99_ms)" \
				-v base="$base" -v fast="$fast" -v ngx="$ngx" -v nb="$nb" -v bcpu="$bcpu" 'function ratio(a, b) { return (a == "nan" || b == "nan" || b == 0) ? "-" : sprintf("%.2fx", a / b) }
				BEGIN { printf "| %s | %s | %.0f | %s | %s | %s | %s | %s | %s | %s |\n", w, s, r, ratio(r, base), ratio(r, fast), ratio(r, ngx), ratio(r, nb), c, ratio(c, bcpu), (p == "nan" ? "-" : p) }'
		done
	done
	if [[ -s $IDLE_RAW ]]; then
		echo
		echo "| idle keep-alive connections | server | RSS per connection | goroutines before -> after |"
		echo "|---|---|---|---|"
		awk '{ delete v; for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
			printf "| %d | %s | %.2f KiB | %d -> %d |\n", v["conns"], v["server"], v["bytes_per_conn"] / 1024, v["goroutines_before"], v["goroutines_after"] }' "$IDLE_RAW"
	fi
} | tee "$SUM"

if [[ $WRITE == 1 ]]; then
	{
		echo
		echo "### The current table ($(date -u +%Y-%m-%d\ %H:%M) UTC)"
		echo
		echo "\`ROUNDS=$ROUNDS DUR=$DUR WORKLOADS=\"$WORKLOADS\" scripts/bench-uringhttp.sh\` at $(git -C "$ROOT" rev-parse --short HEAD)"
		echo "(medians of $ROUNDS alternating rounds; ${RATE:+rate: $RATE requests/s offered; }pinned: server CPU 0 GOMAXPROCS=1, client CPU 1;"
		echo "the machine has $NCPU cores shared with other work: ratios, not absolute figures)."
		echo
		cat "$SUM"
	} >"$OUT/section.md"
	echo "# written to $OUT/section.md: it replaces the current table of BENCHMARKS.md's uringhttp section" >&2
fi
echo "raw: $RAW" >&2
