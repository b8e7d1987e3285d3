#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# cache-proxy side by side with Varnish and nginx proxy_cache, on loopback, one core each.
#
#   scripts/proxy-bench.sh [--quick] [--rounds N] [--duration SECONDS] [--no-build]
#                          [--workloads LIST]
#
# Installs what is missing (nginx-light, varnish, wrk, h2load from Debian packages), builds
# cache-proxy in release mode, starts an nginx origin, Varnish, nginx proxy_cache and cache-proxy
# on 127.0.0.1, pins every proxy to CPU 0 and wrk (and the origin) to CPU 1, warms each proxy,
# then runs the rounds in alternation (the order rotates each round) with `wrk -t1 -c50 --latency`
# (1k-hit-h2: `h2load -c10 -m10`, h2load from nghttp2-client). Prints
# req/s and p50/p99 latency per proxy (medians over the rounds) and the ratios to Varnish and
# nginx, then cache-proxy's resident memory idle, after a fill of twice as many distinct URLs as
# the budget holds, and every 250,000 requests of a 1,000,000-request Zipf run over 100,000 URLs. Everything it starts it stops, by pid, on exit.
#
# Workloads:
#   1k-hit     a 1 KB JSON, Cache-Control: max-age=3600, every request a hit
#   64k-hit    a 64 KB JSON, likewise
#   1k-vary    a 1 KB JSON with Vary: Accept-Encoding; requests rotate three spellings of one
#              Accept-Encoding value ("gzip, br", "br, gzip", "GZIP,BR")
#   zipf-mix   Zipf (s = 0.8) over 100,000 URLs of 1 KB; each cache is sized to hold about 10%
#              of them, so about 40% of the requests miss
#   1k-hit-tls 1k-hit over TLS 1.3 with keep-alive (wrk over https), nginx proxy_cache (`listen
#              ssl`) against cache-proxy with --tls-certificate/--tls-key, the same P-256
#              certificate made by openssl; Varnish has no TLS and sits this one out
#   1k-hit-h2  1k-hit over HTTP/2 on TLS 1.3 (ALPN h2 only), `h2load -c10 -m10`: 10 connections of
#              10 concurrent streams each, against nginx proxy_cache (a TLS listener of its own
#              with http2) and 1k-hit-tls's cache-proxy; a proxy that does not select h2 by ALPN,
#              or answers a request with an error, fails the run (shown in the table; exit 1)
#   100m-miss  a 100 MB file, each request a new URL (a miss) fetched by curl: time to its first
#              byte through each proxy against the origin's own, and cache-proxy's resident
#              memory while it passes (caches of 64 MiB, so no proxy stores it); curl runs at
#              real-time priority (`chrt -f 50`, where it may): the origin shares curl's CPU and,
#              while it sends the body to a proxy as fast as it is read, would otherwise hold the
#              CPU for a millisecond or more after the proxy's first byte arrived (it does not when
#              it sends to curl itself: curl's full socket stops it), so that curl's wake-up, not
#              the proxy, would be timed; then 2,000 misses of 1 KB in a row on one keep-alive
#              connection, and cache-proxy's context switches (all its threads) and CPU time per miss
#
# CACHE_PROXY_ARGS adds options to cache-proxy's command line; CACHE_PROXY_BIN runs that binary
# instead of building one (to compare two builds, run the script once with each).
# --quick: one round of 2 s, the 1k-hit workload only, no memory run (a smoke test).
# --workloads LIST: only these, comma-separated (e.g. 1k-hit,64k-hit); the memory run comes with
# zipf-mix.
# --memory-budgets LIST: the memory run once per cache budget in bytes, comma-separated (default:
# zipf-mix's 28000000), each over as many URLs as fill it at the same ratio (100,000 URLs for 28 MB);
# `none`: no memory run (zipf-mix's side-by-side rounds only).
set -euo pipefail

ROUNDS=3
DURATION=8
QUICK=0
BUILD=1
SELECTED=""
MEMORY_BUDGETS=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) QUICK=1; ROUNDS=1; DURATION=2 ;;
        --rounds) ROUNDS="$2"; shift ;;
        --duration) DURATION="$2"; shift ;;
        --no-build) BUILD=0 ;;
        --workloads) SELECTED="$2"; shift ;;
        --memory-budgets) MEMORY_BUDGETS="$2"; shift ;;
        -h|--help) sed -n '3,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
        *) echo "unknown option: $1" >&2; exit 2 ;;
    esac
    shift
done

