#!/usr/bin/env bash
# equal-load.sh: issue 29's measurement with the independent harness (../shared/bench/run.sh):
# a closed-loop run of configs i-iv, then an open-loop run at 50 % (i, ii) and 25 % (iii, iv) of
# Go net's (stdnet's) closed-loop medians of that first run, rounded to the nearest 1,000 msgs/s.
# Server on CPU 0 (GOMAXPROCS=1), client on CPU 1, servers alternating within each round.
#
#   scripts/equal-load.sh                    # builds bin/echo-server, 3 rounds
#   ROUNDS=5 SERVERS="stdnet rt-conn" URINGRT_BIN=/path/echo-server scripts/equal-load.sh
#
# Prints both summaries and the load points; the results stay in $OUT (default /tmp/equal-load-<time>).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
BENCH=${BENCH:-$(cd .. && pwd)/shared/bench}
[ -x "$BENCH/run.sh" ] || { echo "equal-load: no harness at $BENCH (set BENCH)" >&2; exit 1; }
if [ -z "${URINGRT_BIN:-}" ]; then
  go build -o bin/echo-server ./cmd/echo-server
  URINGRT_BIN=$PWD/bin/echo-server
fi
export URINGRT_BIN
export SERVERS=${SERVERS:-stdnet gnet uring rt-callback rt-conn}
export ROUNDS=${ROUNDS:-3}
export WORK=${WORK:-/tmp/anchor-bench}
OUT=${OUT:-/tmp/equal-load-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"

echo "# closed loop" >&2
OUT=$OUT/closed CONFIGS="i ii iii iv" "$BENCH/run.sh" >/dev/null
# stdnet's tps_med per config from the closed-loop summary.
peak() { awk -v c="$1" '$1=="config"{cur=$2} cur==c && $1=="stdnet"{print $2}' "$OUT/closed/summary.txt"; }
point() { awk -v p="$(peak "$1")" -v f="$2" 'BEGIN{printf "%d", int(p*f/1000+0.5)*1000}'; }
pts="i@$(point i 0.5) ii@$(point ii 0.5) iii@$(point iii 0.25) iv@$(point iv 0.25)"
echo "# open loop at $pts (stdnet peaks: i $(peak i), ii $(peak ii), iii $(peak iii), iv $(peak iv))" | tee "$OUT/points.txt" >&2
OUT=$OUT/open CONFIGS="$pts" "$BENCH/run.sh" >/dev/null
echo "## closed loop"; cat "$OUT/closed/summary.txt"
echo; echo "## open loop: $(cat "$OUT/points.txt")"; cat "$OUT/open/summary.txt"
