#!/bin/bash
# Client vs server CPU per message, side by side (issue 4): each argument is
# NAME=SERVER_COMMAND|CLIENT_ENGINE; servers listen on 127.0.0.1:7777 pinned to
# CPU 0, echo-client (-c $C -s $S -depth $DEPTH, default 1000, 12, 1) pinned to
# CPU 1; rounds alternate.
# usage: scripts/client-cpu.sh ROUNDS DURATION SPEC...   (after make build)
R=$1; D=$2; shift 2
for r in $(seq 1 $R); do
 for spec in "$@"; do
  name=${spec%%=*}; rest=${spec#*=}; srv=${rest%%|*}; eng=${rest#*|}
  GOMAXPROCS=1 taskset -c 0 $srv >/dev/null 2>&1 & P=$!
  for i in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/7777) 2>/dev/null && break; sleep 0.1; done
  out=$(GOMAXPROCS=1 taskset -c 1 "$(dirname "$0")/../bin/echo-client" -engine $eng -c ${C:-1000} -s ${S:-12} -depth ${DEPTH:-1} -d $D -warmup 1s -server-pid $P 2>/dev/null)
  echo "$name $out"
  kill -TERM $P; wait $P 2>/dev/null
 done
done
