#!/usr/bin/env bash
# AsyncHTTP benchmarks, side by side with async-http-client, URLSession, curl and wrk, against one local nginx.
#
#   Benchmarks/run.sh                 full run (3 rounds, ~15 minutes on 2 cores), writes docs/benchmarks.md
#   QUICK=1 Benchmarks/run.sh         smoke run: 1 round, short durations, small counts
#   SCENARIOS="conc256 hosts100 cold" QUICK=1 Benchmarks/run.sh    some scenarios only (see SCENARIOS below)
#
# Environment: ROUNDS (default 3), HTTP_PORT (18080), HTTPS_PORT (18443), QUICK, NO_INSTALL=1 (skip apt),
# REPORT_ONLY=1 (rewrite the report from the last run's Benchmarks/.bench/results.jsonl, running nothing),
# SCENARIOS="download upload" (only these; the report then goes to Benchmarks/.bench/benchmarks-partial.md, not
# docs/), SERVE=1 (generate, start nginx and wait until interrupted: for profiling one client by hand).
# Everything it generates lives in Benchmarks/.bench/ (certificate, files, nginx config and logs, raw results).
# Loopback only; every loop is bounded in count, and every run in time (`timeout`).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
BENCH=$HERE/.bench
QUICK=${QUICK:-0}
ROUNDS=${ROUNDS:-3}
HTTP_PORT=${HTTP_PORT:-18080}
HTTPS_PORT=${HTTPS_PORT:-18443}
[[ $QUICK == 1 ]] && ROUNDS=1

# Per-scenario sizes. Timed scenarios stop at SECONDS or at the request cap, whichever comes first.
if [[ $QUICK == 1 ]]; then
    SECONDS_PER_RUN=1; DOWNLOADS=1; GZIPS=2; UPLOADS=1; MEMORY_CONNECTIONS=300; MEMORY_SECONDS=10; PARSER_SECONDS=0.5
    FILE_TRANSFERS=1; COLD_RUNS=20; PROGRESS_SECONDS=2; PROGRESS_DOWNLOADS=2
else
    SECONDS_PER_RUN=5; DOWNLOADS=8; GZIPS=32; UPLOADS=16; MEMORY_CONNECTIONS=4000; MEMORY_SECONDS=40; PARSER_SECONDS=2
    FILE_TRANSFERS=4; COLD_RUNS=100; PROGRESS_SECONDS=20; PROGRESS_DOWNLOADS=16
fi
# conc256: tasks and pool. hosts100: virtual hosts, tasks, and the pool's connections per host (with 32 tasks
# over 100 hosts a host rarely has more than two requests in flight; 4 leaves room without opening 400).
CONC256=256
HOSTS=100; HOSTS_TASKS=32; HOSTS_POOL=4
HOSTS_DOMAIN=bench.test   # under RFC 6761's reserved .test: never a real name
# The memory scenario stops at MEMORY_SECONDS even before MEMORY_CONNECTIONS (URLSession re-reads the system CA
# bundle for every new connection and manages about 30 a second); its table cell then says how many it made.
REQUEST_CAP=2000000
RUN_TIMEOUT=150       # seconds, per client run
MEMORY_TIMEOUT=300    # 4,000 TLS handshakes by the slowest client
CLIENTS=(asynchttp ahc urlsession)
ALL_SCENARIOS="seq conc conc256 hosts100 download gzip upload tls-seq tls-new memory upload-file upload-multipart download-file cache-hit cache-revalidate cold progress"
# Who runs what: AHC has no response cache, so the cache scenarios compare AsyncHTTP with URLSession's URLCache
# (and with AsyncHTTP's own `seq`, a keep-alive round trip per request, as the ceiling to beat).
clients_for() {
    case $1 in
        cache-*) echo "asynchttp urlsession" ;;
        *) echo "${CLIENTS[*]}" ;;
    esac
}
SCENARIOS=${SCENARIOS:-$ALL_SCENARIOS parser}