cd "$(dirname "$0")/.."
REPO=$(pwd)
PROXY_CPU=0
LOAD_CPU=1
[ "$(nproc)" -ge 2 ] || { PROXY_CPU=0; LOAD_CPU=0; echo "warning: one CPU only; proxies and wrk share it" >&2; }

ORIGIN_PORT=18180
VARNISH_PORT=18181
NGINX_PORT=18182
PROXY_PORT=18183
NGINX_TLS_PORT=18184
PROXY_TLS_PORT=18185
NGINX_H2_PORT=18186
URLS=100000
CACHE_PROXY_ARGS=${CACHE_PROXY_ARGS:-}
MIX_ENTRIES=$((URLS / 10))

# --- what is missing ---------------------------------------------------------------------------
need=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
command -v varnishd >/dev/null 2>&1 || [ -x /usr/sbin/varnishd ] || need+=(varnish)
command -v wrk >/dev/null 2>&1 || need+=(wrk)
command -v h2load >/dev/null 2>&1 || need+=(nghttp2-client)
command -v taskset >/dev/null 2>&1 || need+=(util-linux)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
if [ ${#need[@]} -gt 0 ]; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    echo "==> installing ${need[*]} with apt-get"
    $SUDO apt-get install -y -q "${need[@]}" >/dev/null 2>&1 ||
        { $SUDO apt-get update -q >/dev/null && $SUDO apt-get install -y -q "${need[@]}"; }
fi
export PATH="$PATH:/usr/sbin:/sbin"

# nginx's HTTP/2 on a TLS listener (1k-hit-h2): `listen ... ssl http2` before 1.25.1, whose
# `http2 on;` replaces it (the listen parameter is deprecated there).
NGINX_VERSION=$(nginx -v 2>&1 | sed -n 's|.*nginx/\([0-9][0-9.]*\).*|\1|p')
if [ "$(printf '%s\n' 1.25.1 "$NGINX_VERSION" | sort -V | head -n1)" = 1.25.1 ]; then
    NGINX_H2_LISTEN="listen 127.0.0.1:$NGINX_H2_PORT ssl; http2 on;"
else
    NGINX_H2_LISTEN="listen 127.0.0.1:$NGINX_H2_PORT ssl http2;"
fi

if [ -n "${CACHE_PROXY_BIN:-}" ]; then
    PROXY_BIN=$CACHE_PROXY_BIN
else
    if [ "$BUILD" -eq 1 ]; then
        make -s deps
        echo "==> building cache-proxy (release)"
        swift build -c release --enable-all-traits --product cache-proxy >/dev/null
    fi
    PROXY_BIN="$(swift build -c release --enable-all-traits --show-bin-path)/cache-proxy"
fi
[ -x "$PROXY_BIN" ] || { echo "error: $PROXY_BIN is missing (run without --no-build)" >&2; exit 1; }

WORK=$(mktemp -d /tmp/proxy-bench.XXXXXX)
chmod 755 "$WORK"
PIDS=()
stop_all() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
    done
    [ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"
}
trap stop_all EXIT

# The certificate every TLS listener presents (1k-hit-tls, 1k-hit-h2).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$WORK/tls.key" \
    -out "$WORK/tls.pem" -days 1 -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
    >/dev/null 2>&1

wait_for() { # url
    for _ in $(seq 100); do curl -kfs -o /dev/null "$1" && return 0; sleep 0.1; done
    echo "error: nothing answers at $1" >&2; exit 1
}

# --- the origin: nginx serving fixed files ----------------------------------------------------
mkdir -p "$WORK/origin/html" "$WORK/origin/logs" "$WORK/cache/logs" "$WORK/cache/store" "$WORK/varnish"
python3 - "$WORK/origin/html" <<'EOF'
import json, sys
root = sys.argv[1]
def blob(size):
    # Items until the next would pass the size, then a pad field to reach it exactly.
    items = []
    while len(json.dumps({"items": items + [item(len(items))], "pad": ""})) < size - 32:
        items.append(item(len(items)))
    bare = len(json.dumps({"items": items, "pad": ""}))
    return json.dumps({"items": items, "pad": "x" * (size - bare)})
def item(i):
    return {"id": i, "name": f"item-{i:05d}", "price": i * 1.25}
for name, size in (("1k.json", 1024), ("64k.json", 65536)):
    with open(f"{root}/{name}", "w") as f:
        f.write(blob(size))
with open(f"{root}/100m.bin", "wb") as f:
    chunk = bytes(range(256)) * 4096
    for _ in range(100 * 1000 * 1000 // len(chunk)):
        f.write(chunk)
    f.write(chunk[: 100 * 1000 * 1000 % len(chunk)])
EOF
cat >"$WORK/origin/nginx.conf" <<EOF
user root;
worker_processes 1;
pid $WORK/origin/nginx.pid;
error_log $WORK/origin/logs/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    default_type application/json;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:$ORIGIN_PORT;
        root $WORK/origin/html;
        location = /1k { try_files /1k.json =404; add_header Cache-Control "max-age=3600"; }
        location = /64k { try_files /64k.json =404; add_header Cache-Control "max-age=3600"; }
        location = /vary { try_files /1k.json =404; add_header Cache-Control "max-age=3600"; add_header Vary "Accept-Encoding"; }
        location /z/ { try_files /1k.json =404; add_header Cache-Control "max-age=3600"; }
        location /m/ { try_files /100m.bin =404; add_header Cache-Control "max-age=3600"; }
    }
}
EOF
taskset -c "$LOAD_CPU" nginx -p "$WORK/origin" -c "$WORK/origin/nginx.conf" -g "daemon off;" 2>>"$WORK/origin/logs/stderr" &
PIDS+=($!)
wait_for "http://127.0.0.1:$ORIGIN_PORT/1k"

# --- the proxies -------------------------------------------------------------------------------
start_proxies() { # memory budget in bytes for each proxy's cache
    local bytes=$1
    cat >"$WORK/cache/nginx.conf" <<EOF
user root;
worker_processes 1;
pid $WORK/cache/nginx.pid;
error_log $WORK/cache/logs/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 1000000;
    proxy_cache_path $WORK/cache/store/$bytes levels=1:2 keys_zone=bench:32m max_size=$bytes inactive=1h use_temp_path=off;
    upstream origin { server 127.0.0.1:$ORIGIN_PORT; keepalive 64; }
    server {
        listen 127.0.0.1:$NGINX_PORT;
        listen 127.0.0.1:$NGINX_TLS_PORT ssl;
        # HTTP/2 (and HTTP/1.1) by ALPN for 1k-hit-h2 on a port of its own; wrk offers no ALPN,
        # so 1k-hit-tls stays HTTP/1.1 whichever form enables h2.
        $NGINX_H2_LISTEN
        ssl_certificate $WORK/tls.pem;
        ssl_certificate_key $WORK/tls.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        location / {
            proxy_pass http://origin;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_cache bench;
        }
    }
}
EOF
    taskset -c "$PROXY_CPU" nginx -p "$WORK/cache" -c "$WORK/cache/nginx.conf" -g "daemon off;" \
        2>>"$WORK/cache/logs/stderr" &
    NGINX_PID=$!
    PIDS+=("$NGINX_PID")

    taskset -c "$PROXY_CPU" varnishd -F -a "127.0.0.1:$VARNISH_PORT" -b "127.0.0.1:$ORIGIN_PORT" \
        -n "$WORK/varnish" -s "malloc,$bytes" -p thread_pools=1 >"$WORK/varnish.log" 2>&1 &
    VARNISH_PID=$!
    PIDS+=("$VARNISH_PID")

    taskset -c "$PROXY_CPU" "$PROXY_BIN" --upstream "http://127.0.0.1:$ORIGIN_PORT" \
        --listen "127.0.0.1:$PROXY_PORT" --mode shared --memory-capacity "$bytes" \
        --log-level warning $CACHE_PROXY_ARGS >"$WORK/cache-proxy.log" 2>&1 &
    PROXY_PID=$!
    PIDS+=("$PROXY_PID")

    # cache-proxy's listener is plain or TLS: a second one, on the same CPU, for 1k-hit-tls and
    # 1k-hit-h2 (which needs it to select h2 by ALPN).
    PROXY_TLS_PID=""
    if [ "$TLS" -eq 1 ]; then
        taskset -c "$PROXY_CPU" "$PROXY_BIN" --upstream "http://127.0.0.1:$ORIGIN_PORT" \
            --listen "127.0.0.1:$PROXY_TLS_PORT" --mode shared --memory-capacity "$bytes" \
            --tls-certificate "$WORK/tls.pem" --tls-key "$WORK/tls.key" \
            --log-level warning $CACHE_PROXY_ARGS >"$WORK/cache-proxy-tls.log" 2>&1 &
        PROXY_TLS_PID=$!
        PIDS+=("$PROXY_TLS_PID")
    fi

    wait_for "http://127.0.0.1:$NGINX_PORT/1k"
    wait_for "http://127.0.0.1:$VARNISH_PORT/1k"
    wait_for "http://127.0.0.1:$PROXY_PORT/1k"
    if [ "$TLS" -eq 1 ]; then
        wait_for "https://127.0.0.1:$NGINX_TLS_PORT/1k"
        wait_for "https://127.0.0.1:$NGINX_H2_PORT/1k"
        wait_for "https://127.0.0.1:$PROXY_TLS_PORT/1k"
    fi
}

