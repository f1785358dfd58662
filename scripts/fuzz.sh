#!/usr/bin/env bash
# Builds the libFuzzer targets (Fuzz/, docs/fuzzing.md) and runs each in turn:
#   ./scripts/fuzz.sh [seconds per target, default 60] [target…]   (default: all targets)
#
# - builds with ASYNCHTTP_FUZZ=1 (which adds the targets to Package.swift) in release, with
#   -sanitize=fuzzer,address and -enable-testing, into .build-fuzz/ (its own scratch path: the plain build
#   in .build/ is never touched);
# - runs one fuzz process at a time, in-process and single-threaded (no -jobs/-workers: libFuzzer's -jobs=1
#   would fork a child logging to ./fuzz-0.log; the machine's cores are shared), seeded from the
#   checked-in corpus Fuzz/corpus/<target>/ plus the corpus grown by earlier runs in Fuzz/work/<target>/
#   (gitignored; new inputs are only ever written there);
# - a crash or failed property leaves its reproducer in Fuzz/work/crashes/ (gitignored);
# - prints executions, corpus size and the result per target; exits 1 if any target crashed.
# Reproduce: .build-fuzz/release/<target> <file>   (with ASYNCHTTP_FUZZ_KNOWN=1 for a known finding).
set -euo pipefail
{
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

ALL_TARGETS=(FuzzResponseParser FuzzChunked FuzzURL FuzzCookie FuzzAuthChallenge FuzzPublicSuffix FuzzInflate)
SECONDS_PER_TARGET="${1:-60}"
shift || true
if [ "$#" -gt 0 ]; then TARGETS=("$@"); else TARGETS=("${ALL_TARGETS[@]}"); fi
if ! [[ "$SECONDS_PER_TARGET" =~ ^[0-9]+$ ]]; then
    echo "usage: $0 [seconds per target] [target…]" >&2
    exit 2
fi
if ! command -v swift >/dev/null && [ -x /opt/swift/usr/bin/swift ]; then export PATH="/opt/swift/usr/bin:$PATH"; fi

SCRATCH=".build-fuzz"
WORK="Fuzz/work"
CRASHES="$WORK/crashes"
mkdir -p "$CRASHES"

build_started=$(date +%s)
for target in "${TARGETS[@]}"; do
    echo "== building $target"
    if ! ASYNCHTTP_FUZZ=1 swift build -c release --scratch-path "$SCRATCH" --product "$target" \
        -Xswiftc -sanitize=fuzzer,address -Xswiftc -enable-testing >"$WORK/build.log" 2>&1; then
        grep -vE "^\[[0-9]+/[0-9]+\]" "$WORK/build.log" | tail -n 40 >&2
        echo "== $target: BUILD FAILED" >&2
        exit 1
    fi
done
echo "== build: $(( $(date +%s) - build_started )) s"

max_len() {
    case "$1" in
        FuzzResponseParser|FuzzChunked|FuzzInflate) echo 8192 ;;
        *) echo 1024 ;;
    esac
}

# The Swift runtime's backtracer would hold the crash for up to 30 s; libFuzzer reports it itself.
export SWIFT_BACKTRACE=enable=no
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}"

summary=()
failed=0
for target in "${TARGETS[@]}"; do
    corpus="$WORK/$target"
    seeds="Fuzz/corpus/$target"
    mkdir -p "$corpus"
    log="$WORK/$target.log"
    dirs=("$corpus")
    [ -d "$seeds" ] && dirs+=("$seeds")
    echo "== fuzzing $target for ${SECONDS_PER_TARGET} s (log: $log)"
    started=$(date +%s)
    set +e
    "$SCRATCH/release/$target" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 \
        -rss_limit_mb=2048 -max_len="$(max_len "$target")" -print_final_stats=1 \
        -artifact_prefix="$CRASHES/$target-" "${dirs[@]}" >"$log" 2>&1
    status=$?
    set -e
    elapsed=$(( $(date +%s) - started ))
    executions="$(grep -E "^stat::number_of_executed_units" "$log" | awk '{print $2}' | tail -n 1)"
    [ -n "$executions" ] || executions="$(grep -oE "^#[0-9]+" "$log" | tail -n 1 | tr -d '#')"
    corpus_size="$(find "$corpus" -type f | wc -l)"
    if [ "$status" -eq 0 ]; then
        result="ok"
    else
        result="CRASH (exit $status)"
        failed=1
        artifact="$(grep -oE "Test unit written to [^ ]+" "$log" | tail -n 1 | sed 's/Test unit written to //')"
        [ -n "$artifact" ] && result="$result: $artifact"
        grep -E "FUZZ PROPERTY VIOLATED|ERROR: AddressSanitizer|ERROR: libFuzzer|Fatal error" "$log" | head -n 3 | sed "s/^/   /"
    fi
    line="$(printf "%-20s %4ss  %12s executions  corpus %6s  %s" "$target" "$elapsed" "${executions:-?}" "$corpus_size" "$result")"
    echo "== $line"
    summary+=("$line")
done

echo
echo "== fuzzing summary (${SECONDS_PER_TARGET} s per target)"
printf '%s\n' "${summary[@]}"
exit "$failed"
}