log() { printf '[%(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "error: $*"; exit 1; }

# ---------------------------------------------------------------- tools
install_missing() {
    local packages=()
    command -v nginx >/dev/null || packages+=(nginx-light)
    command -v wrk >/dev/null || packages+=(wrk)
    command -v curl >/dev/null || packages+=(curl)
    command -v openssl >/dev/null || packages+=(openssl)
    [[ -f /usr/include/http_parser.h ]] || packages+=(libhttp-parser-dev)
    command -v python3 >/dev/null || packages+=(python3)
    command -v cc >/dev/null || packages+=(gcc)
    command -v unshare >/dev/null || packages+=(util-linux)
    [[ ${#packages[@]} -eq 0 ]] && return
    [[ ${NO_INSTALL:-0} == 1 ]] && die "missing: ${packages[*]} (NO_INSTALL=1)"
    local sudo=()
    [[ $(id -u) -ne 0 ]] && sudo=(sudo)
    log "installing ${packages[*]}"
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${packages[@]}" >/dev/null \
        || { "${sudo[@]}" apt-get update -q >/dev/null && \
             "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${packages[@]}" >/dev/null; }
}

build() {
    log "building release (swift build -c release --package-path Benchmarks)"
    (cd "$ROOT" && swift build -c release --package-path Benchmarks) >"$BENCH/build.log" 2>&1 \
        || { tail -30 "$BENCH/build.log" >&2; die "swift build failed (see $BENCH/build.log)"; }
    BIN=$(cd "$ROOT" && swift build -c release --package-path Benchmarks --show-bin-path)
    cc -O2 -o "$BENCH/bin/bench_http_parser" "$HERE/parser-c/bench_http_parser.c" -lhttp_parser
    # cold: the CLI from the main package, built as docs/cli.md tells users to build it for deployment
    # (scripts/build-ahttp.sh: the Swift runtime linked in, no exported symbols, no mangled-name metadata
    # accessors), in a scratch directory of its own. Only when the scenario runs (a first build takes minutes).
    if [[ " $SCENARIOS " == *" cold "* ]]; then
        local ahttp_build=(env SCRATCH="$HERE/.build-ahttp" "$ROOT/scripts/build-ahttp.sh")
        log "building ahttp (SCRATCH=Benchmarks/.build-ahttp scripts/build-ahttp.sh)"
        "${ahttp_build[@]}" >"$BENCH/build-ahttp.log" 2>&1 \
            || { tail -30 "$BENCH/build-ahttp.log" >&2; die "building ahttp failed (see $BENCH/build-ahttp.log)"; }
        # Installed as docs/cli.md says (a copy on the PATH), and run from there. The linker's own output file runs
        # about 0.8 ms slower per start than a copy of the same bytes (908 against 866 page faults, `perf stat`;
        # most likely the page cache keeps a file written in small pieces in smaller folios than a copy, so mapping
        # the 39 MB binary takes more faults). curl and its libraries were installed by dpkg, as copies.
        install -m 755 "$("${ahttp_build[@]}" --show-bin-path)/ahttp" "$BENCH/bin/ahttp"
        AHTTP=$BENCH/bin/ahttp
    fi
}

# ---------------------------------------------------------------- files, certificate, nginx
generate() {
    mkdir -p "$BENCH/www/gz" "$BENCH/nginx/logs" "$BENCH/bin" "$BENCH/parser"
    local www=$BENCH/www
    [[ -f $www/1k.bin ]] || head -c 1024 /dev/urandom >"$www/1k.bin"
    if [[ ! -f $www/256m.bin || $(stat -c %s "$www/256m.bin") -ne $((256 << 20)) ]]; then
        log "generating the 256 MiB file"
        head -c $((256 << 20)) /dev/urandom >"$www/256m.bin"
    fi
    if [[ ! -f $www/gz/data.json.gz ]]; then
        log "generating the 16 MiB JSON and its gzip"
        python3 - "$www/gz/data.json" <<'PY'
import json, random, sys
random.seed(7)
words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma".split()
target, out, i = 16 << 20, [], 0
size = 1
while True:
    item = json.dumps({"id": i, "name": " ".join(random.choice(words) for _ in range(3)),
                       "price": round(random.uniform(1, 500), 2), "tags": random.sample(words, 3),
                       "active": i % 3 != 0, "stock": random.randint(0, 10000)}, separators=(",", ":"))
    if size + len(item) + 1 > target - 1:
        break
    out.append(item); size += len(item) + 1; i += 1
text = "[" + ",".join(out) + "]"
text += " " * (target - len(text))          # exactly 16 MiB
open(sys.argv[1], "w").write(text)
PY
        gzip -6 -n -k -f "$www/gz/data.json"
    fi
    [[ -f $BENCH/upload-64m.bin ]] || head -c $((64 << 20)) /dev/zero | tr '\0' x >"$BENCH/upload-64m.bin"
    if [[ ! -f $BENCH/cert.pem ]]; then
        # ECDSA P-256, the usual choice for a modern server; valid for the address the clients connect to.
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
            -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
            -keyout "$BENCH/key.pem" -out "$BENCH/cert.pem" 2>/dev/null
    fi
    # Uploads land in a tmp dir (tmpfs when there is one), so disk speed does not cap them.
    DAV=$(mktemp -d "${TMPDIR_DAV:-/dev/shm}/asynchttp-bench.XXXXXX" 2>/dev/null || mktemp -d)
    mkdir -p "$DAV/dav" "$DAV/tmp" "$DAV/downloads"
    chmod -R 777 "$DAV"

    local user_line="" temp_lines="" vhosts="" name i
    for ((i = 0; i < HOSTS; i++)); do
        printf -v name 'h%03d.%s' "$i" "$HOSTS_DOMAIN"
        vhosts+="    server { listen 127.0.0.1:$HTTP_PORT; server_name $name; location /hosts/ { alias $BENCH/www/; } }"$'\n'
    done
    [[ $(id -u) -eq 0 ]] && user_line="user root;"
    local module
    for module in proxy fastcgi uwsgi scgi; do
        nginx -V 2>&1 | grep -q -- "--without-http_${module}_module" \
            || temp_lines+="    ${module}_temp_path $BENCH/nginx/${module}_temp;"$'\n'
    done
    cat >"$BENCH/nginx/nginx.conf" <<EOF
# Generated by Benchmarks/run.sh. One worker, no access log, keep-alive without practical limits,
# TLS without session resumption (every new connection is a full handshake).
$user_line
daemon off;
worker_processes 1;
worker_rlimit_nofile 8192;
pid $BENCH/nginx/nginx.pid;
error_log $BENCH/nginx/logs/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    default_type application/octet-stream;
    types { application/json json; }
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_requests 10000000;
    keepalive_timeout 65;
    client_body_temp_path $DAV/tmp;
$temp_lines
    server {
        listen 127.0.0.1:$HTTP_PORT;
        listen 127.0.0.1:$HTTPS_PORT ssl;
        ssl_certificate $BENCH/cert.pem;
        ssl_certificate_key $BENCH/key.pem;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_session_cache off;
        ssl_session_tickets off;
        root $BENCH/www;

        # The JSON is always served as its pre-compressed .gz (no on-the-fly gzip, no gunzip).
        location /gz/ {
            gzip_static always;
            add_header Vary Accept-Encoding;
        }
        # The cache scenarios: the same 1 KiB file, fresh for an hour, or to be revalidated every time (ETag).
        location /cache/fresh/ {
            alias $BENCH/www/;
            expires 1h;
        }
        location /cache/no-cache/ {
            alias $BENCH/www/;
            add_header Cache-Control no-cache;
        }
        location /dav/ {
            root $DAV;
            dav_methods PUT;
            client_max_body_size 0;
            client_body_buffer_size 1m;
        }
    }
    # hosts100: name-based virtual hosts h000.$HOSTS_DOMAIN … on the same port, a server block each. Only they
    # serve /hosts/, so a request that reached the default server above (a wrong Host) gets a 404.
$vhosts}
EOF
}

NGINX_PID=""
start_nginx() {
    # A server left by an interrupted earlier run of this script (its own pid file) is stopped first.
    if [[ -f $BENCH/nginx/nginx.pid ]]; then
        local old; old=$(cat "$BENCH/nginx/nginx.pid")
        if [[ -n $old ]] && kill -0 "$old" 2>/dev/null && grep -q nginx "/proc/$old/cmdline" 2>/dev/null; then
            kill -QUIT "$old"; sleep 1
        fi
    fi
    curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$HTTP_PORT/" \
        && die "port $HTTP_PORT is in use; set HTTP_PORT and HTTPS_PORT"
    rm -f "$BENCH/nginx/nginx.pid"
    # In the foreground of a background job (`daemon off`), so this script is its parent and reaps it.
    nginx -p "$BENCH/nginx" -c "$BENCH/nginx/nginx.conf" -e "$BENCH/nginx/logs/error.log" &
    NGINX_PID=$!
    local i
    for i in $(seq 1 50); do
        [[ -s $BENCH/nginx/nginx.pid ]] && curl -sf -o /dev/null "http://127.0.0.1:$HTTP_PORT/1k.bin" && break
        sleep 0.1
    done
    curl -sf -o /dev/null --cacert "$BENCH/cert.pem" "https://127.0.0.1:$HTTPS_PORT/1k.bin" \
        || die "nginx did not come up (see $BENCH/nginx/logs/error.log)"
    log "nginx $NGINX_PID on 127.0.0.1:$HTTP_PORT and :$HTTPS_PORT"
}

cleanup() {
    if [[ -n $NGINX_PID ]]; then
        kill -QUIT "$NGINX_PID" 2>/dev/null || true
        wait "$NGINX_PID" 2>/dev/null || true
    fi
    [[ -n ${DAV:-} && -d ${DAV:-} ]] && rm -rf "$DAV"
}

# URLSession on Linux trusts only the system bundle that libcurl was built with (no server-trust
# challenge; its `URLSessionCertificateAuthorityInfoFile` variable is Android-only; SSL_CERT_FILE and
# CURL_CA_BUNDLE are ignored). So its TLS runs get a private mount namespace in which that bundle has the
# benchmark's certificate appended: the machine's trust store is never touched.
URLSESSION_TRUST=()
setup_urlsession_trust() {
    local system_bundle=/etc/ssl/certs/ca-certificates.crt bundle=$BENCH/urlsession-ca-bundle.pem
    [[ -f $system_bundle ]] || { log "no $system_bundle: URLSession TLS scenarios will fail"; return; }
    cat "$system_bundle" "$BENCH/cert.pem" >"$bundle"
    bind_wrapper "$bundle" "$system_bundle" \
        || log "cannot create a mount namespace (unshare): URLSession TLS scenarios will fail certificate checks"
    URLSESSION_TRUST=("${WRAPPER[@]}")
}

# hosts100: every client resolves h000.bench.test … with getaddrinfo (AsyncHTTP's Resolver, NIO's
# GetaddrinfoResolver under AHC, libcurl's threaded resolver under URLSession), which reads /etc/hosts first
# (nsswitch `hosts: files …`). So each client runs in a private mount namespace whose /etc/hosts is the
# machine's plus one line per virtual host, all on 127.0.0.1; the machine's file is untouched.
HOSTS_NAMES=()
setup_virtual_hosts() {
    local hosts=$BENCH/hosts name i
    cat /etc/hosts >"$hosts" 2>/dev/null || : >"$hosts"
    for ((i = 0; i < HOSTS; i++)); do
        printf -v name 'h%03d.%s' "$i" "$HOSTS_DOMAIN"
        echo "127.0.0.1 $name" >>"$hosts"
    done
    if bind_wrapper "$hosts" /etc/hosts \
        && "${WRAPPER[@]}" getent hosts "h000.$HOSTS_DOMAIN" >/dev/null; then
        HOSTS_NAMES=("${WRAPPER[@]}")
    else
        log "cannot give the clients a private /etc/hosts (unshare): hosts100 will fail"
    fi
}

# bind_wrapper SOURCE TARGET: sets WRAPPER to a command prefix that runs a command in a private mount namespace
# in which SOURCE is bind-mounted over TARGET (empty, and status 1, if no namespace can be made).
WRAPPER=()
bind_wrapper() {
    local script='mount --bind "$0" '"$2"' && exec "$@"' flags
    WRAPPER=()
    for flags in --mount "--mount --map-root-user"; do
        # shellcheck disable=SC2086
        if unshare $flags sh -c "$script" "$1" true 2>/dev/null; then
            # shellcheck disable=SC2206
            WRAPPER=(unshare $flags sh -c "$script" "$1")
            return 0
        fi
    done
    return 1
}

# ---------------------------------------------------------------- runs
RESULTS=$BENCH/results.jsonl
COMMANDS=$BENCH/commands.txt

# record CLIENT SCENARIO COMMAND...: runs a command bounded in time, appends its JSON line (or a failure line).
record() {
    local client=$1 scenario=$2; shift 2
    local limit=$RUN_TIMEOUT
    [[ $scenario == memory ]] && limit=$MEMORY_TIMEOUT
    printf '%q ' "$@" | sed 's/ $//' >>"$COMMANDS"
    echo >>"$COMMANDS"
    local output rc=0
    output=$(timeout "$limit" "$@" 2>>"$BENCH/stderr.log") || rc=$?
    local line; line=$(printf '%s\n' "$output" | grep '^{' | tail -1 || true)
    if [[ -n $line && $rc -eq 0 ]]; then
        echo "$line" >>"$RESULTS"
    else
        # Every request failed (exit 1), the run timed out (124) or crashed: no figures from it.
        log "  $client $scenario failed (exit $rc; see $BENCH/stderr.log)"
        echo "{\"client\":\"$client\",\"scenario\":\"$scenario\",\"failed\":true,\"exit\":$rc}" >>"$RESULTS"
    fi
}

# Reads the files a scenario serves (or uploads) into the page cache before each client's run. This VM's kernel
# runs DAMON reclaim, which pages out file pages left unread for about 60 s; without this, whichever client
# ran first in a round read the 256 MiB file from disk through nginx's sendfile (session 4: AsyncHTTP's
# download measured 1.7 GB/s in full runs, 2.4 GB/s once the file was warm; AHC and curl, a few seconds
# later, never saw it cold).
warm_cache() {
    case $1 in
        seq|conc|conc256|hosts100|cold) cat "$BENCH/www/1k.bin" >/dev/null ;;
        download) cat "$BENCH/www/256m.bin" >/dev/null ;;
        gzip) cat "$BENCH/www/gz/data.json.gz" >/dev/null ;;
        upload) cat "$BENCH/upload-64m.bin" >/dev/null ;;
        upload-file|upload-multipart|download-file) cat "$BENCH/www/256m.bin" >/dev/null ;;
    esac
}

