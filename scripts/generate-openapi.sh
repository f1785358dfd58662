#!/usr/bin/env bash
# Regenerates the OpenAPI client the tests use, Tests/AsyncHTTPTests/OpenAPIGenerated/{Types,Client}.swift, from
# Tests/OpenAPI/openapi.yaml (a few of httpbin's endpoints) with swift-openapi-generator.
#
#   scripts/generate-openapi.sh          after changing Tests/OpenAPI/openapi.yaml or its generator config
#
# The generated sources are committed, so that building and testing never build the generator (it pulls in
# OpenAPIKit, Yams and swift-argument-parser: several minutes on two cores). This script builds it once, in a
# scratch package outside the repository ($OPENAPI_GENERATOR_DIR, default $TMPDIR/asynchttp-openapi-generator),
# and reuses that build on later runs.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
GENERATOR_VERSION=1.14.3   # matches swift-openapi-runtime 1.13.x, which Package.swift depends on
WORK=${OPENAPI_GENERATOR_DIR:-${TMPDIR:-/tmp}/asynchttp-openapi-generator}
OUT=$ROOT/Tests/AsyncHTTPTests/OpenAPIGenerated

mkdir -p "$WORK/Sources/Placeholder"
cat > "$WORK/Package.swift" <<SWIFT
// swift-tools-version:6.2
// Scratch package made by AsyncHTTP's scripts/generate-openapi.sh: only here to build the generator.
import PackageDescription
let package = Package(
    name: "asynchttp-openapi-generator",
    dependencies: [.package(url: "https://github.com/apple/swift-openapi-generator", exact: "$GENERATOR_VERSION")],
    targets: [.executableTarget(name: "Placeholder", path: "Sources/Placeholder")]
)
SWIFT
echo 'print("placeholder")' > "$WORK/Sources/Placeholder/main.swift"

echo "generate-openapi.sh: building swift-openapi-generator $GENERATOR_VERSION in $WORK (once; minutes)" >&2
swift build --package-path "$WORK" --product swift-openapi-generator >&2
GENERATOR="$(swift build --package-path "$WORK" --show-bin-path)/swift-openapi-generator"

rm -rf "$OUT"
mkdir -p "$OUT"
"$GENERATOR" generate \
    --config "$ROOT/Tests/OpenAPI/openapi-generator-config.yaml" \
    --output-directory "$OUT" \
    "$ROOT/Tests/OpenAPI/openapi.yaml"
echo "generate-openapi.sh: wrote $(cd "$OUT" && ls *.swift | tr '\n' ' ')in ${OUT#"$ROOT"/}" >&2
