#!/usr/bin/env bash
# Quick side-by-side echo runs (A B A B ...) with the independent load generator of
# ../shared/bench (build it first: any ../shared/bench/run.sh run leaves it in
# $BIN, default /tmp/anchor-bench/bin). Server pinned to CPU 0 (GOMAXPROCS=1), client to CPU 1.
#   CMD_cb="bin/echo-server -addr 127.0.0.1:9100 -api callback -loops 1 -metrics-addr=" \
#     scripts/ab-open.sh 2 "-c 1000 -s 12 -d 1 -r 40000" stdnet cb
# ROUNDS, then the echoload flags (add -r RATE for open loop), then server names: stdnet, gnet,
# uring (the harness's servers) or NAME with its command line in $CMD_NAME (listening on 127.0.0.1:9100).
B=${BIN:-/tmp/anchor-bench/bin}
R=$1; CFG=$2; shift 2
for ((r=1;r<=R;r++)); do
 for s in "$@"; do
  v=CMD_$s; cmd=${!v}
  case $s in stdnet) cmd="$B/stdnet -addr 127.0.0.1:9100";; gnet) cmd="$B/gnet -addr 127.0.0.1:9100 -loops 1";; uring) cmd="$B/uring -addr 127.0.0.1:9100";; esac
  for try in 1 2 3; do
   GOMAXPROCS=1 taskset -c 0 $cmd >/tmp/ab-$s.log 2>&1 & pid=$!
   for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/9100) 2>/dev/null && break; sleep 0.05; done
   sleep 0.2
   line=$(taskset -c 1 $B/echoload -p 9100 $CFG -w ${WARM:-1} -t ${DUR:-5} -P $pid -l $s 2>&1)
   # The busiest thread's share of the server's CPU: below 1 for a Go net server (its reads run on
   # whichever thread polls) but for uringrt a sign of a thread woken for every message.
   line="$line $(for f in /proc/$pid/task/*/stat; do awk '{print $14+$15}' $f; done | sort -rn | awk '{t+=$1; if(NR==1)m=$1} END{printf "top_thread=%.2f", (t?m/t:0)}')"
   kill $pid; wait $pid 2>/dev/null
   # Another process used more than 15 % of a CPU: the run is not comparable, repeat it.
   other=$(echo "$line" | tr ' ' '\n' | sed -n 's/^other_cpu=//p'); other=${other%.*}
   [ "${other:-0}" -le 15 ] && break
   echo "  (noisy: other_cpu=$other, repeating $s)" >&2; sleep 2
  done
  echo "r=$r $line" | tr ' ' '\n' | grep -E '^(r=|label|tps|p50_us|p99_us|p999_us|srv_cpu_us_per_kmsg|srv_vcsw_per_kmsg|srv_ivcsw_per_kmsg|other_cpu|cli_cpu|top_thread)' | tr '\n' ' '; echo
  sleep 0.3
 done
done