# The Swift clients, one scenario.
run_client() {
    warm_cache "$2"
    local client=$1 scenario=$2 base=http://127.0.0.1:$HTTP_PORT concurrency=1 extra=()
    case $scenario in
        tls-*|memory) base=https://127.0.0.1:$HTTPS_PORT ;;
    esac
    case $scenario in
        seq|tls-seq|tls-new|cache-*) extra=(--seconds "$SECONDS_PER_RUN" --requests "$REQUEST_CAP" --directory "$DAV") ;;
        upload-file|upload-multipart) extra=(--requests "$FILE_TRANSFERS" --file "$BENCH/www/256m.bin" --directory "$DAV") ;;
        download-file) extra=(--requests "$FILE_TRANSFERS" --directory "$DAV/downloads") ;;
        conc) concurrency=32; extra=(--seconds "$SECONDS_PER_RUN" --requests "$REQUEST_CAP") ;;
        conc256) concurrency=$CONC256; extra=(--seconds "$SECONDS_PER_RUN" --requests "$REQUEST_CAP") ;;
        hosts100) base=http://$HOSTS_DOMAIN:$HTTP_PORT; concurrency=$HOSTS_TASKS
                  extra=(--seconds "$SECONDS_PER_RUN" --requests "$REQUEST_CAP" --hosts "$HOSTS" --connections-per-host "$HOSTS_POOL") ;;
        download) extra=(--requests "$DOWNLOADS") ;;
        gzip) extra=(--requests "$GZIPS") ;;
        upload) extra=(--requests "$UPLOADS") ;;
        memory) extra=(--requests "$MEMORY_CONNECTIONS" --seconds "$MEMORY_SECONDS") ;;
    esac
    local wrapper=()
    [[ $client == urlsession && $base == https:* ]] && wrapper=("${URLSESSION_TRUST[@]}")
    [[ $scenario == hosts100 ]] && wrapper=("${HOSTS_NAMES[@]}")
    record "$client" "$scenario" "${wrapper[@]}" "$BIN/bench-$client" --scenario "$scenario" --url "$base" \
        --concurrency "$concurrency" --cacert "$BENCH/cert.pem" "${extra[@]}"
}

# wrk as the C reference for request rates: prints one JSON line like the Swift clients'.
run_wrk() {
    local scenario=$1 url threads=1 connections=1 header=()
    case $scenario in
        seq) url=http://127.0.0.1:$HTTP_PORT/1k.bin ;;
        conc) url=http://127.0.0.1:$HTTP_PORT/1k.bin; threads=2; connections=32 ;;
        conc256) url=http://127.0.0.1:$HTTP_PORT/1k.bin; threads=1; connections=$CONC256 ;;
        tls-seq) url=https://127.0.0.1:$HTTPS_PORT/1k.bin ;;
        tls-new) url=https://127.0.0.1:$HTTPS_PORT/1k.bin; header=(-H "Connection: close") ;;
        # hosts100: each request names the next virtual host (Benchmarks/tools/wrk-hosts.lua), over 32 connections.
        hosts100) url=http://127.0.0.1:$HTTP_PORT/; threads=2; connections=$HOSTS_TASKS
                  header=(-s "$HERE/tools/wrk-hosts.lua") ;;
    esac
    local command=(env "BENCH_HOSTS=$HOSTS" "BENCH_HOSTS_DOMAIN=$HOSTS_DOMAIN" "BENCH_HTTP_PORT=$HTTP_PORT"
                   wrk "-t$threads" "-c$connections" "-d${SECONDS_PER_RUN}s" "${header[@]}" "$url")
    printf '%q ' "${command[@]}" | sed 's/ $//' >>"$COMMANDS"
    echo >>"$COMMANDS"
    local output
    output=$(timeout "$RUN_TIMEOUT" "${command[@]}" 2>&1) || true
    python3 - "$scenario" "$output" >>"$RESULTS" <<'PY'