stop_proxies() {
    local pid
    for pid in "$NGINX_PID" "$VARNISH_PID" "$PROXY_PID" $PROXY_TLS_PID; do kill "$pid" 2>/dev/null || true; done
    for pid in "$NGINX_PID" "$VARNISH_PID" "$PROXY_PID" $PROXY_TLS_PID; do
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
    done
}

port_of() {
    case "$1" in
        varnish) echo "$VARNISH_PORT" ;;
        nginx) echo "$NGINX_PORT" ;;
        cache-proxy) echo "$PROXY_PORT" ;;
        nginx-tls) echo "$NGINX_TLS_PORT" ;;
        cache-proxy-tls) echo "$PROXY_TLS_PORT" ;;
        nginx-h2) echo "$NGINX_H2_PORT" ;;
        cache-proxy-h2) echo "$PROXY_TLS_PORT" ;;
    esac
}

# --- wrk scripts -------------------------------------------------------------------------------
cat >"$WORK/vary.lua" <<'EOF'
local spellings = { "gzip, br", "br, gzip", "GZIP,BR" }
local n = 0
request = function()
    n = n + 1
    return wrk.format("GET", "/vary", { ["Accept-Encoding"] = spellings[n % 3 + 1] })
end
EOF
zipf_lua() { # url count
    cat <<EOF
local urls, s = $1, 0.8
local cdf = {}
local total = 0
for k = 1, urls do total = total + k ^ -s; cdf[k] = total end
for k = 1, urls do cdf[k] = cdf[k] / total end
local seed = 1
init = function(args) math.randomseed(os.time() + seed) end
request = function()
    local u, lo, hi = math.random(), 1, urls
    while lo < hi do
        local mid = math.floor((lo + hi) / 2)
        if cdf[mid] < u then lo = mid + 1 else hi = mid end
    end
    return wrk.format("GET", "/z/" .. lo)
end
EOF
}
zipf_lua "$URLS" >"$WORK/zipf.lua"

