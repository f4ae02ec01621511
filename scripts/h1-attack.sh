#!/usr/bin/env bash
# Attacks on uringhttp and net/http side by side (bench/cmd/h1-attack: the
# same handlers, each server in a process of its own, loopback): for each
# attack, ROUNDS rounds, each running net/http then uringhttp (alternating
# which goes first), every run under the benchmark lock. Prints each run's
# line (RSS base/peak/growth/end in MiB, probes answered and their p99, the
# server's CPU, descriptors and goroutines after, and the attack's own
# figures) and, per attack, the pass rule of the attack review: growth <=
# 2x net/http's + 32 MiB, as many probes answered (missing at most one more,
# the probes sent differ by a few), p99 <= max(2x net/http's,
# net/http's + 50 ms), descriptors and goroutines back within 5 s.
#
#   scripts/h1-attack.sh                         # every attack, ROUNDS=2
#   ATTACKS="nonread slowread" ROUNDS=3 scripts/h1-attack.sh
#   N=10 D=3s ATTACKS=nonread scripts/h1-attack.sh   # a smaller attack
#   flock /tmp/uringrt-bench.lock env NOLOCK=1 ROUNDS=1 scripts/h1-attack.sh  # one lock for all
#
# Attacks (defaults in bench/cmd/h1-attack/attacks.go): nonread (100
# clients of a 200 MB download that never read), slowread (80 clients
# reading 10 MB at 2 MB/s), slow1k (1,000 clients reading at 1 KiB/s for
# 30 s), memback (one 50 MB download), upload4 (four 100 MB uploads),
# burst (2,000 keep-alive connections at once, one request each),
# timeouts (ReadHeaderTimeout 1 s with a partial head, IdleTimeout 2 s),
# pipeline (100 connections x 200,000 pipelined GETs, never read),
# shutdown (50 connections with part of a second head, then SIGTERM),
# hijack (100 hijacked connections that never read 1 MiB messages),
# upload200 (200 50 MB uploads at once to a slow handler), idle15k (15,000
# idle keep-alive connections under IdleTimeout 60 s: the server's CPU).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ATTACKS=${ATTACKS:-nonread slowread slow1k memback upload4 burst timeouts pipeline shutdown hijack upload200 idle15k}
ROUNDS=${ROUNDS:-2}
N=${N:-0}
D=${D:-0}
BIN=$(mktemp -d)/h1-attack
(cd "$ROOT/bench" && go build -o "$BIN" ./cmd/h1-attack)
ulimit -n "$(ulimit -Hn)"
# NOLOCK=1: the caller holds the benchmark lock for the whole run (a round
# of every attack under one lock, on a machine where others queue for it).
run() {
	if [[ -n ${NOLOCK:-} ]]; then "$BIN" -server "$1" -attack "$2" -n "$N" -d "$D"; return; fi
	flock /tmp/uringrt-bench.lock "$BIN" -server "$1" -attack "$2" -n "$N" -d "$D"
}
field() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }
for a in $ATTACKS; do
	for r in $(seq "$ROUNDS"); do
		order="nethttp uringhttp"
		((r % 2 == 0)) && order="uringhttp nethttp"
		declare -A line=()
		for s in $order; do
			line[$s]=$(run "$s" "$a")
			echo "${line[$s]}"
		done
		std=${line[nethttp]} ur=${line[uringhttp]}
		awk -v a="$a" -v r="$r" \
			-v sg="$(field "$std" growth)" -v ug="$(field "$ur" growth)" \
			-v sp="$(field "$std" probes)" -v up="$(field "$ur" probes)" \
			-v s99="$(field "$std" p99_ms)" -v u99="$(field "$ur" p99_ms)" \
			-v ub="$(field "$ur" back)" 'BEGIN {
			split(sp, s, "/"); split(up, u, "/")
			lim99 = 2 * s99; if (s99 + 50 > lim99) lim99 = s99 + 50
			pass = (ug <= 2 * sg + 32) && (u[2] - u[1] <= s[2] - s[1] + 1) && (u99 <= lim99) && ub == "true"
			printf "== %s round %d: growth %.1f vs %.1f MiB, probes %s vs %s, p99 %.1f vs %.1f ms, back %s: %s\n",
				a, r, ug, sg, up, sp, u99, s99, ub, pass ? "PASS" : "FAIL"
		}'
		unset line
	done
done