import json, re, sys
scenario, text = sys.argv[1], sys.argv[2]
rate = re.search(r"Requests/sec:\s*([\d.]+)", text)
done = re.search(r"(\d+) requests in ([\d.]+)(m?s)", text)
errors = sum(int(n) for n in re.findall(r"(?:connect|read|write|timeout) (\d+)", text))
errors += int(m.group(1)) if (m := re.search(r"Non-2xx or 3xx responses: (\d+)", text)) else 0
if not rate or not done:
    print(json.dumps({"client": "wrk", "scenario": scenario, "failed": True}))
else:
    seconds = float(done.group(2)) / (1000 if done.group(3) == "ms" else 1)
    print(json.dumps({"client": "wrk", "scenario": scenario, "requests": int(done.group(1)),
                      "seconds": seconds, "req_per_s": float(rate.group(1)), "errors": errors}))
PY
}

# curl as the C reference for throughput: COUNT transfers, one process each, summed.
run_curl() {
    warm_cache "$1"
    local scenario=$1 count args=() size=0
    case $scenario in
        download) count=$DOWNLOADS; args=(-o /dev/null "http://127.0.0.1:$HTTP_PORT/256m.bin") ;;
        gzip) count=$GZIPS; size=$(stat -c %s "$BENCH/www/gz/data.json")
              args=(--compressed -o /dev/null "http://127.0.0.1:$HTTP_PORT/gz/data.json") ;;
        upload) count=$UPLOADS; size=$(stat -c %s "$BENCH/upload-64m.bin")
                args=(-o /dev/null -T "$BENCH/upload-64m.bin" "http://127.0.0.1:$HTTP_PORT/dav/curl.bin") ;;
        upload-file) count=$FILE_TRANSFERS; size=$(stat -c %s "$BENCH/www/256m.bin")
                args=(-o /dev/null -T "$BENCH/www/256m.bin" "http://127.0.0.1:$HTTP_PORT/dav/curl-file.bin") ;;
        upload-multipart) count=$FILE_TRANSFERS; size=$(stat -c %s "$BENCH/www/256m.bin")
                args=(-o /dev/null -X PUT -F "file=@$BENCH/www/256m.bin" "http://127.0.0.1:$HTTP_PORT/dav/curl-multipart.bin") ;;
        download-file) count=$FILE_TRANSFERS
                args=(-o "$DAV/downloads/curl.bin" "http://127.0.0.1:$HTTP_PORT/256m.bin") ;;
    esac
    echo "curl -s -w '%{time_total} %{size_download} %{size_upload} %{http_code}' ${args[*]}  (x$count)" >>"$COMMANDS"
    local i out lines=""
    for ((i = 0; i < count; i++)); do
        out=$(timeout "$RUN_TIMEOUT" curl -s -w '%{time_total} %{size_download} %{size_upload} %{http_code}' "${args[@]}" || echo "0 0 0 000")
        lines+="$out"$'\n'
    done
    python3 - "$scenario" "$size" "$lines" >>"$RESULTS" <<'PY'
import json, sys
scenario, fixed_size, text = sys.argv[1], int(sys.argv[2]), sys.argv[3]
seconds = total = errors = ok = 0
for line in text.split("\n"):
    if not line.strip():
        continue
    t, down, up, code = line.split()
    if not code.startswith("2"):
        errors += 1
        continue
    ok += 1
    seconds += float(t)
    # gzip: the decompressed size (curl's counters are the compressed bytes); upload: bytes sent.
    total += fixed_size if fixed_size else int(float(down))
if ok == 0:
    print(json.dumps({"client": "curl", "scenario": scenario, "failed": True}))
else:
    print(json.dumps({"client": "curl", "scenario": scenario, "requests": ok, "seconds": seconds,
                      "bytes": total, "mb_per_s": total / seconds / 1e6, "errors": errors}))
PY
}

# cold: a fresh process fetching the 1 KiB file over https, start to exit: ahttp against curl, the same options
# (`-s -o /dev/null --cacert`), COLD_RUNS each, alternating (tools/cold-start.py: median and p90 ms).
run_cold() {
    warm_cache cold
    local url=https://127.0.0.1:$HTTPS_PORT/1k.bin
    local ahttp_command curl_command
    ahttp_command=$(printf '%q ' "$AHTTP" -s -o /dev/null --cacert "$BENCH/cert.pem" "$url")
    curl_command=$(printf '%q ' curl -s -o /dev/null --cacert "$BENCH/cert.pem" "$url")
    echo "python3 Benchmarks/tools/cold-start.py $COLD_RUNS cold asynchttp '${ahttp_command% }' curl '${curl_command% }'" >>"$COMMANDS"
    local output
    output=$(timeout "$RUN_TIMEOUT" python3 "$HERE/tools/cold-start.py" "$COLD_RUNS" cold \
        asynchttp "${ahttp_command% }" curl "${curl_command% }" 2>>"$BENCH/stderr.log") || true
    if [[ $(printf '%s\n' "$output" | grep -c '^{') -eq 2 ]]; then
        printf '%s\n' "$output" | grep '^{' >>"$RESULTS"
    else
        log "  cold failed (see $BENCH/stderr.log)"
        echo '{"client":"asynchttp","scenario":"cold","failed":true}' >>"$RESULTS"
        echo '{"client":"curl","scenario":"cold","failed":true}' >>"$RESULTS"
    fi
}

# progress: what observing progress costs (issue 15). One AsyncHTTP run of `conc` that switches a do-nothing progress
# handler on and off every 100 ms, and one of `download` that switches it every request (`--alternate-progress`):
# each run compares its own two halves, so a drift of the machine's speed weighs on both alike. Separate runs,
# even in alternating pairs, spread ±20 % here, far more than the cost.
run_progress() {
    warm_cache download
    record asynchttp conc-alternating-progress "$BIN/bench-asynchttp" --scenario conc --url "http://127.0.0.1:$HTTP_PORT" \
        --concurrency 32 --cacert "$BENCH/cert.pem" --seconds "$PROGRESS_SECONDS" --alternate-progress 100
    record asynchttp download-alternating-progress "$BIN/bench-asynchttp" --scenario download --url "http://127.0.0.1:$HTTP_PORT" \
        --concurrency 1 --cacert "$BENCH/cert.pem" --requests "$PROGRESS_DOWNLOADS" --alternate-progress 1
}

run_parser() {
    local name
    for name in heads chunked; do
        record asynchttp "parser-$name" "$BIN/bench-parser" --corpus "$BENCH/parser/$name.bin" \
            --responses "$PARSER_RESPONSES" --seconds "$PARSER_SECONDS" --name "parser-$name"
        record http-parser "parser-$name" "$BENCH/bin/bench_http_parser" "$BENCH/parser/$name.bin" \
            "$PARSER_RESPONSES" "$PARSER_SECONDS" "parser-$name"
    done
}

