#!/usr/bin/env bash
# Interop suite: runs the real retry-http binary against nginx and httpbin
# (under gunicorn), both started here on 127.0.0.1 only.
#
#   RETRY_HTTP=target/debug/retry-http bash interop/run.sh
#   bash interop/run.sh --servers-only   # start the servers, print URLs, wait
#
# Environment:
#   RETRY_HTTP      binary to test (default: target/debug/retry-http)
#   INTEROP_VENV    venv for httpbin + gunicorn (default: interop/.venv)
#   INTEROP_NO_INSTALL=1  never install anything; fail if something is missing
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
cd "$ROOT"

MODE="${1:-test}"
RETRY_HTTP="${RETRY_HTTP:-target/debug/retry-http}"
VENV="${INTEROP_VENV:-$HERE/.venv}"
REQS="$HERE/requirements.txt"
export PATH="$PATH:/usr/sbin:/sbin"

log() { printf 'interop: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# ---------------------------------------------------------------- install ---

APT_UPDATED=0
apt_install() {
    [[ "${INTEROP_NO_INSTALL:-0}" == 1 ]] && die "missing $*, and INTEROP_NO_INSTALL=1"
    command -v apt-get >/dev/null || die "need $* but apt-get is not available"
    export DEBIAN_FRONTEND=noninteractive
    if [[ $APT_UPDATED == 0 ]]; then
        log "apt-get update"
        apt-get update -qq >/dev/null
        APT_UPDATED=1
    fi
    log "apt-get install $*"
    apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

ensure_nginx() {
    command -v nginx >/dev/null && return 0
    apt_install nginx-light || apt_install nginx
    command -v nginx >/dev/null || die "nginx still not found after install"
}

ensure_venv() {
    local stamp="$VENV/.requirements.installed"
    if [[ -x "$VENV/bin/gunicorn" && -f "$stamp" ]] && cmp -s "$REQS" "$stamp"; then
        return 0
    fi
    [[ "${INTEROP_NO_INSTALL:-0}" == 1 ]] && die "venv $VENV is missing or stale, and INTEROP_NO_INSTALL=1"
    command -v python3 >/dev/null || apt_install python3
    if [[ ! -x "$VENV/bin/python" ]]; then
        log "creating venv $VENV"
        if ! python3 -m venv "$VENV" 2>/dev/null; then
            rm -rf "$VENV"
            apt_install python3-venv
            python3 -m venv "$VENV"
        fi
    fi
    log "pip install -r $REQS"
    "$VENV/bin/pip" install -q --disable-pip-version-check -r "$REQS"
    cp "$REQS" "$stamp"
}

command -v curl >/dev/null || apt_install curl ca-certificates
command -v timeout >/dev/null || die "timeout(1) not found (coreutils)"
ensure_nginx
ensure_venv
command -v redis-server >/dev/null || apt_install redis-server
command -v redis-cli >/dev/null || apt_install redis-tools

# ---------------------------------------------------------------- servers ---

WORK="$(mktemp -d /tmp/retry-http-interop.XXXXXX)"
NGINX_PID=""
GUNICORN_PID=""
REDIS_PID=""

stop_pid() {
    local pid="$1"
    [[ -n "$pid" ]] || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    for _ in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    stop_pid "$NGINX_PID"
    stop_pid "$GUNICORN_PID"
    stop_pid "$REDIS_PID"
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
    python3 - <<'PY'
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
PY
}

NGINX_PORT="$(free_port)"
HTTPBIN_PORT="$(free_port)"
while [[ "$HTTPBIN_PORT" == "$NGINX_PORT" ]]; do HTTPBIN_PORT="$(free_port)"; done
NG="http://127.0.0.1:$NGINX_PORT"
HB="http://127.0.0.1:$HTTPBIN_PORT"

# nginx prefix: workers run as an unprivileged user when we are root, so the
# prefix must be readable by them.
NGX="$WORK/nginx"
mkdir -p "$NGX/conf" "$NGX/logs" "$NGX/html/limited" "$NGX/tmp"
chmod 755 "$WORK" "$NGX" "$NGX/html" "$NGX/html/limited"
printf 'hello from the rate-limited location\n' > "$NGX/html/limited/hello.txt"
chmod 644 "$NGX/html/limited/hello.txt"

USER_LINE=""
[[ "$(id -u)" == 0 ]] && USER_LINE="user nobody nogroup;"

cat > "$NGX/conf/nginx.conf" <<EOF
$USER_LINE
worker_processes 1;
daemon off;
pid logs/nginx.pid;
error_log logs/error.log warn;

events { worker_connections 256; }

http {
    access_log logs/access.log;
    client_body_temp_path tmp/client_body;
    proxy_temp_path       tmp/proxy;
    fastcgi_temp_path     tmp/fastcgi;
    uwsgi_temp_path       tmp/uwsgi;
    scgi_temp_path        tmp/scgi;
    default_type text/plain;

    # 2 requests/s from loopback, no burst; the strict zone allows one request
    # every 10 s and is used only to test a saturated limiter.
    limit_req_zone \$binary_remote_addr zone=rl:1m rate=2r/s;
    limit_req_zone \$binary_remote_addr zone=strict:1m rate=6r/m;

    # Retry-After only on 429s (an empty value makes add_header send nothing).
    map \$status \$retry_after_429 {
        429     "1";
        default "";
    }

    server {
        listen 127.0.0.1:$NGINX_PORT;
        server_name localhost;
        root html;

        location /limited/ {
            limit_req zone=rl nodelay;
            limit_req_status 429;
            add_header Retry-After \$retry_after_429 always;
        }

        location /strict/ {
            limit_req zone=strict nodelay;
            limit_req_status 429;
            add_header Retry-After \$retry_after_429 always;
            alias html/limited/;
        }

        location = /always-503 {
            add_header Retry-After 1 always;
            return 503;
        }

        location /hb/ {
            proxy_pass http://127.0.0.1:$HTTPBIN_PORT/;
            proxy_set_header Host \$http_host;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
}
EOF

log "starting nginx on $NG"
nginx -p "$NGX" -c conf/nginx.conf -e logs/error.log -t -q || die "nginx config test failed"
nginx -p "$NGX" -c conf/nginx.conf -e logs/error.log >"$WORK/nginx.out" 2>&1 &
NGINX_PID=$!

log "starting httpbin (gunicorn) on $HB"
(cd "$WORK" && exec "$VENV/bin/gunicorn" --bind "127.0.0.1:$HTTPBIN_PORT" \
    --worker-class gthread --workers 2 --threads 16 \
    --graceful-timeout 2 --no-control-socket \
    httpbin:app >"$WORK/gunicorn.log" 2>&1) &
GUNICORN_PID=$!

wait_up() {
    local url="$1" pid="$2" name="$3"
    for _ in $(seq 1 100); do
        if ! kill -0 "$pid" 2>/dev/null; then
            tail -n 20 "$WORK/gunicorn.log" "$NGX/logs/error.log" "$WORK/nginx.out" >&2 2>/dev/null || true
            die "$name exited during start-up"
        fi
        curl -s -o /dev/null --max-time 1 "$url" && return 0
        sleep 0.1
    done
    tail -n 20 "$WORK/gunicorn.log" "$NGX/logs/error.log" "$WORK/nginx.out" >&2 2>/dev/null || true
    die "$name did not answer at $url within 10 s"
}
wait_up "$HB/get" "$GUNICORN_PID" httpbin
wait_up "$NG/hb/get" "$NGINX_PID" nginx

# Preflight: the servers behave as the checks assume (curl only; not counted).
curl -s -D - -o /dev/null --max-time 5 "$NG/always-503" | tr -d '\r' >"$WORK/pre.h"
grep -q '^HTTP/1.1 503' "$WORK/pre.h" && grep -qi '^Retry-After: 1$' "$WORK/pre.h" \
    || die "preflight: /always-503 did not answer 503 with Retry-After: 1"
for p in status/200 status/404 status/503; do
    want="${p#status/}"
    for base in "$HB" "$NG/hb"; do
        got="$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$base/$p")"
        [[ "$got" == "$want" ]] || die "preflight: $base/$p answered $got, want $want"
    done
done

if [[ "$MODE" == "--servers-only" ]]; then
    log "nginx:   $NG  (/limited/hello.txt, /strict/hello.txt, /always-503, /hb/...)"
    log "httpbin: $HB"
    log "work dir: $WORK; Ctrl-C to stop"
    wait "$NGINX_PID"
    exit 0
fi

# ----------------------------------------------------------------- checks ---

[[ "$RETRY_HTTP" == /* ]] || RETRY_HTTP="$ROOT/$RETRY_HTTP"
[[ -x "$RETRY_HTTP" ]] || die "binary not found: $RETRY_HTTP (run cargo build first)"
log "testing $RETRY_HTTP"

PASSED=0
FAILED=0
FAILED_NAMES=()
OUT="$WORK/out"
ERR="$WORK/err"
RC=0
MS=0

now_ms() { date +%s%3N; }

# run LIMIT_SECONDS STDIN_FILE ARGS...: runs the binary, sets RC and MS.
run() {
    local limit="$1" input="$2"
    shift 2
    local t0
    t0="$(now_ms)"
    timeout -k 2 "$limit" "$RETRY_HTTP" "$@" <"$input" >"$OUT" 2>"$ERR" && RC=0 || RC=$?
    MS=$(( $(now_ms) - t0 ))
}

CHECK=""
PROBLEMS=()
begin() { CHECK="$1"; PROBLEMS=(); }
expect() { # expect DESCRIPTION TEST...; a failing TEST's output is appended
    local what="$1" note
    shift
    if ! note="$("$@" 2>&1)"; then
        PROBLEMS+=("$what${note:+ ($note)}")
    fi
}
finish() {
    if [[ ${#PROBLEMS[@]} -eq 0 ]]; then
        PASSED=$((PASSED + 1))
        printf 'ok    %s (%d ms)\n' "$CHECK" "$MS"
    else
        FAILED=$((FAILED + 1))
        FAILED_NAMES+=("$CHECK")
        printf 'FAIL  %s (%d ms, exit %d)\n' "$CHECK" "$MS" "$RC"
        local p
        for p in "${PROBLEMS[@]}"; do printf '        - %s\n' "$p"; done
        printf '        stderr (last 8 lines):\n'
        tail -n 8 "$ERR" | sed 's/^/          | /'
        printf '        stdout (first 5 lines):\n'
        head -n 5 "$OUT" | sed 's/^/          | /'
    fi
}

rc_is() { [[ "$RC" == "$1" ]]; }
ms_ge() { (( MS >= $1 )); }
ms_lt() { (( MS < $1 )); }
attempt_lines() { grep -cE "attempt [0-9]+/${1:-[0-9]+}\b" "$ERR" || true; }
attempts_are() { [[ "$(attempt_lines "$1")" == "$2" ]]; }
out_equals_file() { cmp -s "$OUT" "$1"; }
out_contains() { grep -qF -- "$1" "$OUT"; }
json_field_equals_file() { # FIELD FILE: stdout is JSON whose FIELD equals FILE's text
    python3 - "$OUT" "$1" "$2" <<'PY'
import json, sys
out, field, path = sys.argv[1:]
with open(path) as f:
    want = f.read()
try:
    with open(out) as f:
        doc = json.load(f)
except (OSError, ValueError) as e:
    sys.exit("stdout is not JSON: %s" % e)
if not isinstance(doc, dict) or doc.get(field) != want:
    got = doc.get(field) if isinstance(doc, dict) else doc
    sys.exit("%s is %r, want %r" % (field, got, want))
PY
}
curl_code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$1"; }

NULL=/dev/null
STATIC="$NGX/html/limited/hello.txt"

# 1. Plain GET through the rate limiter.
begin "GET rate-limited static file: exit 0, body matches"
sleep 0.6   # let the limiter forget the readiness probe
run 20 $NULL "$NG/limited/hello.txt"
expect "exit code 0 (got $RC)" rc_is 0
expect "stdout equals the static file" out_equals_file "$STATIC"
finish

# 2. Burst of concurrent clients against 2 r/s: all succeed, some see 429.
begin "burst of 5 clients vs 2 r/s limiter: all exit 0, a 429 with Retry-After logged"
sleep 0.6
t0="$(now_ms)"
pids=()
for i in 1 2 3 4 5; do
    timeout -k 2 25 "$RETRY_HTTP" --attempts 8 --base 100ms --cap 2s --deadline 20s \
        "$NG/limited/hello.txt" <$NULL >"$WORK/burst.$i.out" 2>"$WORK/burst.$i.err" &
    pids+=("$!")
done
burst_rcs=()
for i in 0 1 2 3 4; do
    rc=0
    wait "${pids[$i]}" || rc=$?
    burst_rcs+=("$rc")
done
MS=$(( $(now_ms) - t0 ))
RC=0
for i in 0 1 2 3 4; do
    [[ "${burst_rcs[$i]}" == 0 ]] || { RC="${burst_rcs[$i]}"; PROBLEMS+=("client $((i + 1)) exit code ${burst_rcs[$i]}, want 0"); }
    cmp -s "$WORK/burst.$((i + 1)).out" "$STATIC" || PROBLEMS+=("client $((i + 1)) stdout differs from the static file")
done
cat "$WORK"/burst.*.err >"$ERR"
cat "$WORK"/burst.1.out >"$OUT"
grep -E '429' "$ERR" | grep -q 'Retry-After' || PROBLEMS+=("no stderr line with both 429 and Retry-After")
finish

# 3. Saturated limiter and a single attempt: attempts exhausted.
begin "saturated limiter with --attempts 1: exit 4"
codes=""
for _ in 1 2 3; do codes+="$(curl_code "$NG/strict/hello.txt") "; done
MS=0
[[ "$codes" == *429* ]] || PROBLEMS+=("limiter not saturated by curl (codes: $codes)")
run 10 $NULL --attempts 1 "$NG/strict/hello.txt"
expect "exit code 4 (got $RC)" rc_is 4
expect "one attempt line (got $(attempt_lines 1))" attempts_are 1 1
finish

# 4. Per-attempt timeout against a slow endpoint (early, so that httpbin's
#    sleeping threads are done before shutdown).
begin "httpbin /delay/3, --timeout 500ms --attempts 2: exit 4 in < 3 s"
run 15 $NULL --timeout 500ms --attempts 2 --base 10ms "$HB/delay/3"
expect "exit code 4 (got $RC)" rc_is 4
expect "took < 3000 ms" ms_lt 3000
finish

# 5. Always 503 with Retry-After: 1 and no spread: three attempts, two 1 s waits.
begin "always-503, --attempts 3, Retry-After 1: exit 4, 3 attempts, >= 2 s"
run 20 $NULL --attempts 3 --base 10ms --cap 50ms --retry-after-spread 0 "$NG/always-503"
expect "exit code 4 (got $RC)" rc_is 4
expect "3 lines matching 'attempt N/3' (got $(attempt_lines 3))" attempts_are 3 3
expect "took >= 2000 ms (Retry-After honoured)" ms_ge 2000
expect "took < 10000 ms" ms_lt 10000
finish

# 6. Always 503 under a deadline.
begin "always-503, --deadline 1500ms --attempts 10: exit 5 in < 5 s"
run 15 $NULL --deadline 1500ms --attempts 10 "$NG/always-503"
expect "exit code 5 (got $RC)" rc_is 5
expect "took < 5000 ms" ms_lt 5000
finish

# 7. Non-retryable status.
begin "httpbin /status/404: exit 3, one attempt"
run 15 $NULL "$HB/status/404"
expect "exit code 3 (got $RC)" rc_is 3
expect "exactly one attempt line (got $(attempt_lines))" attempts_are '[0-9]+' 1
finish

begin "httpbin via nginx /hb/status/404: exit 3"
run 15 $NULL "$NG/hb/status/404"
expect "exit code 3 (got $RC)" rc_is 3
finish

# 8. Retryable status without Retry-After.
begin "httpbin /status/503, --attempts 2 --base 10ms: exit 4"
run 15 $NULL --attempts 2 --base 10ms "$HB/status/503"
expect "exit code 4 (got $RC)" rc_is 4
expect "2 lines matching 'attempt N/2' (got $(attempt_lines 2))" attempts_are 2 2
finish

begin "httpbin via nginx /hb/status/503, --attempts 2 --base 10ms: exit 4"
run 15 $NULL --attempts 2 --base 10ms "$NG/hb/status/503"
expect "exit code 4 (got $RC)" rc_is 4
finish

# 9. Request bodies.
printf '{"name":"retry-http","n":42,"ok":true}' >"$WORK/body.json"
begin "POST /anything -d @file: exit 0, echoed data equals the file"
run 15 $NULL -H 'Content-Type: application/json' -d "@$WORK/body.json" POST "$HB/anything"
expect "exit code 0 (got $RC)" rc_is 0
expect "echoed \"data\" equals the file contents" json_field_equals_file data "$WORK/body.json"
finish

printf 'first line\nsecond line\n\tbinary-ish: \xc3\xa9\n' >"$WORK/body.txt"
begin "POST /anything --data-binary @- from stdin: exit 0, echoed data equals input"
run 15 "$WORK/body.txt" -H 'Content-Type: application/octet-stream' --data-binary @- POST "$HB/anything"
expect "exit code 0 (got $RC)" rc_is 0
expect "echoed \"data\" equals stdin" json_field_equals_file data "$WORK/body.txt"
finish

# 10. Custom header.
begin "httpbin /headers -H 'X-Test: yes': exit 0, header echoed"
run 15 $NULL -H 'X-Test: yes' "$HB/headers"
expect "exit code 0 (got $RC)" rc_is 0
expect "echoed headers contain X-Test: yes" out_contains '"X-Test": "yes"'
finish

# 11. Redirects.
begin "httpbin /redirect/2 -L: exit 0"
run 15 $NULL -L "$HB/redirect/2"
expect "exit code 0 (got $RC)" rc_is 0
expect "final body is the /get echo" out_contains '"url": "'
finish

# 12. Readiness against nginx: a static status document that a deploy rewrites. Each
#     rewrite replaces the file at once (a rename), as a deploy would, so nginx never
#     serves half of one; nginx's ETag is "<mtime hex>-<size hex>", so a fixed mtime
#     gives a version header known in advance.
READY_DIR="$NGX/html/ready"
mkdir -p "$READY_DIR"
chmod 755 "$READY_DIR"
put_doc() { # put_doc FILE TEXT [MTIME]: replaces FILE with TEXT, readable by nginx's workers
    local tmp="$1.tmp.$BASHPID"
    printf '%s' "$2" >"$tmp"
    chmod 644 "$tmp"
    [[ -z "${3:-}" ]] || touch -d "@$3" "$tmp"
    mv -f "$tmp" "$1"
}
err_contains() { grep -qF -- "$1" "$ERR"; }
unlimited_attempt_lines() { grep -qE 'attempt [0-9]+ GET ' "$ERR"; }

GREEN='{"status":"green","nodes":3}'
printf '%s' "$GREEN" >"$WORK/green.json"
put_doc "$READY_DIR/health.json" '{"status":"starting","nodes":1}'
begin "nginx status document turning green after 1 s: --until-json waits, exit 0, >= 1 s"
(sleep 1; put_doc "$READY_DIR/health.json" "$GREEN") &
flip=$!
run 20 $NULL --until-json /status=green --deadline 10s --base 100ms "$NG/ready/health.json"
wait "$flip" || true
expect "exit code 0 (got $RC)" rc_is 0
expect "stdout is the green document" out_equals_file "$WORK/green.json"
expect "took >= 900 ms (it waited for the rewrite)" ms_ge 900
expect "took < 10000 ms" ms_lt 10000
expect "the log says why: /status is \"starting\"" err_contains 'not ready: /status is "starting", want "green"'
expect "attempt lines without /N (unlimited under --deadline)" unlimited_attempt_lines
finish

NEW_DOC='{"version":"2.0.0"}'
printf '%s' "$NEW_DOC" >"$WORK/new.json"
NEW_MTIME=1767225600
NEW_ETAG="$(printf '"%x-%x"' "$NEW_MTIME" "${#NEW_DOC}")"
put_doc "$READY_DIR/version.json" '{"version":"1.9.0"}'
begin "nginx ETag of the new deploy after 500 ms: --until-header waits, exit 0"
(sleep 0.5; put_doc "$READY_DIR/version.json" "$NEW_DOC" "$NEW_MTIME") &
flip=$!
run 20 $NULL --until-header "ETag: ^$NEW_ETAG\$" --deadline 10s --base 100ms "$NG/ready/version.json"
wait "$flip" || true
expect "exit code 0 (got $RC)" rc_is 0
expect "stdout is the new document" out_equals_file "$WORK/new.json"
expect "took >= 400 ms" ms_ge 400
expect "the log says the old ETag did not match" err_contains 'not ready: etag is "'
finish

begin "nginx Content-Type: never ready is exit 8 after 2 attempts, a match is exit 0"
run 15 $NULL --until-header 'Content-Type: ^application/json' --attempts 2 --base 10ms "$NG/ready/version.json"
expect "exit code 8 (got $RC)" rc_is 8
expect "2 lines matching 'attempt N/2' (got $(attempt_lines 2))" attempts_are 2 2
expect "the log names the type found" err_contains 'not ready: content-type is "text/plain", not matching ^application/json'
expect "nothing on stdout" test ! -s "$OUT"
run 15 $NULL --until-header 'Content-Type: ^text/plain' --attempts 2 --base 10ms "$NG/ready/version.json"
expect "then exit code 0 (got $RC)" rc_is 0
expect "then one attempt (got $(attempt_lines 2))" attempts_are 2 1
finish

# 13. README recipe 10 with -C - against nginx, whose file changes between two runs: the
#     ETag kept beside the file goes out as If-Range too, so the changed file comes whole
#     (a 200) and replaces the old one instead of having its new tail appended; the next
#     run is a 304 that leaves it.
CSV_DIR="$NGX/html/csv"
mkdir -p "$CSV_DIR"
chmod 755 "$CSV_DIR"
seq 1 20000 | sed 's/^/v1,/' >"$WORK/v1.csv"
seq 1 30000 | sed 's/^/v2,/' >"$WORK/v2.csv"
put_doc "$CSV_DIR/data.csv" "$(cat "$WORK/v1.csv")" 1767225600
cp "$WORK/v1.csv" "$WORK/data.csv"
printf '"%x-%x"\n' 1767225600 "$(stat -c %s "$CSV_DIR/data.csv")" >"$WORK/data.etag"
put_doc "$CSV_DIR/data.csv" "$(cat "$WORK/v2.csv")" 1767312000
begin "nginx file changed since the last run: -C - with the kept ETag replaces it whole"
CSV_FLAGS=(--etag-compare "$WORK/data.etag" --etag-save "$WORK/data.etag" -C - -o "$WORK/data.csv")
run 15 $NULL "${CSV_FLAGS[@]}" -w '%{http_code}' "$NG/csv/data.csv"
expect "exit code 0 (got $RC)" rc_is 0
expect "a 200, the whole file" out_contains 200
expect "the file is the new version, byte for byte" cmp -s "$WORK/data.csv" "$CSV_DIR/data.csv"
expect "the new ETag is kept" grep -qF "$(printf '"%x-' 1767312000)" "$WORK/data.etag"
run 15 $NULL "${CSV_FLAGS[@]}" -w '%{http_code}' "$NG/csv/data.csv"
expect "then a 304 (got $(cat "$OUT"))" out_contains 304
expect "then exit code 0 (got $RC)" rc_is 0
expect "the file is left as it was" cmp -s "$WORK/data.csv" "$CSV_DIR/data.csv"
finish

# The shared state against a real rate limiter, on both stores: twenty runs at once
# against a healthy server that answers most of them 429 must not open its circuit
# (rate limiting is not an outage); a run right after is admitted.
REDIS_PORT="$(free_port)"
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --daemonize no --dir "$WORK" >"$WORK/redis.log" 2>&1 &
REDIS_PID=$!
for _ in $(seq 1 50); do
    [[ "$(redis-cli -p "$REDIS_PORT" PING 2>/dev/null)" == PONG ]] && break
    sleep 0.1
done
for store in "$WORK/state.json" "redis://127.0.0.1:$REDIS_PORT/0?prefix=interop:"; do
    kind=file
    [[ "$store" == redis* ]] && kind=redis
    begin "20 concurrent runs vs a 2 r/s limiter, --state $kind: the circuit stays closed"
    sleep 1.1   # let the limiter forget earlier checks
    t0="$(now_ms)"
    pids=()
    for i in $(seq 1 20); do
        timeout -k 2 30 "$RETRY_HTTP" --state "$store" --attempts 2 --base 10ms \
            --max-retry-after 1s -o /dev/null "$NG/limited/hello.txt" \
            >/dev/null 2>"$WORK/rl-$kind-$i.err" &
        pids+=($!)
    done
    codes=()
    for pid in "${pids[@]}"; do
        wait "$pid" && codes+=(0) || codes+=($?)
    done
    MS=$(( $(now_ms) - t0 ))
    limited=0
    for c in "${codes[@]}"; do [[ $c == 0 ]] || limited=$((limited + 1)); done
    opened="$(cat "$WORK"/rl-"$kind"-*.err | grep -c "circuit is open" || true)"
    run 20 $NULL --state "$store" --explain "$NG/limited/hello.txt"
    expect "the limiter turned runs away ($limited of 20 did not succeed)" test "$limited" -gt 0
    expect "no run refused by an open circuit ($opened said so)" test "$opened" -eq 0
    expect "--explain shows the circuit closed" out_contains "circuit closed (0 of 5 failed runs in a row)"
    sleep 1.1   # the shared Retry-After (1 s) passes
    run 20 $NULL --state "$store" --attempts 1 -o /dev/null "$NG/limited/hello.txt"
    expect "a later run is admitted and succeeds (exit 0, got $RC)" rc_is 0
    finish
done

echo
if [[ $FAILED -gt 0 ]]; then
    printf 'failed checks:\n'
    printf '  - %s\n' "${FAILED_NAMES[@]}"
fi
printf '%d passed, %d failed\n' "$PASSED" "$FAILED"
[[ $FAILED -eq 0 ]]
