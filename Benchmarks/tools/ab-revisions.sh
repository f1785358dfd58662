#!/usr/bin/env bash
# Interleaved before/after of one change: bench-asynchttp built from another checkout (BASE_ROOT, e.g. a
# `git worktree add --detach ../base <rev>` with `swift build -c release --package-path Benchmarks --product
# bench-asynchttp` run in it), this checkout's bench-asynchttp, and AHC, against the benchmark nginx started by
# `SERVE=1 Benchmarks/run.sh`. Prints one JSON line per run; ROUNDS (3) and SCENARIOS ("seq conc download tls-seq";
# gzip too).
#   BASE_ROOT=../base Benchmarks/tools/ab-revisions.sh > ab.jsonl
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BENCH=$HERE/Benchmarks/.bench
NEW=$(cd "$HERE" && swift build -c release --package-path Benchmarks --show-bin-path)
BASE=$(cd "${BASE_ROOT:?set BASE_ROOT to the other checkout}" && swift build -c release --package-path Benchmarks --show-bin-path)
ROUNDS=${ROUNDS:-3}
for ((round = 1; round <= ROUNDS; round++)); do
  for scenario in ${SCENARIOS:-seq conc download tls-seq}; do
    for client in base new ahc; do
      case $client in base) bin=$BASE/bench-asynchttp ;; new) bin=$NEW/bench-asynchttp ;; ahc) bin=$NEW/bench-ahc ;; esac
      url=http://127.0.0.1:18080; concurrency=1; extra=(--seconds 5 --requests 2000000)
      case $scenario in tls-*) url=https://127.0.0.1:18443 ;; esac
      case $scenario in
        conc) concurrency=32 ;;
        download) extra=(--requests 8); cat $BENCH/www/256m.bin > /dev/null ;;
        gzip) extra=(--requests 32); cat $BENCH/www/gz/data.json.gz > /dev/null ;;
      esac
      out=$(timeout 150 "$bin" --scenario "$scenario" --url "$url" --concurrency "$concurrency" --cacert "$BENCH/cert.pem" "${extra[@]}" 2>/dev/null | tail -1)
      echo "{\"round\": $round, \"who\": \"$client\", \"scenario\": \"$scenario\", \"result\": $out}"
    done
  done
done