fill_lua() { # URLs already requested, url count: each URL once, in order, after those
    cat <<EOF
local i, urls = $1, $2
request = function()
    i = i % urls + 1
    return wrk.format("GET", "/z/" .. i)
end
EOF
}

pid_of() {
    case "$1" in
        varnish) echo "$VARNISH_PID" ;;
        nginx) echo "$NGINX_PID" ;;
        cache-proxy) echo "$PROXY_PID" ;;
        nginx-tls) echo "$NGINX_PID" ;;
        cache-proxy-tls) echo "$PROXY_TLS_PID" ;;
        nginx-h2) echo "$NGINX_PID" ;;
        cache-proxy-h2) echo "$PROXY_TLS_PID" ;;
    esac
}

# CPU time (clock ticks, user + system) of a process and its children (nginx's worker,
# Varnish's cache process): the cost per request does not depend on what else runs.
cpu_ticks() { # pid
    local total=0 p
    for p in "$1" $(ps -o pid= --ppid "$1"); do
        total=$((total + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)))
    done
    echo "$total"
}
HZ=$(getconf CLK_TCK)

# wrk's summary as "req/s p50_ms p99_ms requests"
run_wrk() { # port seconds path-or-script
    local port=$1 seconds=$2 target=$3 out scheme=http
    if [ "$port" = "$NGINX_TLS_PORT" ] || [ "$port" = "$PROXY_TLS_PORT" ]; then scheme=https; fi
    if [[ "$target" == *.lua ]]; then
        out=$(taskset -c "$LOAD_CPU" wrk -t1 -c50 -d"${seconds}s" --latency -s "$target" "$scheme://127.0.0.1:$port/")
    else
        out=$(taskset -c "$LOAD_CPU" wrk -t1 -c50 -d"${seconds}s" --latency "$scheme://127.0.0.1:$port$target")
    fi
    if echo "$out" | grep -q "Non-2xx"; then echo "warning: non-2xx answers from port $port" >&2; fi
    echo "$out" | awk '
        function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
        /^ +50%/ { p50 = ms($2) } /^ +99%/ { p99 = ms($2) } /^Requests\/sec:/ { rps = $2 }
        / requests in / { n = $1 }
        END { printf "%s %s %s %s\n", rps, p50, p99, n }'
}

