#!/usr/bin/env bash
# Runs the test suite with its external peers: `./scripts/test.sh [swift test arguments…]`.
#
# - installs missing tools (one `need <binary> <apt package>` line each);
# - prepares .peers/ (gitignored): a self-signed certificate, static files and an nginx config;
# - starts nginx in the foreground as a child on two free 127.0.0.1 ports (HTTP and HTTPS);
# - exports ASYNCHTTP_NGINX_HTTP_PORT, ASYNCHTTP_NGINX_HTTPS_PORT, ASYNCHTTP_NGINX_CA, ASYNCHTTP_PEERS_DIR,
#   ASYNCHTTP_NGINX_UNIX_HTTP and ASYNCHTTP_NGINX_UNIX_HTTPS (nginx's Unix socket listeners);
# - starts httpbin (PyPI, pinned in scripts/requirements-httpbin.txt, in a virtualenv under .peers) with
#   gunicorn on a free 127.0.0.1 port, and exports ASYNCHTTP_HTTPBIN_URL;
# - starts the authentication and proxy peers, each in the foreground as a child on free 127.0.0.1 ports,
#   with its configuration, logs and pid files under .peers/<peer>/, and exports (see Peers.swift):
#     tinyproxy without authentication     ASYNCHTTP_TINYPROXY_URL
#     tinyproxy with Basic authentication  ASYNCHTTP_TINYPROXY_AUTH_URL, _USER, _PASSWORD
#     stunnel before that tinyproxy        ASYNCHTTP_HTTPS_PROXY_URL (an HTTPS proxy; nginx's certificate)
#       and one that asks for a client     ASYNCHTTP_HTTPS_PROXY_CLIENT_CERT_URL, _CLIENT_CERT, _CLIENT_KEY
#       certificate
#     squid with Digest authentication     ASYNCHTTP_SQUID_URL, _USER, _PASSWORD, _REALM
#     dante SOCKS5 without authentication  ASYNCHTTP_SOCKS5_URL
#       and SOCKS4 on the same port        ASYNCHTTP_SOCKS4_URL
#     OpenSSH's dynamic forwarding         ASYNCHTTP_SOCKS4A_URL, ASYNCHTTP_SOCKS4A_LOG (`ssh -D` to an sshd on
#       (SOCKS4a; dante has no 4a)           loopback, both with keys made here; the log is sshd's)
#     SOCKS5 with username/password        ASYNCHTTP_SOCKS5_AUTH_URL, _USER, _PASSWORD, _LOG
#       (scripts/peers/socks5_server.py: dante's username method would need a system account)
#     NTLM origin and proxy                ASYNCHTTP_NTLM_URL, ASYNCHTTP_NTLM_PROXY_URL, _USER, _PASSWORD, _DOMAIN
#       (scripts/peers/ntlm_server.py with pyspnego, pinned in scripts/requirements-ntlm.txt);
#   the proxies only reach loopback destinations, and CONNECT is allowed to any port;
# - runs `swift test "$@"` (SANITIZE=thread adds --sanitize=thread, built in .build/tsan, and
#   SANITIZE=address --sanitize=address in .build/asan, so the
#   sanitized and plain builds do not keep invalidating each other);
# - stops every peer on exit, whatever happened.
# Tests that need a peer fail (never skip) when run without this script.
set -euo pipefail

