#!/usr/bin/env bash
# Adaptive pacing against a limiter that does not say its rate.
#
#   [N=300] [ONLY=nginx|window] [CURL=0] benches/pacing.sh [NEW_BINARY] [OLD_BINARY]
#
# 300 URLs, `-Z --parallel-max 50`, on loopback, against:
#   nginx-429     nginx limit_req, 40 r/s, burst 10 (nodelay), 429 without Retry-After
#   nginx-429-ra  the same, its 429 with `Retry-After: 1`
#   fixed-window  benches/batch_server.py: a fixed window of 40 a second, 429 + Retry-After 1
#   ratelimit     benches/batch_server.py --announce draft12: the quota in every answer
# each fetched by the new build, the old build (when given) and curl -Z --retry 5. Per run:
# the wall time, its ratio to 300/40 = 7.5 s, the 429s among the requests the server
# answered, and whether all 300 succeeded. The server's own count is the reference
# (nginx's access log; batch_server.py's /_stats).
set -u
here="$(cd "$(dirname "$0")" && pwd)"
new="${1:-$here/../target/release/retry-http}"
old="${2:-}"
n="${N:-300}"
only="${ONLY:-}"
work="$(mktemp -d)"
chmod a+rx "$work"
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT

# nginx with limit_req; $1: "ra" for Retry-After: 1 on its 429.
nginx_limited() {
    local dir="$work/nginx-$1" ra=""
    mkdir -p "$dir/conf" "$dir/logs" "$dir/tmp" "$dir/root"
    echo ok >"$dir/root/f"
    chmod -R a+rX "$dir"
    NGINX_PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
    [[ "$1" == ra ]] && ra='error_page 429 = @slow;'
    local user=""
    [[ "$(id -u)" == 0 ]] && user="user nobody nogroup;"
    cat >"$dir/conf/nginx.conf" <<CONF
$user
worker_processes 1;
daemon off;
pid logs/nginx.pid;
error_log logs/error.log warn;
events { worker_connections 1024; }
http {
    log_format st '\$status';
    access_log logs/access.log st;
    keepalive_timeout 5;
    client_body_temp_path tmp/client_body;
    proxy_temp_path tmp/proxy;
    fastcgi_temp_path tmp/fastcgi;
    uwsgi_temp_path tmp/uwsgi;
    scgi_temp_path tmp/scgi;
    limit_req_zone \$server_port zone=one:1m rate=40r/s;
    server {
        listen 127.0.0.1:$NGINX_PORT;
        root $dir/root;
        location /f { limit_req zone=one burst=10 nodelay; limit_req_status 429; $ra try_files /f =404; }
        location @slow { add_header Retry-After 1 always; return 429 "slow down\n"; }
    }
}
CONF
    chmod -R a+rwX "$dir/logs"
    nginx -p "$dir" -c conf/nginx.conf -e logs/error.log >"$dir/nginx.out" 2>&1 &
    NGINX_PID=$!
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$NGINX_PORT") 2>/dev/null && return 0
        sleep 0.05
    done
    echo "nginx did not start" >&2
    return 1
}

urls() { for i in $(seq "$n"); do echo "http://127.0.0.1:$1/f/$i"; done; }

# One run: $1 label, $2 port, $3 how to count ("nginx DIR" or "stats"), then the command.
run() {
    local label="$1" port="$2" count="$3"
    shift 3
    if [[ "$count" == stats ]]; then
        curl -s "http://127.0.0.1:$port/_stats?reset=1" >/dev/null
    else
        : >"${count#nginx }/logs/access.log"
        sleep 1.2 # the bucket refills
    fi
    local t0 t1 ok rc
    t0=$(date +%s.%N)
    "$@" >"$work/out" 2>"$work/err"
    rc=$?
    t1=$(date +%s.%N)
    local total thr used="-"
    if [[ "$count" == stats ]]; then
        read -r total thr ok used < <(curl -s "http://127.0.0.1:$port/_stats" | python3 -c '
import json, sys
s = json.load(sys.stdin)
print(s["requests"], s["r429"], s["paths_served"], s.get("quota_share_interior"))')
    else
        total=$(wc -l <"${count#nginx }/logs/access.log")
        thr=$(grep -c '^429$' "${count#nginx }/logs/access.log")
        ok=$(grep -c '^200$' "${count#nginx }/logs/access.log")
    fi
    python3 - "$label" "$t0" "$t1" "$total" "$thr" "$ok" "$rc" "$n" "$used" <<'PY'
import sys
label, t0, t1, total, thr, ok, rc, n, used = sys.argv[1:]
used = "-" if used in ("-", "None") else f"{100 * float(used):.0f}%"
wall = float(t1) - float(t0)
total, thr, ok, n = int(total), int(thr), int(ok), int(n)
share = 100.0 * thr / total if total else 0.0
print(f"| {label} | {wall:.2f} s | {wall / (n / 40):.2f}x | {total} | {thr} ({share:.1f}%) | {'yes' if rc == '0' and ok >= n else f'no (exit {rc}, {ok} ok)'} | {used} |")
PY
}

clients() {
    local port="$1" count="$2"
    urls "$port" >"$work/urls"
    run "retry-http (new)" "$port" "$count" "$new" -s -Z --parallel-max 50 --attempts 11 --url @"$work/urls" -o /dev/null
    [[ -n "$old" ]] && run "retry-http (before)" "$port" "$count" "$old" -s -Z --parallel-max 50 --attempts 11 --url @"$work/urls" -o /dev/null
    [[ "${CURL:-1}" == 0 ]] || run "curl -Z --retry 5" "$port" "$count" curl -s -Z --parallel-max 50 --retry 5 -f -K <(sed 's/^/url = /; s/$/\noutput = \/dev\/null/' "$work/urls")
}

echo "machine: $(uname -m), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| client | wall | / $n/40 s | requests | 429s | all succeeded | quota used |"
echo "|---|---|---|---|---|---|---|"
[[ "$only" == window ]] || for kind in plain ra; do
    nginx_limited "$kind" || exit 1
    echo "| **nginx limit_req 40 r/s burst 10, 429 $([[ $kind == ra ]] && echo 'with Retry-After: 1' || echo 'without Retry-After')** | | | | | | |"
    clients "$NGINX_PORT" "nginx $work/nginx-$kind"
    kill "$NGINX_PID"
done
[[ "$only" == nginx ]] || for announce in none draft12; do
    python3 "$here/batch_server.py" --rate 40 --announce "$announce" >"$work/server.out" &
    spid=$!
    for _ in $(seq 100); do grep -q ready "$work/server.out" && break; sleep 0.05; done
    port=$(awk '/ready/ {print $2}' "$work/server.out")
    echo "| **fixed window 40/s, Retry-After 1$([[ $announce == draft12 ]] && echo ', RateLimit fields')** | | | | | | |"
    clients "$port" stats
    kill "$spid"
    wait "$spid" 2>/dev/null
done