# ---------------------------------------------------------------- report
# write_report FILE RUN_SECONDS: medians per client and scenario, ratios to AHC, targets, machine, commands.
write_report() {
    RESULTS=$RESULTS COMMANDS=$COMMANDS ROUNDS=$ROUNDS QUICK=$QUICK ROOT=$ROOT BENCH=$BENCH BIN=$BIN \
    RUN_SECONDS=$2 RUN_DATE=${RUN_DATE:-} MEMORY_CONNECTIONS=$MEMORY_CONNECTIONS \
    HOSTS=$HOSTS HOSTS_TASKS=$HOSTS_TASKS HOSTS_POOL=$HOSTS_POOL HOSTS_DOMAIN=$HOSTS_DOMAIN SETTINGS="timed scenarios ${SECONDS_PER_RUN} s each; download ${DOWNLOADS} x 256 MiB; gzip ${GZIPS} x 16 MiB; upload ${UPLOADS} x 64 MiB; memory ${MEMORY_CONNECTIONS} new TLS connections (at most ${MEMORY_SECONDS} s); cold ${COLD_RUNS} processes per client and round; progress: conc ${PROGRESS_SECONDS} s and download ${PROGRESS_DOWNLOADS} x 256 MiB per round, alternating; parser ${PARSER_SECONDS} s per corpus" \
    SCENARIOS=$SCENARIOS PARTIAL=$([[ $SCENARIOS == "$ALL_SCENARIOS parser" ]] && echo 0 || echo 1) \
    python3 - "$1" <<'PY'
import datetime, json, os, platform, re, statistics, subprocess, sys
from collections import defaultdict

out_path = sys.argv[1]
env = os.environ
runs = [json.loads(line) for line in open(env["RESULTS"]) if line.strip()]

def sh(command):
    try:
        return subprocess.run(command, shell=True, capture_output=True, text=True, timeout=60).stdout.strip()
    except Exception:
        return "?"

values = defaultdict(list)      # (client, scenario, metric) -> [value per successful run]
errors = defaultdict(int)       # (client, scenario) -> summed errors
failures = defaultdict(int)     # (client, scenario) -> runs that failed outright
for run in runs:
    key = (run["client"], run["scenario"])
    if run.get("failed"):
        failures[key] += 1
        continue
    errors[key] += int(run.get("errors", 0))
    for metric in ("req_per_s", "mb_per_s", "peak_rss_kb", "rss_anon_kb", "responses_per_s", "median_ms", "p90_ms", "cpu_ms",
                   "throughput_cost_pct", "cpu_cost_pct", "neighbour_throughput_cost_pct", "neighbour_cpu_cost_pct",
                   "neighbour_phases"):
        if metric in run:
            values[key + (metric,)].append(float(run[metric]))
    if "rss_after_100_kb" in run and "rss_after_4000_kb" in run:
        values[key + ("rss_growth_kb",)].append(float(run["rss_after_4000_kb"]) - float(run["rss_after_100_kb"]))

def median(client, scenario, metric):
    found = values.get((client, scenario, metric))
    return statistics.median(found) if found else None

def show(value, metric):
    if value is None:
        return "–"
    if metric in ("peak_rss_kb", "rss_growth_kb", "rss_anon_kb"):
        return f"{value / 1024:,.1f} MiB"
    if metric == "mb_per_s":
        return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"
    if metric in ("median_ms", "p90_ms", "cpu_ms"):
        return f"{value:,.1f} ms"
    return f"{value:,.0f}"

short_memory = defaultdict(list)   # client -> connection counts of memory runs that stopped early
for run in runs:
    if run["scenario"] == "memory" and not run.get("failed") and run["requests"] + run.get("errors", 0) < int(env["MEMORY_CONNECTIONS"]):
        short_memory[run["client"]].append(run["requests"] + run.get("errors", 0))

def cell(client, scenario, metric):
    text = show(median(client, scenario, metric), metric)
    if scenario == "memory" and metric == "rss_growth_kb" and short_memory.get(client):
        text += f" (100 → {int(statistics.median(short_memory[client])):,}, time-bound)"
    if metric == "median_ms" and text != "–":
        text += f" (p90 {show(median(client, scenario, 'p90_ms'), 'p90_ms')})"
    if failures.get((client, scenario)):
        text += f" ({failures[(client, scenario)]} failed)"
    if errors.get((client, scenario)):
        text += " †"
    return text

# (label, scenario, metric, reference client, targets): each target is (versus, comparison, factor), versus "ahc" or
# "ref" (the reference column's client); a row with several targets meets them all. Issue 19's targets.
rows = [
    ("seq req/s", "seq", "req_per_s", "wrk", [("ahc", ">=", 1.8)]),
    ("conc req/s", "conc", "req_per_s", "wrk", [("ahc", ">=", 1.5)]),
    ("conc256 req/s (256 tasks, pool of 256)", "conc256", "req_per_s", "wrk", [("ahc", ">=", 1.5)]),
    ("hosts100 req/s (100 virtual hosts)", "hosts100", "req_per_s", "wrk", [("ahc", ">=", 1.5)]),
    ("download MB/s", "download", "mb_per_s", "curl", [("ahc", ">=", 2.3)]),
    ("gzip MB/s (decompressed)", "gzip", "mb_per_s", "curl", [("ahc", ">=", 1.2)]),
    ("upload MB/s", "upload", "mb_per_s", "curl", [("ref", ">=", 1.0)]),
    ("tls-seq req/s", "tls-seq", "req_per_s", "wrk", [("ahc", ">=", 2.0)]),
    ("tls-new req/s", "tls-new", "req_per_s", "wrk", [("ahc", ">=", 1.1), ("ref", ">=", 1.0)]),
    ("cold https fetch, ms per process (median, p90)", "cold", "median_ms", "curl", [("ref", "<=", 1.0)]),
    ("cold, CPU ms per process (user + system, info)", "cold", "cpu_ms", "curl", []),
    ("peak RSS, seq", "seq", "peak_rss_kb", None, [("ahc", "<=", 0.6)]),
    ("peak RSS, conc", "conc", "peak_rss_kb", None, [("ahc", "<=", 0.6)]),
    ("peak RSS, conc256 (info)", "conc256", "peak_rss_kb", None, []),
    ("peak RSS, memory", "memory", "peak_rss_kb", None, []),
    ("anonymous RSS at the end, seq (info)", "seq", "rss_anon_kb", None, []),
    ("anonymous RSS at the end, conc (info)", "conc", "rss_anon_kb", None, []),
    ("RSS growth, 100 → {n} new TLS connections", "memory", "rss_growth_kb", None, [("absolute", "<", 2048)]),
]
memory_connections = int(env["MEMORY_CONNECTIONS"])
names = {"ahc": "AHC", "curl": "curl", "wrk": "wrk"}

lines = []
add = lines.append
quick = env.get("QUICK") == "1"
partial = env.get("PARTIAL") == "1"
add("# Benchmarks")
add("")
if quick:
    add("> **QUICK smoke run** (`QUICK=1`): one round with short durations. Not figures to cite.")
    add("")
if partial:
    add(f"> **Partial run**: only `{env.get('SCENARIOS', '')}`; rows of the other scenarios are empty.")
    add("")
run_date = env.get("RUN_DATE") or f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M}"
add(f"Generated by `Benchmarks/run.sh` on {run_date} UTC "
    f"({env['ROUNDS']} round(s), clients interleaved; {int(env['RUN_SECONDS']) // 60} min of runs). "
    "Do not edit by hand: rerun the script. Every figure is the median over the rounds; every ratio compares "
    "medians from this same run.")
