#!/usr/bin/env bash
# Large upload and download through tmpfs, with the client's peak RSS: `./scripts/large-transfer.sh [MiB]`.
#
# Starts its own nginx (a dav location for PUT, everything under /dev/shm so the disk is never the
# bottleneck) on a free 127.0.0.1 port, makes a random file of MiB mebibytes (default 1024), then runs
#   ahttp -T <file> http://…/dav/up.bin          (PUT from disk; Expect: 100-continue, then the body)
#   ahttp -o <copy> http://…/dav/up.bin          (download to a temporary file, renamed into place)
# each under /usr/bin/time -v, compares the stored and downloaded files with the source byte for byte, and
# prints MB/s and the maximum resident set size. AHTTP=path/to/ahttp picks the binary (default: the
# release build if there is one, else the debug build). Everything it made is removed at the end.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/sbin:/sbin"
MIB="${1:-1024}"
AHTTP="${AHTTP:-}"
if [ -z "$AHTTP" ]; then
    if [ -x .build/release/ahttp ]; then AHTTP=.build/release/ahttp; else AHTTP=.build/debug/ahttp; fi
fi
[ -x "$AHTTP" ] || { echo "no ahttp at $AHTTP: run 'swift build -c release --product ahttp' first" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time is missing (apt-get install time)" >&2; exit 1; }

WORK="$(mktemp -d /dev/shm/ahttp-large.XXXXXX)"
NGINX_PID=""
cleanup() {
    [ -n "$NGINX_PID" ] && kill "$NGINX_PID" 2>/dev/null && wait "$NGINX_PID" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$WORK/root/dav" "$WORK/tmp" "$WORK/client"
PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
user_line=""
[ "$(id -u)" -eq 0 ] && user_line="user root;"
cat > "$WORK/nginx.conf" <<CONF
$user_line
worker_processes 1;
daemon off;
pid $WORK/nginx.pid;
error_log $WORK/error.log warn;
events { worker_connections 64; }
http {
    access_log off;
    sendfile on;
    client_body_temp_path $WORK/tmp;
    proxy_temp_path $WORK/tmp;
    fastcgi_temp_path $WORK/tmp;
    uwsgi_temp_path $WORK/tmp;
    scgi_temp_path $WORK/tmp;
    server {
        listen 127.0.0.1:$PORT;
        root $WORK/root;
        location /dav/ { dav_methods PUT; client_max_body_size 0; }
    }
}
CONF
nginx -p "$WORK" -e "$WORK/error.log" -c "$WORK/nginx.conf" &
NGINX_PID=$!
for _ in $(seq 50); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $PORT), 0.2)" 2>/dev/null && break
    sleep 0.1
done

echo "making a ${MIB} MiB random file in $WORK/client"
head -c "$((MIB * 1024 * 1024))" /dev/urandom > "$WORK/client/source.bin"
BYTES=$((MIB * 1024 * 1024))

measure() {  # measure <label> <tool> <arguments…>
    local label=$1
    shift
    /usr/bin/time -v "$@" 2> "$WORK/time.txt"
    local seconds rss
    seconds=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; print s }' "$WORK/time.txt")
    rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$WORK/time.txt")
    awk -v label="$label" -v bytes="$BYTES" -v s="$seconds" -v rss="$rss" \
        'BEGIN { printf "%-9s %6d MiB in %6.2f s = %7.1f MB/s, client peak RSS %.1f MiB\n", label, bytes / 1048576, s, bytes / s / 1e6, rss / 1024 }'
}

# One untimed upload first: the first transfer into a fresh tmpfs pays for nginx's and the kernel's first
# page allocations (measured: the first of two identical runs took up to 2.5 times longer, whichever tool ran it).
"$AHTTP" -s -o /dev/null -T "$WORK/client/source.bin" "http://127.0.0.1:$PORT/dav/warm-up.bin"
rm -f "$WORK/root/dav/warm-up.bin"
measure "ahttp -T" "$AHTTP" -s -T "$WORK/client/source.bin" "http://127.0.0.1:$PORT/dav/up.bin"
cmp "$WORK/client/source.bin" "$WORK/root/dav/up.bin" && echo "upload: stored file identical"
measure "ahttp -o" "$AHTTP" -s -o "$WORK/client/copy.bin" "http://127.0.0.1:$PORT/dav/up.bin"
cmp "$WORK/client/source.bin" "$WORK/client/copy.bin" && echo "download: file identical"
left=$(find "$WORK/client" -name '.*' | wc -l)
echo "temporary files left beside the download: $left"
if command -v curl >/dev/null; then  # the same transfers with curl, in the same run, for scale
    rm -f "$WORK/root/dav/up.bin" "$WORK/client/copy.bin"
    measure "curl -T" curl -s -o /dev/null -T "$WORK/client/source.bin" "http://127.0.0.1:$PORT/dav/up.bin"
    measure "curl -o" curl -s -o "$WORK/client/copy.bin" "http://127.0.0.1:$PORT/dav/up.bin"
fi
