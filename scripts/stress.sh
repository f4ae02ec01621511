#!/usr/bin/env bash
# stress.sh: run the whole test suite N times (default 20) under two CPU
# hogs, as on a loaded CI machine, and report pass/fail per run with the
# names of the tests that failed.
#
#   scripts/stress.sh [N] [go test args...]     (default: -race -count=1 -timeout 40m ./...)
#   HOGS=2 OUT=/tmp/stress scripts/stress.sh 20
#
# The hogs (`yes >/dev/null`) are stopped when the script exits, however it
# exits. Each run's output is kept in $OUT/run-<i>.log. Exit status: 0 when
# every run passed, 1 otherwise.
# Run it in a checkout nobody edits meanwhile: each run builds the tree as it
# is then.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin

runs=${1:-20}
shift || true
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(-race -count=1 -timeout 40m ./...) # CI's timeout: under two hogs the runtime package passes 10m
hogs=${HOGS:-2}
out=${OUT:-$(mktemp -d /tmp/uringrt-stress.XXXXXX)}
mkdir -p "$out"

pids=()
stop_hogs() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  pids=()
}
trap stop_hogs EXIT
trap 'exit 130' INT TERM
for ((h = 0; h < hogs; h++)); do
  yes >/dev/null &
  pids+=($!)
done

echo "stress: $runs runs of go test ${args[*]} under $hogs CPU hogs; logs in $out"
pass=0
fail=0
for ((i = 1; i <= runs; i++)); do
  log=$out/run-$i.log
  start=$(date +%s)
  if go test "${args[@]}" >"$log" 2>&1; then
    pass=$((pass + 1))
    echo "run $i: PASS ($(($(date +%s) - start))s)"
  else
    fail=$((fail + 1))
    # Failing tests (deepest names) and packages that failed without one
    # (a panic, a timeout, a build error).
    names=$(grep -E '^\s*--- FAIL: ' "$log" | sed -E 's/^\s*--- FAIL: ([^ ]+).*/\1/' | sort -u | tr '\n' ' ')
    pkgs=$(grep -E '^FAIL\s+\S+' "$log" | awk '{print $2}' | sort -u | tr '\n' ' ')
    [ -n "$names" ] || names="(no test named: see $log)"
    echo "run $i: FAIL ($(($(date +%s) - start))s) tests: $names packages: $pkgs"
  fi
done
echo "stress: $pass of $runs passed, $fail failed (logs in $out)"
[ "$fail" -eq 0 ]
