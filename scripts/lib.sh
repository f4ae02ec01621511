# Shell helpers shared by the benchmark scripts (sourced, not run):
#   . "$(dirname "$0")/lib.sh"
# The caller sets PORT before wait_port, and SPID (the server's PID) for
# cleanup, which the EXIT trap set here runs.

# cpu_ticks PID: utime+stime of the process (all threads), in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# cpus_busy: the CPUs' non-idle time (user nice system irq softirq steal), ticks
cpus_busy() { awk '$1 == "cpu" {print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat; }

# wait_port: wait up to 10 s for a listener on 127.0.0.1:$PORT.
wait_port() {
	for _ in $(seq 200); do
		if (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null; then return 0; fi
		sleep 0.05
	done
	echo "server did not listen on $PORT" >&2
	return 1
}

# cleanup: stop the server $SPID, if any, and wait for it.
SPID=
cleanup() {
	if [[ -n $SPID ]]; then kill "$SPID" 2>/dev/null || true; wait "$SPID" 2>/dev/null || true; fi
	SPID=
}
trap cleanup EXIT

# start_h1_pinned SPEC: start bench/cmd/h1-server as SPEC says,
# NAME=BIN[:SERVER[:ENV,ENV...]] (SERVER defaults to uringhttp), on CPU 0
# with GOMAXPROCS=1 and one loop, on the next port (PORT+1), 13-byte body;
# sets name, PORT and SPID and waits for it to listen.
start_h1_pinned() {
	local rest bin srv envs
	name=${1%%=*} rest=${1#*=}
	IFS=: read -r bin srv envs <<<"$rest"
	PORT=$((PORT + 1))
	env ${envs//,/ } GOMAXPROCS=1 taskset -c 0 "$bin" -server "${srv:-uringhttp}" -addr "127.0.0.1:$PORT" -size 13 -loops 1 >/dev/null 2>&1 &
	SPID=$!
	wait_port
}
