#!/usr/bin/env bash
# The CI's short fuzz pass: builds the fuzz configuration and runs every target for 20 s
# (scripts/fuzz.sh 20; docs/fuzzing.md). Fails if a target crashes or a property check fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
started=$(date +%s)
status=0
./scripts/fuzz.sh 20 || status=$?
echo "== fuzz-ci: $(( $(date +%s) - started )) s wall time, exit $status"
exit "$status"
