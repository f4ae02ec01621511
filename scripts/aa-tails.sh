#!/usr/bin/env bash
# aa-tails.sh: equal-load (or closed-loop) points with an A/A control, to tell a server's effect from
# the machine's noise. Each point runs Go net twice (stdnet and stdnet2: the same binary, started
# afresh each run) and both uringrt APIs, ROUNDS rounds alternating (scripts/ab-open.sh: server on
# CPU 0 with GOMAXPROCS=1, client on CPU 1, a run disturbed by other processes repeated). It then
# prints, per point and server, the medians of msgs/s, server CPU per 1000 messages (us), p99 and
# p99.9 (us), each with its ratio to stdnet's median. stdnet2's ratios are the measurement's own
# spread: a ratio of another server inside that band is not a difference this machine can show.
#
#   scripts/aa-tails.sh "i@37000 ii@52000 iii@139000 iv@6000"   # open loop at fixed rates
#   ROUNDS=3 scripts/aa-tails.sh "i iii"                          # closed loop
#
# Points: i (1000 conns, 12 B, depth 1), ii (100, 512 B, 1), iii (10, 4 KiB, 8), iv (16, 64 KiB, 4),
# as ../shared/bench/run.sh; "@R" adds a fixed offered load of R msgs/s. Env: ROUNDS (5),
# URINGRT_BIN (default: builds bin/echo-server), BIN (the harness's binaries, /tmp/anchor-bench/bin),
# SERVERS (default "stdnet stdnet2 cb conn"), OUT (raw lines, default /tmp/aa-tails-<time>.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
[ $# -eq 1 ] || { sed -n '2,16p' "$0" >&2; exit 2; }
ROUNDS=${ROUNDS:-5}
export BIN=${BIN:-/tmp/anchor-bench/bin}
[ -x "$BIN/stdnet" ] && [ -x "$BIN/echoload" ] || { echo "aa-tails: no harness binaries in $BIN (run ../shared/bench/run.sh once)" >&2; exit 1; }
if [ -z "${URINGRT_BIN:-}" ]; then
  go build -o bin/echo-server ./cmd/echo-server
  URINGRT_BIN=$PWD/bin/echo-server
fi
export CMD_stdnet2="$BIN/stdnet -addr 127.0.0.1:9100"
export CMD_cb="$URINGRT_BIN -addr 127.0.0.1:9100 -api callback -loops 1 -metrics-addr="
export CMD_conn="$URINGRT_BIN -addr 127.0.0.1:9100 -api conn -loops 1 -metrics-addr="
SERVERS=${SERVERS:-stdnet stdnet2 cb conn}
OUT=${OUT:-/tmp/aa-tails-$(date +%Y%m%d-%H%M%S).txt}
: >"$OUT"
for p in $1; do
  cfg=${p%@*}
  case $cfg in
    i) flags="-c 1000 -s 12 -d 1" ;;
    ii) flags="-c 100 -s 512 -d 1" ;;
    iii) flags="-c 10 -s 4096 -d 8" ;;
    iv) flags="-c 16 -s 65536 -d 4" ;;
    *) echo "aa-tails: unknown config $cfg" >&2; exit 2 ;;
  esac
  [ "$p" != "$cfg" ] && flags="$flags -r ${p#*@}"
  echo "## $p" >>"$OUT"
  # shellcheck disable=SC2086
  scripts/ab-open.sh "$ROUNDS" "$flags" $SERVERS >>"$OUT" 2>&1
done
echo "# raw runs: $OUT" >&2
# Medians per point and server, and ratios to stdnet's.
awk '
function med(key,   n, i, j, v, a) {
  n = cnt[key]; for (i = 1; i <= n; i++) a[i] = val[key, i]
  for (i = 2; i <= n; i++) { v = a[i]; for (j = i - 1; j >= 1 && a[j] > v; j--) a[j + 1] = a[j]; a[j + 1] = v }
  return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
/^## / { pt = $2; if (!(pt in seen)) { seen[pt] = 1; pts[++npt] = pt }; next }
/^r=/ {
  delete f
  for (i = 1; i <= NF; i++) { k = $i; sub(/=.*/, "", k); v = $i; sub(/^[^=]*=/, "", v); f[k] = v }
  s = f["label"]; if (!((pt, s) in have)) { have[pt, s] = 1; srv[pt, ++ns[pt]] = s }
  split("tps srv_cpu_us_per_kmsg p99_us p999_us", ks, " ")
  for (k in ks) { key = pt SUBSEP s SUBSEP ks[k]; val[key, ++cnt[key]] = f[ks[k]] + 0 }
  runs[pt, s]++
}
END {
  split("tps srv_cpu_us_per_kmsg p99_us p999_us", ks, " ")
  for (p = 1; p <= npt; p++) {
    pt = pts[p]
    printf "\n%s\n%-8s %3s %22s %18s %18s %18s\n", pt, "server", "n", "msgs/s", "us/kmsg", "p99_us", "p999_us"
    for (i = 1; i <= ns[pt]; i++) {
      s = srv[pt, i]; printf "%-8s %3d", s, runs[pt, s]
      for (k = 1; k <= 4; k++) {
        m = med(pt SUBSEP s SUBSEP ks[k]); b = med(pt SUBSEP "stdnet" SUBSEP ks[k])
        printf " %11.0f (%4.2fx)", m, (b > 0 ? m / b : 0)
      }
      printf "\n"
    }
  }
}' "$OUT"
