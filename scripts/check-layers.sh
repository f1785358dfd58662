#!/usr/bin/env bash
# The walls between layers that SwiftPM's target graph cannot hold by itself (folders inside the AsyncHTTP
# target, and the system modules any target can import). Run by scripts/test.sh before the suite; prints
# each breach and exits 1 if there is any. See docs/architecture.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
status=0
breach() { printf 'check-layers: %s\n' "$*" >&2; status=1; }

# 1. OS calls only in IO/ (the pthread lock `Locked` among them) and the CLI.
while IFS= read -r file; do
    case "$file" in
        Sources/AsyncHTTP/IO/*|Sources/ahttp/*) ;;
        Sources/AsyncHTTPWebArchive/WebArchiveFiles.swift) ;;  # the web archive product's one file-system door
        *) breach "$file imports the OS; OS calls belong in Sources/AsyncHTTP/IO/" ;;
    esac
done < <(grep -rlE '^import (Glibc|Musl|Darwin|CEpoll)$' Sources || true)

# 2. OpenSSL only for TLS (IO/TLSStream.swift) and the digests of authentication (Auth/Hashing.swift).
while IFS= read -r file; do
    case "$file" in
        Sources/AsyncHTTP/IO/TLSStream.swift|Sources/AsyncHTTP/Auth/Hashing.swift) ;;
        Sources/AsyncHTTPS3/SHA256.swift) ;;  # AsyncHTTPS3's SigV4 digests (its own target, not the core)
        *) breach "$file imports OpenSSL" ;;
    esac
done < <(grep -rlE '^import COpenSSL$' Sources || true)

# 3. The sans-IO protocol target imports HTTPTypes and the prefetch shim only, and knows no client type.
while IFS= read -r line; do
    case "$line" in
        "import HTTPTypes"|"import CIntrinsics") ;;
        *) breach "Sources/AsyncHTTP1: '$line' is not allowed in the sans-IO target" ;;
    esac
done < <(grep -rhE '^(@_exported )?import ' Sources/AsyncHTTP1 | sort -u)
if grep -rnwE 'HTTPClientError|HTTPClient|HTTPURL' Sources/AsyncHTTP1 | grep -v '//' >/dev/null; then
    breach "Sources/AsyncHTTP1 names a client type:"; grep -rnwE 'HTTPClientError|HTTPClient|HTTPURL' Sources/AsyncHTTP1 | grep -v '//' >&2
fi

# 4. Above the transport nothing touches a socket, TLS, the parser, the pool or a connection.
below='Socket|TLSStream|TLSContext|EpollEventLoop|HTTP1Connection|HTTP1ResponseParser|ConnectionPool|PoolStateMachine|Connector'
for folder in Middleware Cookies Codecs Auth Bodies Cache; do
    if grep -rnwE "$below" "Sources/AsyncHTTP/$folder" | grep -vE '//' >/dev/null; then
        breach "Sources/AsyncHTTP/$folder reaches below the transport:"
        grep -rnwE "$below" "Sources/AsyncHTTP/$folder" | grep -vE '///|//' >&2
    fi
done
if grep -nwE "$below" Sources/AsyncHTTP/Client/HTTPClient.swift | grep -v '//' >/dev/null; then
    breach "HTTPClient.swift touches the pool, sockets, TLS or the parser:"
    grep -nwE "$below" Sources/AsyncHTTP/Client/HTTPClient.swift >&2
fi

# 5. Only the lease gives a connection back to the pool.
if grep -rnE 'pool\.(release|discard)\(' Sources/AsyncHTTP | grep -vE 'Transport/ConnectionLease.swift|// the reserved slot' >/dev/null; then
    breach "a connection is released outside ConnectionLease:"
    grep -rnE 'pool\.(release|discard)\(' Sources/AsyncHTTP | grep -vE 'Transport/ConnectionLease.swift|// the reserved slot' >&2
fi

[ "$status" -eq 0 ] && echo "check-layers: every wall holds"
exit "$status"