add("")
add("## Results")
add("")
add("| scenario | AsyncHTTP | AHC | URLSession | curl/wrk | AsyncHTTP/AHC | AsyncHTTP/(curl or wrk) | target | met? |")
add("|---|---:|---:|---:|---:|---:|---:|---:|:---:|")
missed = []
for label, scenario, metric, reference, targets in rows:
    label = label.format(n=f"{memory_connections:,}")
    ours = median("asynchttp", scenario, metric)
    ratios = {}
    for versus, client in (("ahc", "ahc"), ("ref", reference)):
        theirs = median(client, scenario, metric) if client else None
        ratios[versus] = ours / theirs if ours is not None and theirs else None
    target_texts, verdicts = [], []
    for versus, comparison, factor in targets:
        if versus == "absolute":
            target_texts.append(f"{comparison} {factor / 1024:g} MiB")
            verdicts.append(ours is not None and ours < factor)
            continue
        ratio = ratios[versus]
        against = names[reference] if versus == "ref" else "AHC"
        target_texts.append(f"{'≥' if comparison == '>=' else '≤'} {factor:g}× {against}")
        verdicts.append(ratio is not None and (ratio >= factor if comparison == ">=" else ratio <= factor))
    # A scenario this run did not include (SCENARIOS=...) has no verdict; one that ran and has no figure misses.
    ran = any(run["scenario"] == scenario for run in runs)
    met = all(verdicts) if verdicts and ran else None
    if met is False:
        missed.append(label)
    ahc_text = "–" if ratios["ahc"] is None or targets and targets[0][0] == "absolute" else f"{ratios['ahc']:.2f}×"
    ref_ratio_text = "–" if ratios["ref"] is None else f"{ratios['ref']:.2f}×"
    ref_text = cell(reference, scenario, metric) if reference else "–"
    add(f"| {label} | {cell('asynchttp', scenario, metric)} | {cell('ahc', scenario, metric)} | "
        f"{cell('urlsession', scenario, metric)} | {ref_text} | {ahc_text} | {ref_ratio_text} | "
        f"{', '.join(target_texts) if target_texts else '–'} | {'–' if met is None else ('yes' if met else '**no**')} |")
batch = median("asynchttp-batch", "conc", "req_per_s")
if batch is not None:
    default, ahc, wrk = (median(c, "conc", "req_per_s") for c in ("asynchttp", "ahc", "wrk"))
    versus = [f"{batch / value:.2f}× {name}" for value, name in ((ahc, "AHC"), (wrk, "wrk"), (default, "the default's"))
              if value]
    add("")
    add(f"Opt-in, not the default (info, no target): `conc` with `HTTPClient.threadScheduling = .batch` "
        f"(`--batch-threads`; the threads requests resume on run under `SCHED_BATCH`): {show(batch, 'req_per_s')} "
        f"requests/s, {', '.join(versus)} in this run.")
add("")
add("Bodies on disk (256 MiB file from and to tmpfs) and the response cache (1 KiB). Targets: files at least curl's "
    "MB/s with peak RSS under 32 MiB; a fresh cache hit at least 2× AsyncHTTP's own keep-alive `seq` rate:")
add("")
add("| scenario | AsyncHTTP | AHC | URLSession | curl | AsyncHTTP/curl | AsyncHTTP/AHC | AsyncHTTP peak RSS | target | met? |")
add("|---|---:|---:|---:|---:|---:|---:|---:|---:|:---:|")
for label, scenario in (("upload-file MB/s (PUT, 256 MiB)", "upload-file"),
                        ("upload-multipart MB/s (the same file as a part)", "upload-multipart"),
                        ("download-file MB/s (256 MiB to disk)", "download-file")):
    ours, curl, ahc = (median(c, scenario, "mb_per_s") for c in ("asynchttp", "curl", "ahc"))
    rss = median("asynchttp", scenario, "peak_rss_kb")
    vs_curl = ours / curl if ours is not None and curl else None
    vs_ahc = ours / ahc if ours is not None and ahc else None
    met = None if vs_curl is None else (vs_curl >= 1.0 and rss is not None and rss < 32 * 1024)
    if met is False:
        missed.append(label)
    add(f"| {label} | {cell('asynchttp', scenario, 'mb_per_s')} | {cell('ahc', scenario, 'mb_per_s')} | "
        f"{cell('urlsession', scenario, 'mb_per_s')} | {cell('curl', scenario, 'mb_per_s')} | "
        f"{'–' if vs_curl is None else f'{vs_curl:.2f}×'} | {'–' if vs_ahc is None else f'{vs_ahc:.2f}×'} | "
        f"{show(rss, 'peak_rss_kb')} | ≥ 1× curl, < 32 MiB | {'–' if met is None else ('yes' if met else '**no**')} |")
seq = median("asynchttp", "seq", "req_per_s")
for label, scenario, target in (("cache-hit req/s (fresh)", "cache-hit", 2.0), ("cache-revalidate req/s (304)", "cache-revalidate", None)):
    ours = median("asynchttp", scenario, "req_per_s")
    ratio = ours / seq if ours is not None and seq else None
    met = None if target is None or ratio is None else ratio >= target
    if met is False:
        missed.append(label)
    add(f"| {label} | {cell('asynchttp', scenario, 'req_per_s')} | – | {cell('urlsession', scenario, 'req_per_s')} | – | "
        f"{'–' if ratio is None else f'{ratio:.2f}× seq'} | – | {show(median('asynchttp', scenario, 'peak_rss_kb'), 'peak_rss_kb')} | "
        f"{'≥ 2× seq' if target else '–'} | {'–' if met is None else ('yes' if met else '**no**')} |")
add("")
add("Observing progress (a do-nothing `progressHandler` on every request against none; issue 15). One AsyncHTTP run per "
    "round and scenario switches the handler on and off — every 100 ms in `conc` (each request counts in the phase it "
    "started in), every request in `download` (256 MiB each) — and compares its two halves: their rates, and the process's "
    "CPU time (read at each switch) per request or per MB. A drift of the machine's speed then weighs on both halves alike. "
    "The figure is the mean over the rounds (equal runs, so the pooled estimate; a single run still spreads by about "
    "±1.5 points here, and the median of three throws away most of the data), with the range. `conc` also shows the "
    "median, within each run, of every watched phase's cost against the mean of the plain phases either side of it "
    "(`neighbours`, mean over the rounds; it cancels a drift that lasts three phases). Target: under 3 %, judged on the mean throughput cost:")
add("")
add("| scenario | rounds | throughput cost (range) | CPU cost (range) | neighbours: throughput, CPU (phases) | target | met? |")
add("|---|---:|---:|---:|---:|---:|:---:|")
for label, scenario in (("conc (32 tasks, 1 KiB GETs)", "conc-alternating-progress"), ("download (256 MiB bodies)", "download-alternating-progress")):
    throughput = values.get(("asynchttp", scenario, "throughput_cost_pct"), [])
    cpu = values.get(("asynchttp", scenario, "cpu_cost_pct"), [])
    neighbour_throughput = values.get(("asynchttp", scenario, "neighbour_throughput_cost_pct"), [])
    neighbour_cpu = values.get(("asynchttp", scenario, "neighbour_cpu_cost_pct"), [])
    neighbour_phases = values.get(("asynchttp", scenario, "neighbour_phases"), [])
    def shown(found):
        return f"{statistics.fmean(found):+.1f} % ({min(found):+.1f} to {max(found):+.1f})" if found else "–"
    neighbours = (f"{statistics.fmean(neighbour_throughput):+.1f} %, {statistics.fmean(neighbour_cpu):+.1f} % "
                  f"({int(sum(neighbour_phases))})") if neighbour_throughput else "–"
    met = statistics.fmean(throughput) < 3 if throughput else None
    if met is False:
        missed.append(f"progress overhead, {scenario.split('-')[0]}")
    add(f"| {label} | {len(throughput)} | {shown(throughput)} | {shown(cpu)} | {neighbours} | < 3 % | "
        f"{'–' if met is None else ('yes' if met else '**no**')} |")