# h2load's summary, likewise, for the h2 proxies: 10 connections of 10 concurrent streams, h2 only
# (`--npn-list=h2`: h2load's default list ends in http/1.1, over which it would pipeline instead).
# The latencies come from its per-request log (microseconds to the end of each response). A proxy
# that selects no h2 by ALPN, an answer that is not 2xx, a failed, errored or timed-out request,
# or no request at all is an error: its reason on stdout, status 1.
run_h2load() { # port seconds path
    local port=$1 seconds=$2 target=$3 out log="$WORK/h2load.log" counts
    out=$(taskset -c "$LOAD_CPU" h2load -t1 -c10 -m10 -D "$seconds" --npn-list=h2 --log-file="$log" \
        "https://127.0.0.1:$port$target" 2>&1) || true
    if echo "$out" | grep -q "No protocol negotiated"; then
        rm -f "$log"
        echo "no h2: the server at https://127.0.0.1:$port selected no ALPN protocol (h2 offered alone)"
        return 1
    fi
    # "requests: T total, S started, D done, OK succeeded, F failed, E errored, O timeout" and
    # "status codes: A 2xx, B 3xx, C 4xx, D 5xx" as "T OK F E O not-2xx".
    counts=$(echo "$out" | awk '
        /^requests:/ { t = $2; ok = $8; f = $10; e = $12; o = $14; seen = 1 }
        /^status codes:/ { other = $5 + $7 + $9 }
        END { if (seen) printf "%d %d %d %d %d %d\n", t, ok, f, e, o, other }')
    if [ -z "$counts" ]; then
        rm -f "$log"
        echo "h2load failed against https://127.0.0.1:$port$target: $(echo "$out" | tail -n1)"
        return 1
    fi
    local total ok failed errored timeouts other
    read -r total ok failed errored timeouts other <<<"$counts"
    if [ "$failed" -gt 0 ] || [ "$errored" -gt 0 ] || [ "$timeouts" -gt 0 ] || [ "$other" -gt 0 ] || [ "$ok" -eq 0 ]; then
        rm -f "$log"
        echo "h2load against https://127.0.0.1:$port$target: $total requests, $ok succeeded, $failed failed," \
            "$errored errored, $timeouts timed out, $other not 2xx"
        return 1
    fi
    if ! echo "$out" | grep -q "^Application protocol: h2$"; then
        rm -f "$log"
        echo "no h2: h2load does not report \"Application protocol: h2\" from https://127.0.0.1:$port"
        return 1
    fi
    # req/s over the duration, p50 and p99 of the 2xx answers' times (ms), requests that succeeded.
    echo "$out" | awk '/^finished in/ { printf "%s ", $4 }'
    awk -F '\t' '$2 >= 200 && $2 < 300 { print $3 / 1000 }' "$log" | sort -g | awk -v ok="$ok" '
        { v[NR] = $1 }
        END { a = int(NR * 0.50 + 0.5); b = int(NR * 0.99 + 0.5); if (a < 1) a = 1; if (b < 1) b = 1
              printf "%s %s %s\n", v[a], v[b], ok }'
    rm -f "$log"
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

PROXIES=(varnish nginx cache-proxy)
RESULTS="$WORK/results"
: >"$RESULTS"
# "workload proxy reason": a run that failed (1k-hit-h2); the proxy sits out the rest of it.
FAILURES="$WORK/failures"
: >"$FAILURES"

# wrk, or h2load for the h2 proxies (*-h2); with h2load a failed run is a line in $FAILURES.
run_load() { # name proxy seconds target
    local name=$1 p=$2 seconds=$3 target=$4 result
    case "$p" in
        *-h2)
            if ! result=$(run_h2load "$(port_of "$p")" "$seconds" "$target"); then
                echo "error: $name, $p: $result" >&2
                echo "$name $p $result" >>"$FAILURES"
                return 1
            fi
            echo "$result"
            ;;
        *) run_wrk "$(port_of "$p")" "$seconds" "$target" ;;
    esac
}
failed() { awk -v w="$1" -v p="$2" '$1 == w && $2 == p { found = 1 } END { exit !found }' "$FAILURES"; } # workload proxy

