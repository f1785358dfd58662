#!/usr/bin/env bash
# Type-checks every Swift example in the documentation against the built AsyncHTTP module:
# ```swift blocks in README.md, docs/*.md and Sources/AsyncHTTP/AsyncHTTP.docc/*.md, and the ```swift blocks in
# the `///` comments of public declarations in Sources/AsyncHTTP, Sources/AsyncHTTPCore and Sources/AsyncHTTP1.
#
# Each example becomes the body of an `async throws` function (its `import` lines, protocols and extensions go to
# file scope), after a prelude of placeholder locals (`client`, `request`, `response`, …; see
# scripts/snippets/Placeholders.swift for the list and the free functions). The files are checked in one
# `swiftc -typecheck` with `import AsyncHTTP` only and the MemberImportVisibility upcoming feature on, so an
# example that needs a second import (HTTPTypes' `HTTPField`, say) fails here as it would for a user.
# Errors point at the Markdown or Swift file and line the example came from (#sourceLocation).
#
# Opt-outs: a block fenced ```swift no-compile (a deliberately partial one, such as a protocol quoted from the
# source) and a Package.swift manifest (a block starting `// swift-tools-version`, checked with
# `swift package dump-package` instead) are not type-checked; the summary counts them.
#
# An example may import another target of this package (another product's page): that target is built too.
#
# Usage: scripts/check-snippets.sh [--no-build]   (builds AsyncHTTP and those targets first unless --no-build)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$PWD"

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

python3 - "$ROOT" "$WORK" <<'PY'
import os, re, sys, glob, json
root, work = sys.argv[1], sys.argv[2]

PRELUDE = """    let client = HTTPClient.shared
    var request = HTTPClientRequest(url: "https://example.com/")
    var configuration = HTTPClient.Configuration()
    let response = HTTPClientResponse(status: .ok, url: try HTTPURL("https://example.com/"))
    let jar = CookieJar()
    let secret = "s3cret", token = "t0ken", password = "s3cret", userSupplied = "value"
    let urls: [String] = []
    let fileChunks = AsyncStream<[UInt8]> { $0.finish() }
    let chunks = fileChunks
    let size = 0
    let now = 1_700_000_000.0
    let bytes: [UInt8] = [], body: [UInt8] = []
    let requests: [HTTPClientRequest] = []
    let logger = Logger(label: "example")
    let path = "/tmp/file", credentialsPath = "/tmp/credentials.json", cachesDirectory = "/tmp"
    let file = PlaceholderFile()
    _ = (client, request, configuration, response, jar, secret, token, password, userSupplied, urls, fileChunks, chunks)
    _ = (size, now, bytes, body, requests, logger, path, credentialsPath, cachesDirectory, file)
    request = HTTPClientRequest(url: "https://example.com/")
    configuration = HTTPClient.Configuration()
"""

blocks = []   # (source file relative, first code line number, lines, kind)
counts = {"checked": 0, "no-compile": 0, "manifest": 0}

def markdown(path):
    lines = open(path).read().split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)```swift(.*)$", lines[i])
        if m:
            indent, info = m.group(1), m.group(2).strip()
            j = i + 1
            body = []
            while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
                body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j].lstrip())
                j += 1
            blocks.append((os.path.relpath(path, root), i + 2, body, info))
            i = j
        i += 1

def swift_source(path):
    lines = open(path).read().split("\n")
    i = 0
    while i < len(lines):
        if lines[i].strip().startswith("///"):
            start = i
            while i < len(lines) and lines[i].strip().startswith("///"):
                i += 1
            k = i
            while k < len(lines) and (lines[k].strip().startswith("@") or lines[k].strip().startswith("//")):
                k += 1
            decl = lines[k] if k < len(lines) else ""
            public = re.search(r"\b(public|open)\b", decl) is not None
            comment = [re.sub(r"^\s*/// ?", "", l) for l in lines[start:i]]
            c = 0
            while c < len(comment):
                m = re.match(r"^(\s*)```swift(.*)$", comment[c])
                if m:
                    indent, info = m.group(1), m.group(2).strip()
                    d = c + 1
                    body = []
                    while d < len(comment) and not re.match(r"^\s*```\s*$", comment[d]):
                        body.append(comment[d][len(indent):] if comment[d].startswith(indent) else comment[d].lstrip())
                        d += 1
                    if public:
                        blocks.append((os.path.relpath(path, root), start + c + 2, body, info))
                    c = d
                c += 1
        else:
            i += 1

for p in ["README.md"] + sorted(glob.glob(os.path.join(root, "docs", "*.md"))) + \
         sorted(glob.glob(os.path.join(root, "Sources", "AsyncHTTP", "AsyncHTTP.docc", "*.md"))):
    markdown(os.path.join(root, p) if not os.path.isabs(p) else p)
for target in ["AsyncHTTP", "AsyncHTTPCore", "AsyncHTTP1"]:
    for dp, _, fs in os.walk(os.path.join(root, "Sources", target)):
        for f in sorted(fs):
            if f.endswith(".swift"):
                swift_source(os.path.join(dp, f))

