#!/usr/bin/env bash
# Two builds of bench-asynchttp run at the same time, against the benchmark nginx started by
# `SERVE=1 Benchmarks/run.sh`, for an A/B of one change on this machine, whose speed drifts by up to 2x between
# minutes: both runs see the same minute, so the drift weighs on both alike. They share the two cores and the one
# nginx worker, so each rate is lower than alone; the ratio B/A is what to read. A run of A against itself shows
# the spread of that ratio (about +-6 % for seq here). Prints one line per round.
#   Benchmarks/tools/side-by-side.sh A-BINARY B-BINARY [SCENARIO (seq)] [ROUNDS (4)] [SECONDS (3)] [CONCURRENCY (1)]
# `--chain` (no I/O) compares the same way without nginx: `taskset -c 0 A --chain N & taskset -c 1 B --chain N`,
# the cores swapped between rounds.
set -eu
A=${1:?A binary}
B=${2:?B binary}
SCENARIO=${3:-seq}
ROUNDS=${4:-4}
SECONDS_PER_RUN=${5:-3}
CONCURRENCY=${6:-1}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BENCH=$HERE/Benchmarks/.bench
URL=http://127.0.0.1:18080
case $SCENARIO in tls-*) URL=https://127.0.0.1:18443 ;; esac
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
for ((round = 1; round <= ROUNDS; round++)); do
  args=(--scenario "$SCENARIO" --url "$URL" --cacert "$BENCH/cert.pem" --seconds "$SECONDS_PER_RUN" --concurrency "$CONCURRENCY")
  "$A" "${args[@]}" > "$OUT/a.json" &
  "$B" "${args[@]}" > "$OUT/b.json"
  wait
  python3 - "$OUT/a.json" "$OUT/b.json" "$round" <<'PY'
import json, sys
a, b = (json.load(open(path)) for path in sys.argv[1:3])
def cpu(r): return r["cpu_s"] / r["requests"] * 1e6
print("round %s  A %9.0f req/s %6.1f us CPU/req   B %9.0f req/s %6.1f us CPU/req   B/A %.3f"
      % (sys.argv[3], a["req_per_s"], cpu(a), b["req_per_s"], cpu(b), b["req_per_s"] / a["req_per_s"]))
PY
done
