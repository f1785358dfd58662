#!/usr/bin/env bash
# Builds the DocC documentation of every target that has a catalogue (Sources/<Target>/*.docc) with
# `swift package generate-documentation` (the swift-docc-plugin in Package.swift), and fails on any warning:
# an unresolved ``symbol`` link, a topic that names a missing article, a malformed doc comment.
# Archives land in .build/plugins/Swift-DocC/outputs/<Target>.doccarchive.
#
# Usage: scripts/docs.sh [Target…]   (no arguments: every target with a catalogue)
# CI runs it (.ci/run). Whether every public symbol has a doc comment at all is scripts/check-doc-coverage.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
    for catalogue in Sources/*/*.docc; do
        [ -d "$catalogue" ] || continue
        targets+=("$(basename "$(dirname "$catalogue")")")
    done
fi
if [ "${#targets[@]}" -eq 0 ]; then
    echo "docs: no Sources/*/*.docc catalogue found" >&2
    exit 1
fi

mkdir -p .build
status=0
for target in "${targets[@]}"; do
    log=".build/docs-$target.log"
    echo "== docs: $target"
    set +e
    swift package generate-documentation --target "$target" --warnings-as-errors >"$log" 2>&1
    result=$?
    set -e
    # --warnings-as-errors makes docc fail on its own warnings; a compiler warning met while building the
    # symbol graph does not, so any "warning:" line fails too.
    # SwiftPM's notes about a dependency's own layout ("'swift-distributed-tracing': found 1 file(s) which are
    # unhandled") are not ours to fix and are left out.
    if [ "$result" -ne 0 ] || grep "warning:" "$log" | grep -vq "^warning: '[^']*': found [0-9]* file(s) which are unhandled"; then
        grep -E "warning:|error:" "$log" | sort -u >&2 || tail -n 40 "$log" >&2
        echo "== docs: $target FAILED (full log: $log)" >&2
        status=1
    else
        echo "== docs: $target built without warnings ($(grep -o '[^ ]*\.doccarchive' "$log" | tail -n 1))"
    fi
done
exit "$status"
