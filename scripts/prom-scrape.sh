#!/usr/bin/env bash
# prom-scrape.sh: scrape a live echo-server with a real Prometheus.
#
#   scripts/prom-scrape.sh [ECHO_SERVER_BIN]
#
# Starts the echo-server (default bin/echo-server, built if absent) on
# loopback with -metrics-addr and -loop-readiness, drives a little echo traffic, starts
# Prometheus with a 1 s scrape of job "uringrt", and polls Prometheus's HTTP
# API (bounded) until up{job="uringrt"} == 1 and
# sum(uringrt_cqes_reaped_total) > 0. Prints the values. Exit 0 only if both
# hold; both processes are killed on exit.
#
# Without a `prometheus` binary on PATH it prints "skip: prometheus not
# installed" and exits 0, or exits 1 when REQUIRE_PROMETHEUS=1.
# (Debian: apt-get install -y prometheus.)
#
# Environment: REQUIRE_PROMETHEUS=1, PROM_SCRAPE_TIMEOUT (seconds, default 30),
# ECHO_CLIENT_BIN (default bin/echo-client).
set -euo pipefail

cd "$(dirname "$0")/.."

log() { printf 'prom-scrape: %s\n' "$*" >&2; }

if ! command -v prometheus >/dev/null 2>&1; then
	if [[ "${REQUIRE_PROMETHEUS:-0}" == 1 ]]; then
		log "prometheus not installed and REQUIRE_PROMETHEUS=1"
		exit 1
	fi
	echo "skip: prometheus not installed"
	exit 0
fi

server_bin=${1:-bin/echo-server}
client_bin=${ECHO_CLIENT_BIN:-bin/echo-client}
timeout_s=${PROM_SCRAPE_TIMEOUT:-30}