add("")
add("Parser micro-benchmark (responses parsed per second, same corpus bytes, fed 16 KiB at a time):")
add("")
add("| corpus | AsyncHTTP | http-parser (C) | AsyncHTTP MB/s | http-parser MB/s | ratio | target | met? |")
add("|---|---:|---:|---:|---:|---:|---:|:---:|")
for name, label in (("parser-heads", "heads: 10 fields + 1 KiB body"), ("parser-chunked", "chunked: 8 chunks of 100–1,500 B")):
    ours, theirs = median("asynchttp", name, "responses_per_s"), median("http-parser", name, "responses_per_s")
    ratio = ours / theirs if ours is not None and theirs else None
    ran = any(run["scenario"] == name for run in runs)
    met = (ratio is not None and ratio >= 0.8) if ran else None
    if met is False:
        missed.append(label)
    add(f"| {label} | {show(ours, 'responses_per_s')} | {show(theirs, 'responses_per_s')} | "
        f"{show(median('asynchttp', name, 'mb_per_s'), 'mb_per_s')} | {show(median('http-parser', name, 'mb_per_s'), 'mb_per_s')} | "
        f"{'–' if ratio is None else f'{ratio:.2f}×'} | ≥ 0.8× | {'–' if met is None else ('yes' if met else '**no**')} |")
add("")
flagged = sorted(k for k, n in errors.items() if n) + sorted(k for k, n in failures.items() if n)
add("† some requests of these runs failed: " + (", ".join(f"{c} {s} ({errors.get((c, s), 0)} errors, "
    f"{failures.get((c, s), 0)} failed runs)" for c, s in sorted(set(flagged))) + "." if flagged else "none.")
     + " Failed runs are left out of the medians; the first error of each run is in `Benchmarks/.bench/stderr.log`.")
add("")
add("Targets missed in this run: " + ("; ".join(missed) if missed else "none") + ".")
add("")
add("## How it was measured")
add("")
add("- One nginx worker on 127.0.0.1 (generated config in `Benchmarks/.bench/nginx/nginx.conf`): access log off, "
    "`keepalive_requests 10000000`, `keepalive_timeout 65`, `sendfile on`, an ECDSA P-256 self-signed certificate "
    "with `ssl_session_cache off` and `ssl_session_tickets off` (every new TLS connection is a full handshake); "
    "static files of 1 KiB and 256 MiB (random bytes), a 16 MiB JSON served from its `.gz` with `gzip_static always`, "
    "and a `dav_methods PUT` location writing to a tmpfs directory.")
add("- Clients: `bench-asynchttp`, `bench-ahc`, `bench-urlsession` (release build), same command line, one JSON line per run, "
    "each client with its default configuration apart from the pool size and the trusted certificate "
    "(AsyncHTTP's default middleware, cookies and compression included; AHC with `httpVersion = .http1Only`). "
    "Each round runs every scenario for AsyncHTTP, AHC and URLSession in that order, then the C reference. "
    "URLSession on Linux cannot be told to trust a certificate, so its TLS runs see the benchmark certificate "
    "appended to the system bundle inside a private mount namespace (`unshare`); the machine's store is untouched.")
add(f"- Sizes: {env['SETTINGS']}.")
add("- `seq`, `tls-seq`, `conc`: one warm-up request per connection before the clock starts; `tls-new` and `memory` "
    "open a new connection per request (AsyncHTTP `persistentConnection = false`, AHC and URLSession "
    "`Connection: close`). `conc`: 32 tasks and a pool of 32 connections (wrk `-t2 -c32`); `conc256`: 256 tasks and a "
    "pool of 256 connections (wrk `-t1 -c256`; nginx `worker_connections 4096`, `worker_rlimit_nofile 8192`, "
    "and the script raises the clients' `ulimit -n` to at least 4096).")
add(f"- `hosts100`: {env['HOSTS_TASKS']} tasks taking turns over {env['HOSTS']} name-based virtual hosts "
    f"(`h000.{env['HOSTS_DOMAIN']}` … on the HTTP port, an nginx `server` block each, the only ones serving "
    "`/hosts/`), the n-th request of the run going to host n mod "
    f"{env['HOSTS']}; each host is its own pool key with at most {env['HOSTS_POOL']} connections "
    "(`maxConnectionsPerHost`, AHC's `concurrentHTTP1ConnectionsPerHostSoftLimit`, `httpMaximumConnectionsPerHost`); "
    "two requests per host before the clock starts. Every client resolves the names with `getaddrinfo` (AsyncHTTP's "
    "resolver, NIO's under AHC, libcurl's under URLSession) from a private `/etc/hosts` with one line per host on "
    "127.0.0.1, bind-mounted in a mount namespace (`unshare`); the machine's file is untouched. The C reference: "
    "wrk `-t2 -c32` to 127.0.0.1 with `Benchmarks/tools/wrk-hosts.lua`, each request naming the next host in its "
    "`Host` field, so nginx does the same work; wrk shares its 32 connections among all the hosts (no pool per "
    "host) and resolves no names.")
add(f"- `cold`: a fresh process fetching the 1 KiB file over https, from process start to exit: `ahttp` (the CLI, "
    "`scripts/build-ahttp.sh`: the Swift runtime linked in, no exported symbols, no mangled-name metadata accessors, as a Swift tool is "
    "shipped to machines without the toolchain) against `curl`, both `-s -o /dev/null "
    "--cacert cert.pem`, alternating, the order swapped every round, after one untimed run each "
    "(`tools/cold-start.py`: `posix_spawn` to `wait4`; median and p90 wall time, median user + system CPU time). "
    "Every cold start includes the TLS handshake (full: the server resumes nothing).")
add("- `download`: bodies streamed and discarded. `gzip`: MB/s of *decompressed* bytes, each client decoding "
    "in its own way: AsyncHTTP's built-in compression middleware (on by default), AHC's "
    "`decompression: .enabled(limit: .none)`, URLSession and `curl --compressed` by themselves. "
    "`upload`: a 64 MiB streamed PUT with `Content-Length` (64 KiB chunks for AsyncHTTP and AHC; URLSession's `uploadTask(with:from:)` "
    "reads it from a `Data`, as its streamed `InputStream` path would send `Transfer-Encoding: chunked`).")
add("- Files and cache: `upload-file` PUTs the 256 MiB file from disk (AsyncHTTP `.file(path)`, AHC NIOFileSystem's "
    "`readChunks`, URLSession `uploadTask(with:fromFile:)`, `curl -T`); `upload-multipart` sends it as the one part of a "
    "`multipart/form-data` PUT (AsyncHTTP `MultipartForm.appendFile`, AHC and URLSession with the part's head and tail "
    "written by hand — URLSession's body prepared in a file before timing —, `curl -X PUT -F`); `download-file` writes "
    "it to tmpfs (AsyncHTTP `download(_:to:)`, AHC `FileDownloadDelegate`, URLSession `downloadTask` moved into place, "
    "`curl -o`). `cache-hit` and `cache-revalidate` GET a 1 KiB file served `max-age=3600` or `no-cache` + ETag through "
    "AsyncHTTP's `HTTPCache` (on tmpfs) and URLSession's `URLCache`; AHC and curl have no cache.")
