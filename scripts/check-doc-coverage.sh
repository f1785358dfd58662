#!/usr/bin/env bash
# Fails when a public symbol of AsyncHTTP, AsyncHTTPCore or AsyncHTTP1 has no `///` doc comment.
#
# Reads the modules' symbol graphs (what DocC reads), made by swift-symbolgraph-extract from the debug build's
# modules, with the minimum access level `public`. Not counted: members the compiler synthesises or that a type
# gets from a protocol's default implementation (`==`, `hash(into:)`, `init(rawValue:)` of a raw-value enum),
# and implementations of a documented protocol requirement, which DocC shows with the requirement's comment.
# SPI symbols (`@_spi(Benchmarks)`) are not public API and are not extracted.
#
# Usage: scripts/check-doc-coverage.sh [--no-build]   (builds the AsyncHTTP target first unless --no-build)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$PWD"

if [ "${1:-}" != "--no-build" ]; then
    swift build --target AsyncHTTP >/dev/null
fi
BIN="$(swift build --show-bin-path)"
MODULES="$BIN/Modules"
[ -d "$MODULES" ] || MODULES="$BIN"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
TARGET_TRIPLE="$(swiftc -print-target-info | python3 -c 'import json,sys; print(json.load(sys.stdin)["target"]["triple"])')"

for module in AsyncHTTP1 AsyncHTTPCore AsyncHTTP; do
    swift-symbolgraph-extract -module-name "$module" -target "$TARGET_TRIPLE" -minimum-access-level public \
        -skip-synthesized-members -I "$MODULES" \
        -Xcc -fmodule-map-file="$ROOT/Sources/COpenSSL/module.modulemap" \
        -Xcc -fmodule-map-file="$ROOT/Sources/CZlib/module.modulemap" \
        -Xcc -fmodule-map-file="$ROOT/Sources/CEpoll/module.modulemap" \
        -Xcc -fmodule-map-file="$ROOT/Sources/CIntrinsics/module.modulemap" \
        -Xcc -fmodule-map-file="$ROOT/Sources/CCRC32/include/module.modulemap" \
        -Xcc -fmodule-map-file="$ROOT/Sources/CLibXML2/module.modulemap" \
        -I /usr/include/libxml2 -output-dir "$OUT" >/dev/null
done

python3 - "$OUT" "$ROOT" <<'PY'
import glob, json, os, sys
out, root = sys.argv[1], sys.argv[2]
total, missing = 0, []
for path in sorted(glob.glob(os.path.join(out, "*.symbols.json"))):
    name = os.path.basename(path)
    module = name.split(".")[0].split("@")[0]
    if module not in ("AsyncHTTP", "AsyncHTTPCore", "AsyncHTTP1"):
        continue
    graph = json.load(open(path))
    # Implementations of protocol requirements: documented where the requirement is.
    implementations = {r["source"] for r in graph.get("relationships", []) if r["kind"] == "defaultImplementationOf"}
    for symbol in graph["symbols"]:
        if symbol.get("accessLevel") not in ("public", "open"):
            continue
        location = symbol.get("location", {}).get("uri", "")
        # Symbols of other modules (re-exported HTTPTypes, the standard library's extensions) are not ours.
        if location and "/Sources/" not in location:
            continue
        ident = symbol["identifier"]["precise"]
        if "::SYNTHESIZED::" in ident or ident in implementations:
            continue
        total += 1
        if not symbol.get("docComment", {}).get("lines"):
            where = location.replace("file://", "")
            where = os.path.relpath(where, root) if where else module
            line = symbol.get("location", {}).get("position", {}).get("line", -1) + 1
            missing.append("%s:%d: %s %s" % (where, line, symbol["kind"]["displayName"].lower(),
                                            ".".join(symbol["pathComponents"])))
for entry in sorted(set(missing)):
    print("undocumented:", entry)
print("check-doc-coverage: %d public symbols, %d without a doc comment" % (total, len(set(missing))))
sys.exit(1 if missing else 0)
PY