run_workload() { # name target [proxies...] (default: PROXIES)
    local name=$1 target=$2 round i p before after result
    shift 2
    local proxies=("${PROXIES[@]}")
    [ $# -eq 0 ] || proxies=("$@")
    local count=${#proxies[@]}
    for p in "${proxies[@]}"; do
        run_load "$name" "$p" 2 "$target" >/dev/null || true # warm-up: fill the cache, open the connections
    done
    for round in $(seq "$ROUNDS"); do
        for i in $(seq 0 $((count - 1))); do
            p=${proxies[$(((i + round - 1) % count))]}
            ! failed "$name" "$p" || continue
            before=$(cpu_ticks "$(pid_of "$p")")
            result=$(run_load "$name" "$p" "$DURATION" "$target") || continue
            after=$(cpu_ticks "$(pid_of "$p")")
            echo "$name $p $result $((after - before))" >>"$RESULTS"
        done
    done
}

echo "==> load before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "==> proxies on CPU $PROXY_CPU, wrk -t1 -c50 (h2load -t1 -c10 -m10) on CPU $LOAD_CPU, $ROUNDS round(s) of ${DURATION}s"
HIT_BYTES=$((256 << 20))
if [ -z "$SELECTED" ]; then
    SELECTED=1k-hit
    [ "$QUICK" -eq 1 ] || SELECTED=1k-hit,64k-hit,1k-vary,1k-hit-tls,1k-hit-h2,zipf-mix,100m-miss
fi
selected() { [[ ",$SELECTED," == *",$1,"* ]]; }
for w in $(echo "$SELECTED" | tr ',' ' '); do
    case "$w" in
        1k-hit | 64k-hit | 1k-vary | 1k-hit-tls | 1k-hit-h2 | zipf-mix | 100m-miss) ;;
        *) echo "error: unknown workload $w (1k-hit, 64k-hit, 1k-vary, 1k-hit-tls, 1k-hit-h2, zipf-mix, 100m-miss)" >&2; exit 2 ;;
    esac