add("- Peak RSS: `getrusage` `ru_maxrss` at the end of each run; it counts the shared libraries' resident pages "
    "(libswiftCore alone is about 5 MiB), so the anonymous RSS (`RssAnon` in `/proc/self/status`, the heap, stacks "
    "and buffers the client dirtied, sampled before shutdown) is shown too. RSS growth: `/proc/self/statm` "
    "resident pages after the last new TLS connection minus after the 100th.")
add("- MB/s are 10^6 bytes per second. curl runs one process per transfer and reports the sum of `time_total`; "
    "wrk runs for the same duration as the timed scenarios.")
add("- Parser: `bench-parser` drives the internal `HTTP1ResponseParser` through `@_spi(Benchmarks) ParserBenchmark`, "
    "building each head's `HTTPFields`; `parser-c/bench_http_parser.c` runs Debian's libhttp-parser (nodejs "
    "http-parser) with callbacks that only count. Both read the corpus files written by `bench-parser --write-corpus`.")
add("")
add("## Machine")
add("")
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
os_name = next((l.split("=", 1)[1].strip().strip('"') for l in open("/etc/os-release") if l.startswith("PRETTY_NAME")), "?")
ahc_version = "?"
try:
    resolved = json.load(open(os.path.join(env["ROOT"], "Benchmarks", "Package.resolved")))
    for pin in resolved.get("pins", []):
        if pin.get("identity") == "async-http-client":
            ahc_version = pin["state"].get("version", "?")
except Exception:
    pass
memory_gib = round(int(next(l.split()[1] for l in open("/proc/meminfo") if l.startswith("MemTotal"))) / 1048576)
add(f"- CPUs (`nproc`): {sh('nproc')}; CPU: {cpu}; memory: {memory_gib} GiB")
add(f"- Kernel: {sh('uname -sr')}; OS: {os_name}")
add(f"- Swift: {sh('swift --version 2>&1 | head -1')}")
add(f"- nginx: {sh('nginx -v 2>&1')}; OpenSSL: {sh('openssl version')}")
add(f"- curl: {sh('curl --version | head -1')}")
parser_version = sh("dpkg-query -W -f='${Version}' libhttp-parser-dev 2>/dev/null")
add(f"- wrk: {sh('wrk -v 2>&1 | head -1')}; http-parser: {parser_version}")
add(f"- async-http-client: {ahc_version}; URLSession: swift-corelibs-foundation of the Swift toolchain above")
add("")
add("## Commands")
add("")
add("```")
add("Benchmarks/run.sh        # the one command; QUICK=1 for a smoke run, ROUNDS=n to change the rounds")
seen = []
for line in open(env["COMMANDS"]):
    line = line.strip().replace(env["BENCH"], "$BENCH").replace(env["BIN"], "$BIN").replace(env["ROOT"] + "/", "")
    if line and line not in seen:
        seen.append(line)
lines.extend(seen)
add("```")
add("")
add("(`$BIN` is `swift build -c release --package-path Benchmarks --show-bin-path`, `$BENCH` is `Benchmarks/.bench`.)")
add("")
add("## Every run")
add("")
add("| client | scenario | req/s | MB/s | peak RSS | errors |")
add("|---|---|---|---|---|---|")
for run in runs:
    if run.get("failed"):
        add(f"| {run['client']} | {run['scenario']} | failed | | | |")
        continue
    rate = run.get("req_per_s", run.get("responses_per_s"))
    rate_text = "" if rate is None else f"{float(rate):,.0f}"
    mb_text = "" if run.get("mb_per_s") is None else f"{float(run['mb_per_s']):,.1f}"
    rss_text = "" if run.get("peak_rss_kb") is None else show(float(run["peak_rss_kb"]), "peak_rss_kb")
    add(f"| {run['client']} | {run['scenario']} | {rate_text} | {mb_text} | {rss_text} | {run.get('errors', '')} |")
open(out_path, "w").write("\n".join(lines) + "\n")
PY
}

main() {
    install_missing
    # conc256 holds 256 sockets in one client (and as many in nginx), hosts100 up to 400: a soft limit of 1024
    # would do, but raise a low one to 4096 (the hard limit permitting) so that no run is short of descriptors.
    local limit; limit=$(ulimit -n)
    if [[ $limit != unlimited ]] && ((limit < 4096)); then
        ulimit -n 4096 2>/dev/null || ((limit >= 1024)) || die "ulimit -n is $limit; conc256 needs about 600"
    fi
    mkdir -p "$BENCH/bin"
    generate
    build
    PARSER_RESPONSES=$("$BIN/bench-parser" --write-corpus "$BENCH/parser")
    : >"$RESULTS"; : >"$COMMANDS"; : >"$BENCH/stderr.log"
    trap cleanup EXIT
    setup_urlsession_trust
    setup_virtual_hosts
    start_nginx
    if [[ ${SERVE:-0} == 1 ]]; then
        log "serving until interrupted (SERVE=1)"
        wait "$NGINX_PID" || true
        return
    fi
    local started=$SECONDS round scenario client
    for ((round = 1; round <= ROUNDS; round++)); do
        for scenario in $ALL_SCENARIOS; do
            [[ " $SCENARIOS " == *" $scenario "* ]] || continue
            log "round $round/$ROUNDS: $scenario"
            [[ $scenario == cold ]] && { run_cold; continue; }
            [[ $scenario == progress ]] && { run_progress; continue; }
            for client in $(clients_for "$scenario"); do
                run_client "$client" "$scenario"
            done
            # The opt-in `HTTPClient.threadScheduling = .batch`, beside the default (an info line in the report).
            [[ $scenario == conc ]] && record asynchttp-batch conc "$BIN/bench-asynchttp" --scenario conc \
                --url "http://127.0.0.1:$HTTP_PORT" --concurrency 32 --cacert "$BENCH/cert.pem" \
                --seconds "$SECONDS_PER_RUN" --requests "$REQUEST_CAP" --batch-threads
            case $scenario in
                seq|conc|conc256|hosts100|tls-seq|tls-new) run_wrk "$scenario" ;;
                download|gzip|upload|upload-file|upload-multipart|download-file) run_curl "$scenario" ;;
            esac
        done
        if [[ " $SCENARIOS " == *" parser "* ]]; then
            log "round $round/$ROUNDS: parser"
            run_parser
        fi
    done
    log "runs took $((SECONDS - started)) s"
    echo "ROUNDS=$ROUNDS QUICK=$QUICK RUN_SECONDS=$((SECONDS - started)) RUN_DATE='$(date -u '+%Y-%m-%d %H:%M')'" >"$BENCH/last-run.env"
    report
}

# Writes the report from the last run's results (REPORT_ONLY=1 re-renders it without running anything).
report() {
    local output=$ROOT/docs/benchmarks.md run_seconds
    # shellcheck disable=SC1091
    source "$BENCH/last-run.env"
    run_seconds=$RUN_SECONDS
    [[ $QUICK == 1 ]] && output=$BENCH/benchmarks-quick.md
    [[ $SCENARIOS != "$ALL_SCENARIOS parser" ]] && output=$BENCH/benchmarks-partial.md
    [[ -n ${BIN:-} ]] || BIN=$(cd "$ROOT" && swift build -c release --package-path Benchmarks --show-bin-path)
    mkdir -p "$(dirname "$output")"
    write_report "$output" "$run_seconds"
    log "wrote $output"
}

if [[ ${REPORT_ONLY:-0} == 1 ]]; then
    report
else
    main "$@"
fi
