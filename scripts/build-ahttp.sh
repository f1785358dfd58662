#!/usr/bin/env bash
# Builds `ahttp` for deployment: `./scripts/build-ahttp.sh [extra swift build arguments…]`; the binary is
# `.build-ahttp/release/ahttp` (SCRATCH=<dir> to build elsewhere; `--show-bin-path` prints the directory).
#
# Each flag makes a fresh process start sooner (docs/cli.md, docs/performance.md has the profiles):
# - --static-swift-stdlib: the Swift runtime linked in (no loading and relocating of libswiftCore and its
#   companions; runs on a machine without the toolchain);
# - -Xlinker --no-export-dynamic: undoes the -export-dynamic of the static runtime's link arguments (5,650 exported
#   symbols, 465 without, that the dynamic loader searches first for every library's symbols);
# - -disable-concrete-type-metadata-mangled-name-accessors: generic types are made by calling their metadata
#   accessors instead of demangling their names on first use, which also looked up each protocol conformance by
#   scanning the binary's whole conformance table.
# Its own scratch path: the flags change the compile commands, so sharing .build would rebuild everything at each
# switch between this and an ordinary build.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
exec swift build -c release --product ahttp --static-swift-stdlib \
    -Xlinker --no-export-dynamic \
    -Xswiftc -Xfrontend -Xswiftc -disable-concrete-type-metadata-mangled-name-accessors \
    --scratch-path "${SCRATCH:-$ROOT/.build-ahttp}" "$@"