done
WORKLOADS=()
selected 1k-hit && WORKLOADS+=("1k-hit /1k")
selected 64k-hit && WORKLOADS+=("64k-hit /64k")
selected 1k-vary && WORKLOADS+=("1k-vary $WORK/vary.lua")
TLS=0
if [ ${#WORKLOADS[@]} -gt 0 ] || selected 1k-hit-tls || selected 1k-hit-h2; then
    if selected 1k-hit-tls || selected 1k-hit-h2; then TLS=1; fi
    start_proxies "$HIT_BYTES"
    for w in "${WORKLOADS[@]}"; do
        set -- $w
        echo "==> $1"
        run_workload "$1" "$2"
    done
    if selected 1k-hit-tls; then
        echo "==> 1k-hit-tls"
        run_workload 1k-hit-tls /1k nginx-tls cache-proxy-tls
    fi
    if selected 1k-hit-h2; then
        echo "==> 1k-hit-h2 (h2load -c10 -m10, h2 by ALPN over TLS; cache-proxy at https://127.0.0.1:$PROXY_TLS_PORT)"
        run_workload 1k-hit-h2 /1k nginx-h2 cache-proxy-h2
    fi
    stop_proxies
    TLS=0
fi

if selected zipf-mix; then
    # About 10% of the URLs fit: each entry counts its body, head and bookkeeping, ~2.8 KB.
    MIX_BYTES=$((MIX_ENTRIES * 2800))
    echo "==> zipf-mix ($URLS URLs, caches of $MIX_BYTES bytes)"
    start_proxies "$MIX_BYTES"
    run_workload zipf-mix "$WORK/zipf.lua"
    stop_proxies
fi

echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
printf '| %-9s | %-15s | %9s | %8s | %8s | %9s | %9s | %11s |\n' workload proxy "req/s" "p50 ms" "p99 ms" "x Varnish" "x nginx" "CPU us/req"
printf '| %-9s | %-15s | %9s | %8s | %8s | %9s | %9s | %11s |\n' --- --- ---: ---: ---: ---: ---: ---:
# The workloads in the order they ran, with those whose every run failed.
# shellcheck disable=SC2013 # one word a line
for w in $(awk '!seen[$1]++ { print $1 }' "$RESULTS" "$FAILURES"); do
    declare -A rps=()
    listed=("${PROXIES[@]}")
    [ "$w" != 1k-hit-tls ] || listed=(nginx-tls cache-proxy-tls)
    [ "$w" != 1k-hit-h2 ] || listed=(nginx-h2 cache-proxy-h2)
    for p in "${listed[@]}"; do
        rps[$p]=$(awk -v w="$w" -v p="$p" '$1 == w && $2 == p { print $3 }' "$RESULTS" | median)
    done
    # Over TLS the references are nginx with TLS (over h2, with h2); Varnish has none.
    rps[varnish]=${rps[varnish]:-0}
    rps[nginx]=${rps[nginx]:-${rps[nginx-tls]:-${rps[nginx-h2]:-}}}
    for p in "${listed[@]}"; do
        if failed "$w" "$p"; then
            printf '| %-9s | %-15s | failed: %s |\n' "$w" "$p" \
                "$(awk -v w="$w" -v p="$p" '$1 == w && $2 == p { $1 = $2 = ""; sub(/^ +/, ""); print; exit }' "$FAILURES")"
            continue
        fi
        p50=$(awk -v w="$w" -v p="$p" '$1 == w && $2 == p { print $4 }' "$RESULTS" | median)
        p99=$(awk -v w="$w" -v p="$p" '$1 == w && $2 == p { print $5 }' "$RESULTS" | median)
        cpu=$(awk -v w="$w" -v p="$p" -v hz="$HZ" '$1 == w && $2 == p && $6 > 0 { print $7 / hz * 1e6 / $6 }' "$RESULTS" | median)
        awk -v w="$w" -v p="$p" -v r="${rps[$p]}" -v v="${rps[varnish]}" -v n="${rps[nginx]}" -v a="$p50" -v b="$p99" -v c="$cpu" \
            'BEGIN { printf "| %-9s | %-15s | %9.0f | %8.3f | %8.3f | %9s | %9s | %11.1f |\n", w, p, r, a, b, (v > 0 ? sprintf("%.2fx", r / v) : "-"), (n > 0 ? sprintf("%.2fx", r / n) : "-"), c }'
    done
    unset rps
done

if selected 100m-miss; then
    MISS_BYTES=$((64 << 20))
    echo
    echo "==> 100m-miss: a 100 MB miss, $ROUNDS round(s), caches of $MISS_BYTES bytes (curl on CPU $LOAD_CPU)"
    start_proxies "$MISS_BYTES"
    # Real-time priority for the timing client where this user may set it (see 100m-miss above).
    FIRST_BYTE_PRIORITY=""
    if chrt -f 50 true 2>/dev/null; then FIRST_BYTE_PRIORITY="chrt -f 50"; else
        echo "note: curl runs at normal priority (chrt -f refused): its first byte includes waiting for its CPU"
    fi
    rss() { awk '{ printf "%.1f", $2 * 4096 / 1048576 }' /proc/"$PROXY_PID"/statm; }
    IDLE_RSS=$(rss)
    : >"$WORK/miss"
    for round in $(seq "$ROUNDS"); do
        for p in origin "${PROXIES[@]}"; do
            port=$ORIGIN_PORT
            [ "$p" = origin ] || port=$(port_of "$p")
            peak_file="$WORK/peak"
            echo 0 >"$peak_file"
            if [ "$p" = cache-proxy ]; then
                ( peak=0; while :; do r=$(awk '{ print $2 }' /proc/"$PROXY_PID"/statm); [ "$r" -gt "$peak" ] && { peak=$r; echo "$peak" >"$peak_file"; }; sleep 0.01; done ) &
                SAMPLER=$!
            fi
            # First byte and whole transfer, in seconds, of a URL no cache has seen.
            # A transfer cut short (curl fails) still reports its times and the bytes it got.
            t=$($FIRST_BYTE_PRIORITY taskset -c "$LOAD_CPU" curl -s -o /dev/null -w '%{time_starttransfer} %{time_total} %{size_download}' \
                "http://127.0.0.1:$port/m/$p-$round-$RANDOM" || true)
            if [ "$p" = cache-proxy ]; then kill "$SAMPLER" 2>/dev/null; wait "$SAMPLER" 2>/dev/null || true; fi
            echo "$p $t $(cat "$peak_file")" >>"$WORK/miss"
        done
    done
    # How often a miss puts cache-proxy's threads to sleep or takes their CPU away: 2,000 misses
    # of 1 KB in a row on one keep-alive connection (one curl, URLs no cache has seen), and the
    # voluntary and involuntary context switches of all its threads, and its CPU time, per miss.
    switches() {
        awk '/^voluntary_ctxt_switches/ { v += $2 } /^nonvoluntary_ctxt_switches/ { n += $2 } END { print v, n }' \
            /proc/"$PROXY_PID"/task/*/status
    }
    cpu_ticks() { awk '{ print $14 + $15 }' /proc/"$PROXY_PID"/stat; }
    MISSES=2000
    seq "$MISSES" | sed "s|^|url = http://127.0.0.1:$(port_of cache-proxy)/z/switch-$RANDOM-|" >"$WORK/switch-urls"
    read -r v0 n0 <<<"$(switches)"; c0=$(cpu_ticks)
    taskset -c "$LOAD_CPU" curl -s -K "$WORK/switch-urls" >/dev/null || true
    read -r v1 n1 <<<"$(switches)"; c1=$(cpu_ticks)
    SWITCHES=$(awk -v v="$((v1 - v0))" -v n="$((n1 - n0))" -v c="$((c1 - c0))" -v m="$MISSES" -v hz="$(getconf CLK_TCK)" \
        'BEGIN { printf "%.2f voluntary + %.2f involuntary context switches, %.0f us CPU per miss", v / m, n / m, c * 1e6 / hz / m }')
    stop_proxies
    ORIGIN_TTFB=$(awk '$1 == "origin" { print $2 * 1000 }' "$WORK/miss" | median)
    printf '\n| proxy | TTFB ms | TTFB - origin ms | whole s | bytes | peak RSS MiB |\n| --- | ---: | ---: | ---: | ---: | ---: |\n'
    for p in origin "${PROXIES[@]}"; do
        ttfb=$(awk -v p="$p" '$1 == p { print $2 * 1000 }' "$WORK/miss" | median)
        whole=$(awk -v p="$p" '$1 == p { print $3 }' "$WORK/miss" | median)
        bytes=$(awk -v p="$p" '$1 == p { print $4 }' "$WORK/miss" | median)
        peak=$(awk -v p="$p" '$1 == p && $5 > 0 { print $5 * 4096 / 1048576 }' "$WORK/miss" | median)
        awk -v p="$p" -v t="$ttfb" -v o="$ORIGIN_TTFB" -v w="$whole" -v b="$bytes" -v r="${peak:-}" \
            'BEGIN { printf "| %s | %.3f | %+.3f | %.3f | %d | %s |\n", p, t, t - o, w, b, (r == "" ? "-" : sprintf("%.1f", r)) }'
    done
    echo "cache-proxy, $MISSES 1 KB misses in a row on one connection: $SWITCHES"
    echo "cache-proxy idle RSS: $IDLE_RSS MiB; budget: $((MISS_BYTES >> 20)) MiB; bound (2 x idle + budget): $(awk -v i="$IDLE_RSS" -v b="$((MISS_BYTES >> 20))" 'BEGIN { printf "%.1f", 2 * i + b }') MiB"
fi

if selected zipf-mix && [ "$MEMORY_BUDGETS" != none ]; then
    echo
    for budget in $(echo "${MEMORY_BUDGETS:-$MIX_BYTES}" | tr ',' ' '); do
        urls=$((URLS * budget / MIX_BYTES))
        zipf_lua "$urls" >"$WORK/zipf-memory.lua"
        echo
        echo "==> cache-proxy resident memory, 1,000,000 requests of zipf-mix over $urls URLs ($budget-byte cache)"
        start_proxies "$budget"
        printf '| requests | RSS MiB |\n| ---: | ---: |\n'
        printf '| %8s | %7.1f |\n' idle "$(awk '{ print $2 * 4096 / 1048576 }' /proc/"$PROXY_PID"/statm)"
        # First fill the cache: distinct URLs in order, twice as many as the budget holds, so that
        # every budget is measured full (1,000,000 Zipf requests alone leave a large one part empty).
        fill=$((2 * budget / 2800))
        filled=0
        while [ "$filled" -lt "$fill" ]; do
            fill_lua "$filled" "$urls" >"$WORK/fill.lua"
            out=$(taskset -c "$LOAD_CPU" wrk -t1 -c50 -d2s -s "$WORK/fill.lua" "http://127.0.0.1:$PROXY_PORT/")
            filled=$((filled + $(echo "$out" | awk '/requests in/ { print $1 }')))
        done
        printf '| %8s | %7.1f |\n' "fill $filled" "$(awk '{ print $2 * 4096 / 1048576 }' /proc/"$PROXY_PID"/statm)"
        total=0
        next=250000
        while [ "$total" -lt 1000000 ]; do
            out=$(taskset -c "$LOAD_CPU" wrk -t1 -c50 -d2s -s "$WORK/zipf-memory.lua" "http://127.0.0.1:$PROXY_PORT/")
            total=$((total + $(echo "$out" | awk '/requests in/ { print $1 }')))
            if [ "$total" -ge "$next" ]; then
                printf '| %8d | %7.1f |\n' "$total" "$(awk '{ print $2 * 4096 / 1048576 }' /proc/"$PROXY_PID"/statm)"
                next=$((next + 250000))
            fi
        done
        stop_proxies
    done
fi

if [ -s "$FAILURES" ]; then
    echo
    echo "error: $(wc -l <"$FAILURES") run(s) failed:" >&2
    sed 's/^/  /' "$FAILURES" >&2
    exit 1
fi
