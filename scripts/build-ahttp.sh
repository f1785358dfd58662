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
# - libxml2 off the link: the web archive and S3 load it on first use (Sources/CLibXML2/shim.h), but SwiftPM
#   adds pkg-config's `-lxml2` to every link of a program that imports them, and the loader would then map libxml2,
#   ICU (a 31 MB data library and a C++ one) and liblzma at every start, 0.4-0.7 ms of CPU per start here. A .pc
#   file of our own, found first through PKG_CONFIG_PATH, gives libxml2's Cflags (the headers) without its Libs.
# Its own scratch path: the flags change the compile commands, so sharing .build would rebuild everything at each
# switch between this and an ordinary build.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
SCRATCH_PATH="${SCRATCH:-$ROOT/.build-ahttp}"
# Absolute: SwiftPM ignores a relative PKG_CONFIG_PATH entry (found with SCRATCH=Benchmarks/.build-ahttp).
[[ $SCRATCH_PATH == /* ]] || SCRATCH_PATH="$ROOT/$SCRATCH_PATH"
PC_DIR="$SCRATCH_PATH/pkgconfig"
command -v pkg-config >/dev/null && pkg-config --exists libxml-2.0 \
    || { echo "build-ahttp.sh: needs pkg-config and libxml2's headers (Debian: apt install pkg-config libxml2-dev)" >&2; exit 1; }
mkdir -p "$PC_DIR"
printf 'Name: libxml-2.0\nDescription: libxml2 headers only, loaded with dlopen on first use (scripts/build-ahttp.sh)\nVersion: %s\nCflags: %s\n' \
    "$(pkg-config --modversion libxml-2.0)" "$(pkg-config --cflags libxml-2.0)" >"$PC_DIR/libxml-2.0.pc.new"
# Rewritten only when it changes, so that an unchanged file keeps the build plan.
if cmp -s "$PC_DIR/libxml-2.0.pc.new" "$PC_DIR/libxml-2.0.pc"; then rm "$PC_DIR/libxml-2.0.pc.new"
else mv "$PC_DIR/libxml-2.0.pc.new" "$PC_DIR/libxml-2.0.pc"; fi
export PKG_CONFIG_PATH="$PC_DIR${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
exec swift build -c release --product ahttp --static-swift-stdlib \
    -Xlinker --no-export-dynamic \
    -Xswiftc -Xfrontend -Xswiftc -disable-concrete-type-metadata-mangled-name-accessors \
    --scratch-path "$SCRATCH_PATH" "$@"
