#!/usr/bin/env bash
# Interleaved upload rounds against the benchmark's nginx, for comparing two builds or clients more finely than
# one full run can: `Benchmarks/tools/upload-rounds.sh ROUNDS [client…]`.
#
# Start the server first (`SERVE=1 NO_INSTALL=1 Benchmarks/run.sh &`). A client is `asynchttp`, `ahc`, `urlsession`
# (the release binaries), `curl`, `raw` (raw_put.py: the least a sender can do) or a path to a bench binary
# (a copy of an older build, say). Each run is 16 × 64 MiB; prints each client's median and all its figures.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BIN=$(swift build -c release --package-path "$ROOT/Benchmarks" --show-bin-path)
FILE="$ROOT/Benchmarks/.bench/upload-64m.bin"
PORT=${HTTP_PORT:-18080}
ROUNDS=${1:?usage: upload-rounds.sh ROUNDS [client…]}
shift
if [[ $# -gt 0 ]]; then CLIENTS=("$@"); else CLIENTS=(asynchttp ahc curl); fi

one() {
    case $1 in
        curl)
            local start end
            start=$(date +%s.%N)
            for _ in $(seq 16); do curl -sf -o /dev/null -T "$FILE" "http://127.0.0.1:$PORT/dav/curl.bin"; done
            end=$(date +%s.%N)
            python3 -c "print(round(16 * 64 * 1048576 / ($end - $start) / 1e6))" ;;
        raw) python3 "$ROOT/Benchmarks/tools/raw_put.py" --port "$PORT" --chunk-kib 65536 | cut -d' ' -f4 ;;
        *)
            local exe=$1
            [[ -x $exe ]] || exe="$BIN/bench-$1"
            "$exe" --scenario upload --url "http://127.0.0.1:$PORT" --requests 16 2>/dev/null |
                python3 -c "import json, sys; print(round(json.loads(sys.stdin.read().splitlines()[-1])['mb_per_s']))" ;;
    esac
}

for ((round = 0; round < ROUNDS; round++)); do
    for client in "${CLIENTS[@]}"; do
        cat "$FILE" >/dev/null # the page cache, as run.sh's warm_cache
        echo "$(basename "$client") $(one "$client")"
    done
done | python3 -c '
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in sys.stdin:
    name, value = line.split()
    runs[name].append(int(value))
for name, values in runs.items():
    print(f"{name:12} median {statistics.median(values):7.0f} MB/s  {sorted(values)}")'