manifests = []
files = {}    # one Swift file per document, so that the examples of one page may share its types
for n, (src, line, body, info) in enumerate(blocks):
    if "no-compile" in info.split():
        counts["no-compile"] += 1
        continue
    if body and body[0].startswith("// swift-tools-version"):
        counts["manifest"] += 1
        manifests.append((src, line, body))
        continue
    counts["checked"] += 1
    imports, scope, inner = [], [], []
    k = 0
    while k < len(body):
        l = body[k]
        if re.match(r"^import \w+", l):
            imports.append(l); k += 1; continue
        # Declarations at column 0 go to file scope, fileprivate, so that two pages may both declare a
        # `Printer`; statements stay in the function.
        m = re.match(r"^(@\w+[^ ]* )*(public |private |fileprivate |internal )?((final )?class|struct|enum|actor|protocol|extension|func) ", l)
        if m:
            decl = re.sub(r"^((@\w+[^ ]* )*)(public |private |fileprivate |internal )?", r"\1fileprivate ", l, count=1)
            chunk = [(k, decl)]
            k += 1
            if not l.rstrip().endswith("}"):
                while k < len(body) and not body[k].startswith("}"):
                    chunk.append((k, body[k])); k += 1
                if k < len(body):
                    chunk.append((k, body[k])); k += 1
            scope.append(chunk)
            continue
        inner.append((k, l)); k += 1
    out = files.setdefault(src, {"imports": set(), "lines": []})
    out["imports"].update(l.strip() for l in imports)
    lines = out["lines"]
    for chunk in scope:
        lines.append('#sourceLocation(file: "%s", line: %d)' % (src, line + chunk[0][0]))
        lines += [l for _, l in chunk]
        lines.append("#sourceLocation()")
    lines.append("func snippet%d() async throws {" % n)
    lines.append(PRELUDE + "    do {")
    if inner:
        lines.append('#sourceLocation(file: "%s", line: %d)' % (src, line + inner[0][0]))
        prev = inner[0][0] - 1
        for idx, l in inner:
            while prev + 1 < idx:   # keep line numbers aligned across lifted declarations
                lines.append(""); prev += 1
            lines.append(l); prev = idx
        lines.append("#sourceLocation()")
    lines.append("    }\n}\n")
for n, (src, out) in enumerate(sorted(files.items())):
    head = ["import AsyncHTTP"] + sorted(i for i in out["imports"] if i != "import AsyncHTTP") + [""]
    open(os.path.join(work, "Snippet%03d.swift" % n), "w").write("\n".join(head + out["lines"]))

for i, (src, line, body) in enumerate(manifests):
    d = os.path.join(work, "manifest%d" % i)
    os.makedirs(d)
    open(os.path.join(d, "Package.swift"), "w").write("\n".join(body) + "\n")
    open(os.path.join(d, "origin"), "w").write("%s:%d" % (src, line))
json.dump(counts, open(os.path.join(work, "counts.json"), "w"))
# The package's own targets the examples import besides AsyncHTTP (other products' pages): built below.
targets = set()
for out in files.values():
    for i in out["imports"]:
        name = i.split()[1]
        if name != "AsyncHTTP" and os.path.isdir(os.path.join(root, "Sources", name)):
            targets.add(name)
open(os.path.join(work, "targets.txt"), "w").write("\n".join(sorted(targets)))
PY

if [ "${1:-}" != "--no-build" ]; then
    for target in AsyncHTTP $(cat "$WORK/targets.txt"); do
        swift build --target "$target" >/dev/null
    done
fi
BIN="$(swift build --show-bin-path)"
MODULES="$BIN/Modules"
[ -d "$MODULES" ] || MODULES="$BIN"
[ -e "$MODULES/AsyncHTTP.swiftmodule" ] || { echo "check-snippets: no AsyncHTTP.swiftmodule in $MODULES (build first)" >&2; exit 1; }

status=0
TARGET_TRIPLE="$(swiftc -print-target-info | python3 -c 'import json,sys; print(json.load(sys.stdin)["target"]["triple"])')"
if ! swiftc -typecheck -swift-version 6 -enable-upcoming-feature MemberImportVisibility -suppress-warnings -continue-building-after-errors \
    -target "$TARGET_TRIPLE" -module-name DocSnippets -I "$MODULES" \
    -Xcc -fmodule-map-file="$ROOT/Sources/COpenSSL/module.modulemap" \
    -Xcc -fmodule-map-file="$ROOT/Sources/CZlib/module.modulemap" \
    -Xcc -fmodule-map-file="$ROOT/Sources/CEpoll/module.modulemap" \
    -Xcc -fmodule-map-file="$ROOT/Sources/CIntrinsics/module.modulemap" \
    -Xcc -fmodule-map-file="$ROOT/Sources/CCRC32/include/module.modulemap" \
    -Xcc -fmodule-map-file="$ROOT/Sources/CLibXML2/module.modulemap" \
    -I "$ROOT/Sources/CEpoll" -I "$ROOT/Sources/CIntrinsics" -I /usr/include/libxml2 \
    "$ROOT/scripts/snippets/Placeholders.swift" "$WORK"/Snippet*.swift 2>"$WORK/errors.txt"; then
    grep -E "error:" "$WORK/errors.txt" >&2 || cat "$WORK/errors.txt" >&2
    status=1
fi

for dir in "$WORK"/manifest*; do
    [ -d "$dir" ] || continue
    if ! (cd "$dir" && swift package dump-package >/dev/null 2>"$dir/errors.txt"); then
        echo "check-snippets: the manifest at $(cat "$dir/origin") does not load:" >&2
        cat "$dir/errors.txt" >&2
        status=1
    fi
done

read -r checked nocompile manifest < <(python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); print(c["checked"], c["no-compile"], c["manifest"])' "$WORK/counts.json")
if [ "$status" -eq 0 ]; then
    echo "check-snippets: $checked examples type-check; $manifest manifests load; $nocompile marked no-compile"
else
    echo "check-snippets: FAILED ($checked examples, $manifest manifests, $nocompile marked no-compile)" >&2
fi
exit "$status"