# The whole script is one { } group: bash parses it completely before running it, so editing this
# file while a (long) run is in progress cannot change what the running copy does.
{
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PEERS="$ROOT/.peers"
export PATH="$PATH:/usr/sbin:/sbin"   # nginx lives in /usr/sbin on Debian/Ubuntu

log() { printf 'test.sh: %s\n' "$*" >&2; }

# --- tools -----------------------------------------------------------------------------------
APT_UPDATED=0
present() {  # present <binary or /absolute/path>
    case "$1" in
        /*) [ -e "$1" ] ;;
        *) command -v "$1" >/dev/null 2>&1 ;;
    esac
}

need() {  # need <binary or /absolute/file> <apt package>: install the package only if it is missing
    local binary="$1" package="$2"
    present "$binary" && return 0
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || { log "$binary is missing and there is no sudo to install $package"; exit 1; }
        sudo="sudo"
    fi
    if [ "$APT_UPDATED" -eq 0 ]; then
        log "apt-get update"
        $sudo apt-get update -qq
        APT_UPDATED=1
    fi
    log "installing $package (for $binary)"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$package" >/dev/null
    present "$binary" || { log "$package did not provide $binary"; exit 1; }
}

need pkg-config pkg-config                     # SwiftPM finds the system libraries through it
need /usr/include/openssl/ssl.h libssl-dev     # COpenSSL
need /usr/include/zlib.h zlib1g-dev            # CZlib
need /usr/include/libxml2/libxml/parser.h libxml2-dev  # CLibXML2 (S3's XML, the web archive's HTML)
need python3 python3
need openssl openssl
need curl curl
need nginx nginx-light
need tinyproxy tinyproxy-bin                   # the executable alone, without a system service
need squid squid                               # also brings /usr/lib/squid/digest_file_auth
need danted dante-server
need stunnel4 stunnel4                         # TLS in front of tinyproxy: an HTTPS proxy
need ssh openssh-client                        # ssh -D: the SOCKS4a peer
if ! present /usr/sbin/sshd; then
    # openssh-server's postinst would start a system sshd on port 22; policy-rc.d (invoke-rc.d's hook) stops it.
    # The suite runs its own, on loopback (below).
    if [ "$(id -u)" -eq 0 ] && [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
        need /usr/sbin/sshd openssh-server
        rm -f /usr/sbin/policy-rc.d
    else
        need /usr/sbin/sshd openssh-server
    fi
fi
# Debian ships venv's ensurepip separately (python3-venv); pyenv and python.org builds include it.
python3 -c 'import ensurepip' >/dev/null 2>&1 ||
    need "$(python3 -c 'import sys; print("/usr/lib/python3.%d/ensurepip/__init__.py" % sys.version_info[1])')" python3-venv

# --- files -----------------------------------------------------------------------------------
mkdir -p "$PEERS/www" "$PEERS/nginx/tmp" "$PEERS/tls"
mkdir -p "$PEERS/dav"   # nginx's PUT target (location /dav/)

CERT="$PEERS/tls/nginx.pem"
KEY="$PEERS/tls/nginx.key"
if [ ! -s "$CERT" ] || [ ! -s "$KEY" ] || ! openssl x509 -checkend 86400 -noout -in "$CERT" >/dev/null 2>&1; then
    log "generating self-signed certificate for localhost/127.0.0.1/::1"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 825 \
        -keyout "$KEY" -out "$CERT" -subj "/CN=localhost" \
        -addext "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1" 2>/dev/null
fi

# The client certificate the HTTPS proxy that asks for one trusts (stunnel's `verify = 2` with it as CAfile): ahttp's
# --proxy-cert against curl's, and ProxyConfiguration.tls.clientCertificate.
PROXY_CLIENT_CERT="$PEERS/tls/proxy-client.pem"
PROXY_CLIENT_KEY="$PEERS/tls/proxy-client.key"
if [ ! -s "$PROXY_CLIENT_CERT" ] || [ ! -s "$PROXY_CLIENT_KEY" ] \
    || ! openssl x509 -checkend 86400 -noout -in "$PROXY_CLIENT_CERT" >/dev/null 2>&1; then
    log "generating the HTTPS proxy's client certificate"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 825 \
        -keyout "$PROXY_CLIENT_KEY" -out "$PROXY_CLIENT_CERT" -subj "/CN=asynchttp proxy client" \
        -addext "extendedKeyUsage=clientAuth" 2>/dev/null
fi

# small.txt: exactly 1 KiB of repetitive text (so gzip visibly shrinks it), deterministic.
if [ "$(stat -c %s "$PEERS/www/small.txt" 2>/dev/null || echo 0)" != 1024 ]; then
    python3 -c 'import sys; line = b"AsyncHTTP nginx peer test line.\n"; sys.stdout.buffer.write((line * 32)[:1024])' \
        > "$PEERS/www/small.txt"
fi
# big.bin: 8 MiB of random bytes (incompressible); tests compare downloads with this file.
if [ "$(stat -c %s "$PEERS/www/big.bin" 2>/dev/null || echo 0)" != 8388608 ]; then
    head -c 8388608 /dev/urandom > "$PEERS/www/big.bin"
fi
# huge.bin: 32 MiB of random bytes, for measuring throttling accuracy by hand (docs/progress-throttling-batches.md).
if [ "$(stat -c %s "$PEERS/www/huge.bin" 2>/dev/null || echo 0)" != 33554432 ]; then
    head -c 33554432 /dev/urandom > "$PEERS/www/huge.bin"
fi
printf '<!doctype html>\n<html><head><title>AsyncHTTP peer</title></head><body><p>AsyncHTTP nginx peer</p></body></html>\n' \
    > "$PEERS/www/index.html"
# The download cache's tests (CacheNginxTests): a copy of small.txt under each /cache/ location below.
for dir in expires etag headers nostore ims; do
    mkdir -p "$PEERS/www/cache/$dir" && cp "$PEERS/www/small.txt" "$PEERS/www/cache/$dir/small.txt"
done

free_ports() {  # prints two distinct free TCP ports on 127.0.0.1
    python3 - <<'PY'
import socket
sockets = []
for _ in range(2):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    sockets.append(s)
print(" ".join(str(s.getsockname()[1]) for s in sockets))
for s in sockets:
    s.close()
PY
}

write_nginx_conf() {  # write_nginx_conf <http port> <https port>
    local user_line="" mime_line="types { text/html html; text/plain txt; application/octet-stream bin; }"
    # As root, nginx would run its worker as "nobody", which may not be able to read the repo.
    [ "$(id -u)" -eq 0 ] && user_line="user root;"
    [ -f /etc/nginx/mime.types ] && mime_line="include /etc/nginx/mime.types;"
    cat > "$PEERS/nginx/nginx.conf" <<EOF
# Generated by scripts/test.sh; do not edit.
$user_line
worker_processes 1;
daemon off;
pid $PEERS/nginx/nginx.pid;
error_log $PEERS/nginx/error.log warn;
events { worker_connections 256; }
http {
    $mime_line
    default_type application/octet-stream;
    access_log off;
    keepalive_timeout 2s;
    keepalive_requests 1000;
    sendfile on;
    client_body_temp_path $PEERS/nginx/tmp/client_body;
    proxy_temp_path $PEERS/nginx/tmp/proxy;
    fastcgi_temp_path $PEERS/nginx/tmp/fastcgi;
    uwsgi_temp_path $PEERS/nginx/tmp/uwsgi;
    scgi_temp_path $PEERS/nginx/tmp/scgi;
    gzip on;
    gzip_vary on;
    gzip_min_length 20;
    gzip_types text/plain text/css text/xml application/json application/javascript;
    server {
        listen 127.0.0.1:$1;
        listen unix:$PEERS/nginx/http.sock;
        root $PEERS/www;
        # Throttled uploads (ThrottleIntegrationTests): any body is read, dropped, and answered with 204.
        location = /upload { client_max_body_size 0; return 204; }
        # Which connection served this, and its how-many-th request: keep-alive counted by the server.
        location = /connection { default_type text/plain; return 200 "\$connection \$connection_requests\n"; }
        # Uploads (issue 14): PUT /dav/<name> stores the body as $PEERS/dav/<name>, for byte-for-byte checks.
        location /dav/ {
            root $PEERS;
            dav_methods PUT DELETE;
            create_full_put_path on;
            client_max_body_size 0;
        }
        # The download cache's tests: freshness and validators as nginx sends them.
        location /cache/expires/ { expires 60s; }
        location /cache/etag/ { expires -1; }
        location /cache/headers/ { add_header Cache-Control "max-age=60, must-revalidate"; }
        location /cache/nostore/ { add_header Cache-Control "no-store"; }
        location /cache/ims/ { etag off; if_modified_since exact; add_header Cache-Control "max-age=0"; }
    }
    server {
        listen 127.0.0.1:$2 ssl;
        listen unix:$PEERS/nginx/https.sock ssl;
        ssl_certificate $CERT;
        ssl_certificate_key $KEY;
        root $PEERS/www;
        location = /connection { default_type text/plain; return 200 "\$connection \$connection_requests\n"; }
        location /dav/ {
            root $PEERS;
            dav_methods PUT DELETE;
            create_full_put_path on;
            client_max_body_size 0;
        }
    }
}
EOF
}

# --- nginx -----------------------------------------------------------------------------------
PEER_PIDS=()     # the peers start_peer started
STARTING_PID=""  # the one start_peer is waiting for
CLEANUP_DIRS=()
cleanup() {
    local status=$?
    for pid in "$STARTING_PID" ${PEER_PIDS[@]+"${PEER_PIDS[@]}"}; do
        if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
        fi
    done
    for dir in ${CLEANUP_DIRS[@]+"${CLEANUP_DIRS[@]}"}; do rm -rf "$dir"; done
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# -e (nginx >= 1.19.5) sets the error log before the config is read, so nginx never touches /var/log.
NGINX_ERROR_FLAG=()
nginx -h 2>&1 | grep -q -- '-e filename' && NGINX_ERROR_FLAG=(-e "$PEERS/nginx/error.log")

# start_peer <name> <tries> <launch function> <ready function> <log file>...
# Up to 3 attempts, each on fresh ports PORT_A and PORT_B from free_ports (one can be taken between
# choosing it and the peer binding it). The launch function writes the peer's configuration for those
# ports and starts it in the background, setting PEER_PID; the ready function succeeds once the peer
# serves; it is tried <tries> times, 0.1 s apart. Fails the script, with the logs' ends, if the peer
# never becomes ready.
start_peer() {
    local name="$1" tries="$2" launch="$3" ready="$4" attempt started=0
    shift 4
    for attempt in 1 2 3; do
        read -r PORT_A PORT_B < <(free_ports)
        PEER_PID=""
        "$launch"
        STARTING_PID="$PEER_PID"
        for _ in $(seq "$tries"); do
            kill -0 "$PEER_PID" 2>/dev/null || break
            if "$ready" >/dev/null 2>&1; then
                started=1
                break
            fi
            sleep 0.1
        done
        if [ "$started" -eq 1 ]; then
            PEER_PIDS+=("$PEER_PID")
            STARTING_PID=""
            log "$name on 127.0.0.1:$PORT_A (pid $PEER_PID)"
            return 0
        fi
        log "$name did not come up (attempt $attempt):"
        local file
        for file in "$@"; do
            if [ -f "$file" ]; then tail -n 5 "$file" >&2; fi
        done
        kill -TERM "$PEER_PID" 2>/dev/null || true
        wait "$PEER_PID" 2>/dev/null || true
        STARTING_PID=""
    done
    log "giving up: $name peer could not be started"
    exit 1
}

launch_nginx() {
    write_nginx_conf "$PORT_A" "$PORT_B"
    rm -f "$PEERS/nginx/http.sock" "$PEERS/nginx/https.sock"   # left by a killed earlier run
    : > "$PEERS/nginx/error.log"
    nginx -p "$PEERS/nginx" ${NGINX_ERROR_FLAG[@]+"${NGINX_ERROR_FLAG[@]}"} -c "$PEERS/nginx/nginx.conf" &
    PEER_PID=$!
}
nginx_ready() {
    curl -fsS -o /dev/null --max-time 1 "http://127.0.0.1:$PORT_A/small.txt" &&
        curl -fsS -o /dev/null --max-time 1 --cacert "$CERT" "https://127.0.0.1:$PORT_B/small.txt"
}
start_peer "nginx" 50 launch_nginx nginx_ready "$PEERS/nginx/error.log"
HTTP_PORT=$PORT_A
HTTPS_PORT=$PORT_B
log "nginx serves https on 127.0.0.1:$HTTPS_PORT"

export ASYNCHTTP_NGINX_HTTP_PORT="$HTTP_PORT"
export ASYNCHTTP_NGINX_HTTPS_PORT="$HTTPS_PORT"
export ASYNCHTTP_NGINX_CA="$CERT"
export ASYNCHTTP_NGINX_UNIX_HTTP="$PEERS/nginx/http.sock"     # the same two servers on Unix sockets
export ASYNCHTTP_NGINX_UNIX_HTTPS="$PEERS/nginx/https.sock"
export ASYNCHTTP_PEERS_DIR="$PEERS"

# --- httpbin ---------------------------------------------------------------------------------
HTTPBIN_VENV="$PEERS/httpbin-venv"
HTTPBIN_REQUIREMENTS="$ROOT/scripts/requirements-httpbin.txt"
if ! cmp -s "$HTTPBIN_REQUIREMENTS" "$HTTPBIN_VENV/requirements.txt"; then
    log "installing httpbin into $HTTPBIN_VENV"
    rm -rf "$HTTPBIN_VENV"
    python3 -m venv "$HTTPBIN_VENV"
    "$HTTPBIN_VENV/bin/pip" install --quiet --disable-pip-version-check -r "$HTTPBIN_REQUIREMENTS"
    cp "$HTTPBIN_REQUIREMENTS" "$HTTPBIN_VENV/requirements.txt"  # marks the install complete
fi

launch_httpbin() {
    # gthread: keep-alive connections (the sync worker closes after each response); no control socket,
    # which gunicorn >= 24 would put at a fixed path shared by every run on the machine.
    "$HTTPBIN_VENV/bin/gunicorn" --bind "127.0.0.1:$PORT_A" --worker-class gthread --workers 1 --threads 8 \
        --keep-alive 5 --no-control-socket --log-level warning --error-logfile "$PEERS/httpbin.log" httpbin:app &
    PEER_PID=$!
}
httpbin_ready() { curl -fsS -o /dev/null --max-time 1 "http://127.0.0.1:$PORT_A/get"; }
# Up to 10 s: the first start compiles Flask's modules.
start_peer "httpbin" 100 launch_httpbin httpbin_ready "$PEERS/httpbin.log"
HTTPBIN_PORT=$PORT_A
export ASYNCHTTP_HTTPBIN_URL="http://127.0.0.1:$HTTPBIN_PORT"

# --- authentication and proxy peers ----------------------------------------------------------

# The HTTP and SOCKS proxies are ready once this file can be fetched through them.
ORIGIN_URL="http://127.0.0.1:$HTTP_PORT/small.txt"
# The Python peers' imports must not leave __pycache__ directories in scripts/peers.
export PYTHONPYCACHEPREFIX="$PEERS/pycache"

# tinyproxy: two instances, as BasicAuth applies to a whole instance. No ConnectPort line: CONNECT to
# every port (tinyproxy.conf(5)). The filter lets only loopback host names through (403 otherwise).
# As root it stays root (no User line: "Using current user instead").
TINYPROXY_USER=proxyuser
TINYPROXY_PASSWORD=proxypass
mkdir -p "$PEERS/tinyproxy"
printf '%s\n' 127.0.0.1 localhost ::1 '[::1]' > "$PEERS/tinyproxy/loopback.filter"
launch_tinyproxy() {  # TINYPROXY_NAME: open or auth
    local dir="$PEERS/tinyproxy" auth_line=""
    if [ "$TINYPROXY_NAME" = auth ]; then auth_line="BasicAuth $TINYPROXY_USER $TINYPROXY_PASSWORD"; fi
    cat > "$dir/$TINYPROXY_NAME.conf" <<EOF
# Generated by scripts/test.sh; do not edit.
Listen 127.0.0.1
Port $PORT_A
Timeout 60
MaxClients 100
Allow 127.0.0.1
LogFile "$dir/$TINYPROXY_NAME.log"
LogLevel Info
PidFile "$dir/$TINYPROXY_NAME.pid"
Filter "$dir/loopback.filter"
FilterType fnmatch
FilterDefaultDeny Yes
$auth_line
EOF
    : > "$dir/$TINYPROXY_NAME.log"
    tinyproxy -d -c "$dir/$TINYPROXY_NAME.conf" >> "$dir/$TINYPROXY_NAME.log" 2>&1 &
    PEER_PID=$!
}
tinyproxy_ready() {
    local auth=()
    if [ "$TINYPROXY_NAME" = auth ]; then auth=(--proxy-user "$TINYPROXY_USER:$TINYPROXY_PASSWORD"); fi
    curl -fsS -o /dev/null --max-time 1 -x "http://127.0.0.1:$PORT_A" ${auth[@]+"${auth[@]}"} "$ORIGIN_URL"
}
TINYPROXY_NAME=open
start_peer "tinyproxy (no authentication)" 50 launch_tinyproxy tinyproxy_ready "$PEERS/tinyproxy/open.log"
export ASYNCHTTP_TINYPROXY_URL="http://127.0.0.1:$PORT_A"
TINYPROXY_OPEN_PORT=$PORT_A
# stunnel in front of that tinyproxy: an HTTPS proxy (curl's -x https://), with nginx's certificate (127.0.0.1 in
# its names), so ASYNCHTTP_NGINX_CA verifies it. Foreground, logging to a file; no pid file.
launch_stunnel() {
    local dir="$PEERS/stunnel"
    mkdir -p "$dir"
    cat > "$dir/stunnel.conf" <<EOF
; Generated by scripts/test.sh; do not edit.
foreground = yes
pid =
output = $dir/stunnel.log
debug = notice
[https-proxy]
accept = 127.0.0.1:$PORT_A
connect = 127.0.0.1:$TINYPROXY_OPEN_PORT
cert = $CERT
key = $KEY
[https-proxy-client-certificate]
accept = 127.0.0.1:$PORT_B
connect = 127.0.0.1:$TINYPROXY_OPEN_PORT
cert = $CERT
key = $KEY
verify = 2
CAfile = $PROXY_CLIENT_CERT
EOF
    : > "$dir/stunnel.log"
    stunnel4 "$dir/stunnel.conf" >> "$dir/stunnel.log" 2>&1 &
    PEER_PID=$!
}
stunnel_ready() {
    curl -fsS -o /dev/null --max-time 1 -x "https://127.0.0.1:$PORT_A" --proxy-cacert "$CERT" "$ORIGIN_URL" &&
        curl -fsS -o /dev/null --max-time 1 -x "https://127.0.0.1:$PORT_B" --proxy-cacert "$CERT" \
            --proxy-cert "$PROXY_CLIENT_CERT" --proxy-key "$PROXY_CLIENT_KEY" "$ORIGIN_URL"
}
start_peer "stunnel before tinyproxy (an HTTPS proxy)" 50 launch_stunnel stunnel_ready "$PEERS/stunnel/stunnel.log"
export ASYNCHTTP_HTTPS_PROXY_URL="https://127.0.0.1:$PORT_A"
export ASYNCHTTP_HTTPS_PROXY_CLIENT_CERT_URL="https://127.0.0.1:$PORT_B"
export ASYNCHTTP_HTTPS_PROXY_CLIENT_CERT="$PROXY_CLIENT_CERT"
export ASYNCHTTP_HTTPS_PROXY_CLIENT_KEY="$PROXY_CLIENT_KEY"
TINYPROXY_NAME=auth
start_peer "tinyproxy (Basic authentication)" 50 launch_tinyproxy tinyproxy_ready "$PEERS/tinyproxy/auth.log"
export ASYNCHTTP_TINYPROXY_AUTH_URL="http://127.0.0.1:$PORT_A"
export ASYNCHTTP_TINYPROXY_USER="$TINYPROXY_USER"
export ASYNCHTTP_TINYPROXY_PASSWORD="$TINYPROXY_PASSWORD"

# squid: Digest proxy authentication from a user:realm:HA1 file (digest_file_auth -c), memory only,
# no cache. Squid refuses to run as root: as root it switches to cache_effective_user (Debian's
# "proxy"), which must then own its directory; otherwise it runs as the current user.
SQUID_USER=digestuser
SQUID_PASSWORD=digestpass
SQUID_REALM=asynchttp-squid
# As root its directory lives under /tmp: the "proxy" user may not be able to reach a clone under /root.
if [ "$(id -u)" -eq 0 ]; then
    SQUID_DIR=$(mktemp -d /tmp/asynchttp-squid.XXXXXX)
    chmod 755 "$SQUID_DIR"
    CLEANUP_DIRS+=("$SQUID_DIR")
else
    SQUID_DIR="$PEERS/squid"
    mkdir -p "$SQUID_DIR"
fi
launch_squid() {
    local dir="$SQUID_DIR" user_line="" owner=""
    if [ "$(id -u)" -eq 0 ]; then
        owner=proxy
        id -u "$owner" >/dev/null 2>&1 || owner=nobody
        user_line="cache_effective_user $owner"
    fi
    printf '%s:%s:%s\n' "$SQUID_USER" "$SQUID_REALM" \
        "$(printf '%s:%s:%s' "$SQUID_USER" "$SQUID_REALM" "$SQUID_PASSWORD" | md5sum | cut -d' ' -f1)" \
        > "$dir/digest.passwd"
    cat > "$dir/squid.conf" <<EOF
# Generated by scripts/test.sh; do not edit.
http_port 127.0.0.1:$PORT_A
visible_hostname asynchttp-squid
$user_line
pid_filename $dir/squid.pid
cache_log $dir/cache.log
access_log stdio:$dir/access.log
cache_store_log none
netdb_filename none
coredump_dir $dir
cache deny all
cache_mem 8 MB
pinger_enable off
icp_port 0
htcp_port 0
shutdown_lifetime 0 seconds
auth_param digest program /usr/lib/squid/digest_file_auth -c $dir/digest.passwd
auth_param digest children 5 startup=1 idle=1
auth_param digest realm $SQUID_REALM
auth_param digest nonce_max_duration 30 minutes
acl loopback_destination dst 127.0.0.0/8 ::1
acl digest_users proxy_auth REQUIRED
http_access deny !loopback_destination
http_access allow digest_users
http_access deny all
EOF
    rm -f "$dir/squid.pid" "$dir/cache.log" "$dir/access.log"
    if [ -n "$owner" ]; then chown -R "$owner" "$dir"; fi
    # -n: a service name of our own, which names squid's /dev/shm segments (removed when it stops), so
    # that it does not share them with a system squid or another run's.
    squid -N -n "asynchttp$PORT_A" -f "$dir/squid.conf" > "$dir/squid.out" 2>&1 &
    PEER_PID=$!
}
squid_ready() {
    curl -fsS -o /dev/null --max-time 1 -x "http://127.0.0.1:$PORT_A" --proxy-digest \
        --proxy-user "$SQUID_USER:$SQUID_PASSWORD" "$ORIGIN_URL"
}
start_peer "squid (Digest authentication)" 100 launch_squid squid_ready "$SQUID_DIR/squid.out" "$SQUID_DIR/cache.log"
export ASYNCHTTP_SQUID_URL="http://127.0.0.1:$PORT_A"
export ASYNCHTTP_SQUID_USER="$SQUID_USER"
export ASYNCHTTP_SQUID_PASSWORD="$SQUID_PASSWORD"
export ASYNCHTTP_SQUID_REALM="$SQUID_REALM"

# dante: SOCKS5 without authentication (its "username" method checks system accounts, so the
# authenticating SOCKS5 peer below is scripts/peers/socks5_server.py). In the foreground without -D.
mkdir -p "$PEERS/dante"
launch_dante() {
    local dir="$PEERS/dante"
    cat > "$dir/danted.conf" <<EOF
# Generated by scripts/test.sh; do not edit.
logoutput: $dir/danted.log
internal: 127.0.0.1 port = $PORT_A
external: 127.0.0.1
socksmethod: none
clientmethod: none
timeout.io: 120
client pass {
    from: 127.0.0.1/32 to: 0.0.0.0/0
    log: error
}
socks pass {
    from: 127.0.0.1/32 to: 127.0.0.0/8
    command: connect
    log: connect error
}
EOF
    : > "$dir/danted.log"
    danted -f "$dir/danted.conf" -p "$dir/danted.pid" >> "$dir/danted.log" 2>&1 &
    PEER_PID=$!
}
dante_ready() {
    curl -fsS -o /dev/null --max-time 1 -x "socks5://127.0.0.1:$PORT_A" "$ORIGIN_URL"
}
start_peer "dante (SOCKS5, no authentication)" 50 launch_dante dante_ready "$PEERS/dante/danted.log"
export ASYNCHTTP_SOCKS5_URL="socks5://127.0.0.1:$PORT_A"
export ASYNCHTTP_SOCKS4_URL="socks4://127.0.0.1:$PORT_A"   # dante answers SOCKS4 on the same port (not 4a)

# SOCKS4a: OpenSSH's dynamic forwarding (`ssh -D`, which reads SOCKS4, 4a and 5) through an sshd of our own on
# loopback, for this user, with a host key and a client key made here. sshd opens only loopback targets, and
# logs each one (LogLevel DEBUG1: "server_request_direct_tcpip: originator ... to HOST port N").
SSH_DIR="$PEERS/sshd"
mkdir -p "$SSH_DIR"
chmod 700 "$SSH_DIR"
[ -s "$SSH_DIR/host_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C asynchttp-host -f "$SSH_DIR/host_ed25519"
[ -s "$SSH_DIR/client_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C asynchttp-client -f "$SSH_DIR/client_ed25519"
cp "$SSH_DIR/client_ed25519.pub" "$SSH_DIR/authorized_keys"
if [ "$(id -u)" -eq 0 ]; then mkdir -p /run/sshd; fi   # sshd's privilege separation directory
launch_ssh_socks() {
    local dir="$SSH_DIR" attempt
    cat > "$dir/sshd_config" <<EOF
# Generated by scripts/test.sh; do not edit.
Port $PORT_B
ListenAddress 127.0.0.1
HostKey $dir/host_ed25519
PidFile $dir/sshd.pid
AuthorizedKeysFile $dir/authorized_keys
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
AllowTcpForwarding local
PermitOpen 127.0.0.1:* localhost:*
PermitTTY no
X11Forwarding no
LogLevel DEBUG1
EOF
    : > "$dir/sshd.log"
    /usr/sbin/sshd -D -e -f "$dir/sshd_config" >> "$dir/sshd.log" 2>&1 &
    PEER_PIDS+=("$!")   # stopped with the others on exit; the client below is the peer start_peer watches
    # The client connects once the server's port answers, then listens for SOCKS on PORT_A.
    for attempt in $(seq 50); do
        (exec 3<>"/dev/tcp/127.0.0.1/$PORT_B") 2>/dev/null && break
        sleep 0.1
    done
    ssh -N -F /dev/null -D "127.0.0.1:$PORT_A" -p "$PORT_B" -i "$dir/client_ed25519" -o BatchMode=yes \
        -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ExitOnForwardFailure=yes \
        -o LogLevel=ERROR "$(id -un)@127.0.0.1" > "$dir/ssh.log" 2>&1 &
    PEER_PID=$!
}
ssh_socks_ready() {
    curl -fsS -o /dev/null --max-time 1 -x "socks4a://127.0.0.1:$PORT_A" "http://localhost:$HTTP_PORT/small.txt"
}
start_peer "ssh -D (SOCKS4a)" 100 launch_ssh_socks ssh_socks_ready "$SSH_DIR/sshd.log" "$SSH_DIR/ssh.log"
export ASYNCHTTP_SOCKS4A_URL="socks4a://127.0.0.1:$PORT_A"
export ASYNCHTTP_SOCKS4A_LOG="$SSH_DIR/sshd.log"

# SOCKS5 with RFC 1929 username/password: standard library Python, one log line per request.
SOCKS5_USER=socksuser
SOCKS5_PASSWORD=sockspass
mkdir -p "$PEERS/socks5"
launch_socks5() {
    local dir="$PEERS/socks5"
    : > "$dir/requests.log"
    python3 "$ROOT/scripts/peers/socks5_server.py" --port "$PORT_A" \
        --username "$SOCKS5_USER" --password "$SOCKS5_PASSWORD" --log "$dir/requests.log" \
        > "$dir/server.log" 2>&1 &
    PEER_PID=$!
}
socks5_ready() {
    curl -fsS -o /dev/null --max-time 1 -x "socks5://$SOCKS5_USER:$SOCKS5_PASSWORD@127.0.0.1:$PORT_A" "$ORIGIN_URL"
}
start_peer "SOCKS5 (username/password)" 50 launch_socks5 socks5_ready "$PEERS/socks5/server.log" "$PEERS/socks5/requests.log"
export ASYNCHTTP_SOCKS5_AUTH_URL="socks5://127.0.0.1:$PORT_A"
export ASYNCHTTP_SOCKS5_USER="$SOCKS5_USER"
export ASYNCHTTP_SOCKS5_PASSWORD="$SOCKS5_PASSWORD"
export ASYNCHTTP_SOCKS5_AUTH_LOG="$PEERS/socks5/requests.log"

# NTLM origin and proxy: pyspnego (PyPI) in its own virtualenv; it reads the accepted users from the
# file NTLM_USER_FILE names.
NTLM_USER=ntlmuser
NTLM_PASSWORD=ntlmpass
NTLM_DOMAIN=TESTDOM
NTLM_VENV="$PEERS/ntlm-venv"
NTLM_REQUIREMENTS="$ROOT/scripts/requirements-ntlm.txt"
if ! cmp -s "$NTLM_REQUIREMENTS" "$NTLM_VENV/requirements.txt"; then
    log "installing pyspnego into $NTLM_VENV"
    rm -rf "$NTLM_VENV"
    python3 -m venv "$NTLM_VENV"
    "$NTLM_VENV/bin/pip" install --quiet --disable-pip-version-check -r "$NTLM_REQUIREMENTS"
    cp "$NTLM_REQUIREMENTS" "$NTLM_VENV/requirements.txt"  # marks the install complete
fi
mkdir -p "$PEERS/ntlm"
printf '%s:%s:%s\n' "$NTLM_DOMAIN" "$NTLM_USER" "$NTLM_PASSWORD" > "$PEERS/ntlm/users"
launch_ntlm() {
    NTLM_USER_FILE="$PEERS/ntlm/users" "$NTLM_VENV/bin/python" "$ROOT/scripts/peers/ntlm_server.py" \
        --origin-port "$PORT_A" --proxy-port "$PORT_B" > "$PEERS/ntlm/server.log" 2>&1 &
    PEER_PID=$!
}
ntlm_ready() {
    curl -fsS -o /dev/null --max-time 1 "http://127.0.0.1:$PORT_A/stats" &&
        curl -fsS -o /dev/null --max-time 1 "http://127.0.0.1:$PORT_B/stats"
}
start_peer "NTLM origin" 100 launch_ntlm ntlm_ready "$PEERS/ntlm/server.log"
log "NTLM proxy on 127.0.0.1:$PORT_B (same process)"
export ASYNCHTTP_NTLM_URL="http://127.0.0.1:$PORT_A"
export ASYNCHTTP_NTLM_PROXY_URL="http://127.0.0.1:$PORT_B"
export ASYNCHTTP_NTLM_USER="$NTLM_USER"
export ASYNCHTTP_NTLM_PASSWORD="$NTLM_PASSWORD"
export ASYNCHTTP_NTLM_DOMAIN="$NTLM_DOMAIN"

# --- web archive site (AsyncHTTPWebArchive) ---------------------------------------------------
# A small site for the web archive's tests (Tests/AsyncHTTPTests/Resources/webarchive-site), served by a second
# nginx on two ports: PORT_A is the page's origin, PORT_B a second origin for its cross-origin resources. The
# files' @ORIGIN@, @HOST@ and @OTHER@ become those origins. Chromium renders the live site and the archive.
need chromium chromium
WEBARCHIVE_DIR="$PEERS/webarchive"
mkdir -p "$WEBARCHIVE_DIR/tmp"
launch_webarchive() {
    local site="$WEBARCHIVE_DIR/site" user_line="" mime_line="types { text/html html; text/css css; image/png png; application/javascript js; }"
    [ "$(id -u)" -eq 0 ] && user_line="user root;"
    [ -f /etc/nginx/mime.types ] && mime_line="include /etc/nginx/mime.types;"
    rm -rf "$site" && mkdir -p "$site"
    cp -R "$ROOT/Tests/AsyncHTTPTests/Resources/webarchive-site/." "$site/"
    find "$site" \( -name '*.html' -o -name '*.css' \) -exec sed -i \
        -e "s|@ORIGIN@|http://127.0.0.1:$PORT_A|g" -e "s|@HOST@|127.0.0.1:$PORT_A|g" -e "s|@OTHER@|http://127.0.0.1:$PORT_B|g" {} +
    cat > "$WEBARCHIVE_DIR/nginx.conf" <<EOF
# Generated by scripts/test.sh; do not edit.
$user_line
worker_processes 1;
daemon off;
pid $WEBARCHIVE_DIR/nginx.pid;
error_log $WEBARCHIVE_DIR/error.log warn;
events { worker_connections 128; }
http {
    $mime_line
    default_type application/octet-stream;
    access_log $WEBARCHIVE_DIR/access.log;
    client_body_temp_path $WEBARCHIVE_DIR/tmp/client_body;
    proxy_temp_path $WEBARCHIVE_DIR/tmp/proxy;
    fastcgi_temp_path $WEBARCHIVE_DIR/tmp/fastcgi;
    uwsgi_temp_path $WEBARCHIVE_DIR/tmp/uwsgi;
    scgi_temp_path $WEBARCHIVE_DIR/tmp/scgi;
    gzip on;
    gzip_min_length 20;
    gzip_types text/css application/javascript;
    server {
        listen 127.0.0.1:$PORT_A;
        root $site;
        # Only with the cookie: shows that the page and its resources go through the client's cookie jar.
        location /members/ { if (\$cookie_session != "s3cret") { return 403; } }
    }
    server { listen 127.0.0.1:$PORT_B; root $site; }
}
EOF
    : > "$WEBARCHIVE_DIR/error.log"
    nginx -p "$WEBARCHIVE_DIR" ${NGINX_ERROR_FLAG[@]+"${NGINX_ERROR_FLAG[@]}"} -c "$WEBARCHIVE_DIR/nginx.conf" &
    PEER_PID=$!
}
webarchive_ready() {
    curl -fsS -o /dev/null --max-time 1 "http://127.0.0.1:$PORT_A/index.html" &&
        curl -fsS -o /dev/null --max-time 1 "http://127.0.0.1:$PORT_B/img/blue.png"
}
start_peer "nginx (web archive site)" 50 launch_webarchive webarchive_ready "$WEBARCHIVE_DIR/error.log"
export ASYNCHTTP_WEBARCHIVE_URL="http://127.0.0.1:$PORT_A"
export ASYNCHTTP_WEBARCHIVE_OTHER_URL="http://127.0.0.1:$PORT_B"
export ASYNCHTTP_WEBARCHIVE_SITE="$WEBARCHIVE_DIR/site"
ASYNCHTTP_CHROMIUM="$(command -v chromium)"
export ASYNCHTTP_CHROMIUM
# --- moto (S3) ------------------------------------------------------------------------------
# moto's S3 in server mode for AsyncHTTPS3's operations, and botocore (installed with it) as the independent
# SigV4 signer the signing tests compare with; pinned in scripts/requirements-moto.txt.
MOTO_VENV="$PEERS/moto-venv"
MOTO_REQUIREMENTS="$ROOT/scripts/requirements-moto.txt"
if ! cmp -s "$MOTO_REQUIREMENTS" "$MOTO_VENV/requirements.txt"; then
    log "installing moto into $MOTO_VENV"
    rm -rf "$MOTO_VENV"
    python3 -m venv "$MOTO_VENV"
    "$MOTO_VENV/bin/pip" install --quiet --disable-pip-version-check -r "$MOTO_REQUIREMENTS"
    cp "$MOTO_REQUIREMENTS" "$MOTO_VENV/requirements.txt"  # marks the install complete
fi
launch_moto() {
    "$MOTO_VENV/bin/moto_server" -H 127.0.0.1 -p "$PORT_A" > "$PEERS/moto.log" 2>&1 &
    PEER_PID=$!
}
moto_ready() { curl -fsS -o /dev/null --max-time 1 "http://127.0.0.1:$PORT_A/moto-api/"; }
# Up to 20 s: the first start imports moto's many service modules.
start_peer "moto" 200 launch_moto moto_ready "$PEERS/moto.log"
export ASYNCHTTP_MOTO_URL="http://127.0.0.1:$PORT_A"
export ASYNCHTTP_MOTO_PYTHON="$MOTO_VENV/bin/python"

# --- tests -----------------------------------------------------------------------------------
# The layer walls that the target graph cannot hold (OS calls only in IO/, nothing above the transport
# touching a socket, one place that releases a connection): a breach fails the run before any test.
"$ROOT/scripts/check-layers.sh"

SWIFT_ARGS=()
case "${SANITIZE:-}" in
    "") ;;
    thread) SWIFT_ARGS+=(--sanitize=thread --scratch-path "$ROOT/.build/tsan") ;;
    address)
        SWIFT_ARGS+=(--sanitize=address --scratch-path "$ROOT/.build/asan")
        # LeakSanitizer's exit-time report lists what XCTest keeps until the process ends (every test case
        # object and what it holds: clients, SwiftNIO test servers and their event-loop threads); memory
        # errors (overflows, use after free) still fail the run.
        export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}" ;;
    *) log "unsupported SANITIZE=${SANITIZE} (supported: thread, address)"; exit 2 ;;
esac

cd "$ROOT"
# --- documentation examples and coverage -----------------------------------------------------
# Every Swift example in README.md, docs/, the DocC catalogue and the public doc comments type-checks against
# the library (scripts/check-snippets.sh), and every public symbol has a doc comment
# (scripts/check-doc-coverage.sh). On full plain runs only: a filtered run (`--filter X`) or a sanitizer pass
# skips them; CHECK_DOCS=1 forces them, CHECK_DOCS=0 skips them.
if [ "${CHECK_DOCS:-$([ $# -eq 0 ] && [ -z "${SANITIZE:-}" ] && echo 1 || echo 0)}" = 1 ]; then
    "$ROOT/scripts/check-snippets.sh"
    "$ROOT/scripts/check-doc-coverage.sh" --no-build
fi
swift test ${SWIFT_ARGS[@]+"${SWIFT_ARGS[@]}"} "$@"
exit
}
