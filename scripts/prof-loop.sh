#!/usr/bin/env bash
# Profile one echo server under load: server NAME (as in scripts/ab-open.sh) pinned to CPU 0,
# echoload on CPU 1 with the given flags; perf records CPU 0 (cpu-clock, 3 s, then
# sched:sched_switch, 1 s) into /tmp/perf-NAME.data and /tmp/sw-NAME.data.
#   scripts/prof-loop.sh cb "-c 1000 -s 12 -d 1 -r 40000"
B=${BIN:-/tmp/anchor-bench/bin}; s=$1; CFG=$2
v=CMD_$s; cmd=${!v}
case $s in stdnet) cmd="$B/stdnet -addr 127.0.0.1:9100";; gnet) cmd="$B/gnet -addr 127.0.0.1:9100 -loops 1";; uring) cmd="$B/uring -addr 127.0.0.1:9100";; esac
GOMAXPROCS=1 taskset -c 0 $cmd >/tmp/ab-$s.log 2>&1 & pid=$!
for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/9100) 2>/dev/null && break; sleep 0.05; done
taskset -c 1 $B/echoload -p 9100 $CFG -w 1 -t 6 -P $pid -l $s > /tmp/prof-$s.line 2>&1 &
cl=$!
sleep 2
perf record -o /tmp/perf-$s.data -a -C 0 -e cpu-clock -g -- sleep 3 >/dev/null 2>&1
perf record -o /tmp/sw-$s.data -a -C 0 -e sched:sched_switch -g -- sleep 1 >/dev/null 2>&1
wait $cl; kill $pid; wait $pid 2>/dev/null
cat /tmp/prof-$s.line