if [[ ! -x "$server_bin" ]]; then
	if [[ $# -ge 1 ]]; then
		log "echo-server binary $server_bin not found or not executable"
		exit 1
	fi
	log "building $server_bin"
	go build -o "$server_bin" ./cmd/echo-server
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/prom-scrape.XXXXXX")
server_pid=""
prom_pid=""

stop() {
	local pid=$1
	[[ -n "$pid" ]] || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	for _ in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

cleanup() {
	local rc=$?
	stop "$prom_pid"
	stop "$server_pid"
	if [[ $rc -ne 0 ]]; then
		for f in echo-server.log echo-client.log prometheus.log; do
			[[ -s "$tmp/$f" ]] || continue
			log "--- last lines of $f"
			tail -n 20 "$tmp/$f" >&2
		done
	fi
	rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# listening HOST PORT: true if something accepts connections there.
listening() {
	(exec 3<>"/dev/tcp/$1/$2") 2>/dev/null
}

# Ports are drawn below the kernel's ephemeral range, so that no outgoing
# connection (a load generator's thousands of them) holds the one we pick.
read -r eph_lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || eph_lo=32768
port_lo=10000 port_span=$((eph_lo - 10000))
((port_span >= 1000)) || port_span=20000

# free_port VAR: set VAR to a loopback TCP port nothing listens on and that
# was not handed out before (no subshell, so "taken" persists).
taken=" "
free_port() {
	local p
	for _ in $(seq 200); do
		p=$((port_lo + RANDOM % port_span))
		[[ "$taken" == *" $p "* ]] && continue
		if ! listening 127.0.0.1 "$p"; then
			taken+="$p "
			printf -v "$1" '%s' "$p"
			return 0
		fi
	done
	log "no free port found"
	return 1
}

# wait_listening HOST PORT SECONDS PID: wait until HOST:PORT accepts, failing
# early if PID has exited.
wait_listening() {
	local deadline=$((SECONDS + $3))
	until listening "$1" "$2"; do
		if ! kill -0 "$4" 2>/dev/null; then
			log "process $4 exited before listening on $1:$2"
			return 1
		fi
		if ((SECONDS >= deadline)); then
			log "nothing listening on $1:$2 after $3 s"
			return 1
		fi
		sleep 0.1
	done
}

http_get() {
	curl -fsS --max-time 5 "$1"
}
if ! command -v curl >/dev/null 2>&1; then
	http_get() { wget -q -T 5 -O - "$1"; }
fi

# prom_value QUERY: the value of the first sample of an instant query, or
# nothing. QUERY must already be URL-encoded.
prom_value() {
	local body
	body=$(http_get "http://$prom_addr/api/v1/query?query=$1" 2>/dev/null) || return 0
	[[ "$body" == *'"status":"success"'* ]] || return 0
	sed -n 's/.*"value":\[[^,]*,"\([^"]*\)"\].*/\1/p' <<<"$body" | head -n 1
}

# drive_traffic ADDR PORT: echo traffic through the server.
drive_traffic() {
	local host=$1 port=$2
	if [[ -x "$client_bin" ]]; then
		log "traffic: $client_bin -addr $host:$port -c 10 -d 2s -warmup 200ms"
		if "$client_bin" -addr "$host:$port" -c 10 -d 2s -warmup 200ms >"$tmp/echo-client.log" 2>&1; then
			tail -n 5 "$tmp/echo-client.log" >&2
			return 0
		fi
		log "echo-client failed; falling back to a bash loop"
		tail -n 5 "$tmp/echo-client.log" >&2
	fi
	# 10 connections x 10 messages, each read back with a 1 s bound.
	local c i line ok=0
	for c in $(seq 10); do
		exec 3<>"/dev/tcp/$host/$port" || continue
		for i in $(seq 10); do
			printf 'prom-scrape %d.%d\n' "$c" "$i" >&3 || break
			IFS= read -r -t 1 line <&3 || break
			[[ "$line" == "prom-scrape $c.$i" ]] && ok=$((ok + 1))
		done
		exec 3>&- 3<&-
	done
	log "traffic: bash loop, $ok/100 messages echoed"
}

server_port="" metrics_port="" prom_port=""
# A port can still be taken between the check and the bind: up to 3 tries.
for try in 1 2 3; do
	free_port server_port
	free_port metrics_port
	metrics_addr="127.0.0.1:$metrics_port"
	log "starting $server_bin -addr 127.0.0.1:$server_port -metrics-addr $metrics_addr"
	# -loop-readiness: with two or more Ps the net.Conn path's readers wait in
	# Go's netpoller by default and a small echo never touches the ring, so
	# the ring's counters would stay 0; the loop's POLLIN makes them count.
	"$server_bin" -addr "127.0.0.1:$server_port" -metrics-addr "$metrics_addr" -loop-readiness >"$tmp/echo-server.log" 2>&1 &
	server_pid=$!
	if wait_listening 127.0.0.1 "$server_port" 10 "$server_pid" &&
		wait_listening 127.0.0.1 "$metrics_port" 10 "$server_pid"; then
		break
	fi
	if ((try < 3)) && grep -q 'address already in use' "$tmp/echo-server.log"; then
		log "retrying: $(tail -n 1 "$tmp/echo-server.log")"
		stop "$server_pid"
		server_pid=""
		continue
	fi
	exit 1
done
free_port prom_port
prom_addr="127.0.0.1:$prom_port"

drive_traffic 127.0.0.1 "$server_port"

cat >"$tmp/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: uringrt
    scrape_interval: 1s
    scrape_timeout: 1s
    static_configs:
      - targets: ["$metrics_addr"]
YAML

log "starting prometheus on $prom_addr"
prometheus --config.file="$tmp/prometheus.yml" \
	--storage.tsdb.path="$tmp/data" \
	--web.listen-address="$prom_addr" >"$tmp/prometheus.log" 2>&1 &
prom_pid=$!
wait_listening 127.0.0.1 "$prom_port" 20 "$prom_pid"

q_up='up%7Bjob%3D%22uringrt%22%7D'                         # up{job="uringrt"}
q_cqes='sum%28uringrt_cqes_reaped_total%7Bjob%3D%22uringrt%22%7D%29' # sum(uringrt_cqes_reaped_total{job="uringrt"})
up="" cqes=""
deadline=$((SECONDS + timeout_s))
while :; do
	up=$(prom_value "$q_up")
	cqes=$(prom_value "$q_cqes")
	if [[ "$up" == 1 ]] && awk -v v="$cqes" 'BEGIN { exit !(v + 0 > 0) }'; then
		break
	fi
	if ! kill -0 "$server_pid" 2>/dev/null; then
		log "echo-server exited"
		break
	fi
	if ! kill -0 "$prom_pid" 2>/dev/null; then
		log "prometheus exited"
		break
	fi
	((SECONDS < deadline)) || break
	sleep 1
done

echo "up{job=\"uringrt\"} = ${up:-<none>}"
echo "sum(uringrt_cqes_reaped_total) = ${cqes:-<none>}"
backend=$(http_get "http://$prom_addr/api/v1/query?query=uringrt_backend_info" 2>/dev/null |
	sed -n 's/.*"backend":"\([^"]*\)".*/\1/p' | head -n 1) || true
echo "uringrt_backend_info backend = ${backend:-<none>}"
# The exposition as Prometheus ingested it: uringrt series, histogram
# buckets, and the Go and process collectors beside the runtime's.
q_series='count%28%7Bjob%3D%22uringrt%22%2C__name__%3D~%22uringrt_.%2B%22%7D%29' # count({job="uringrt",__name__=~"uringrt_.+"})
q_buckets='count%28uringrt_cqes_per_enter_bucket%7Bjob%3D%22uringrt%22%7D%29'      # count(uringrt_cqes_per_enter_bucket{job="uringrt"})
q_proc='count%28process_cpu_seconds_total%7Bjob%3D%22uringrt%22%7D%29'             # count(process_cpu_seconds_total{job="uringrt"})
q_go='count%28go_goroutines%7Bjob%3D%22uringrt%22%7D%29'                           # count(go_goroutines{job="uringrt"})
series=$(prom_value "$q_series")
buckets=$(prom_value "$q_buckets")
proc=$(prom_value "$q_proc")
gor=$(prom_value "$q_go")
echo "uringrt_* series = ${series:-<none>}"
echo "uringrt_cqes_per_enter_bucket series = ${buckets:-<none>}"
echo "process_cpu_seconds_total series = ${proc:-<none>}, go_goroutines series = ${gor:-<none>}"

if [[ "$up" != 1 ]]; then
	log "FAIL: target not up after ${timeout_s} s"
	exit 1
fi
if ! awk -v v="$cqes" 'BEGIN { exit !(v + 0 > 0) }'; then
	log "FAIL: sum(uringrt_cqes_reaped_total) is not > 0 after ${timeout_s} s"
	exit 1
fi
if [[ -z "$backend" ]]; then
	log "FAIL: no uringrt_backend_info series"
	exit 1
fi
if ! awk -v b="$buckets" -v p="$proc" -v g="$gor" 'BEGIN { exit !(b + 0 > 0 && p + 0 > 0 && g + 0 > 0) }'; then
	log "FAIL: histogram buckets, process_ or go_ collector series missing"
	exit 1
fi
echo "ok: Prometheus scraped the echo-server"
