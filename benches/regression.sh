#!/usr/bin/env bash
# Compares two builds of retry-http on the two figures a change must not slow down by more
# than 5% (medians of alternating runs against nginx on loopback):
#   1. start-up + a 1 KiB GET to /dev/null (wall time, 41 pairs);
#   2. 1 GiB to `-o` on tmpfs (/dev/shm, so disk writeback cannot swamp it; 15 pairs:
#      with 7, the ratio between the same two builds read 1.10 in one run and 1.00 in the next).
#
#     bash benches/regression.sh OLD_BINARY NEW_BINARY
#
# Prints each figure's medians, min-max and the ratio new/old, then "ok" or "REGRESSION"
# (ratio above 1.05). Needs nginx and python3; uses about 2 GiB of /dev/shm.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
OLD="$(realpath "$1")"
NEW="$(realpath "$2")"
SMALL_PAIRS="${SMALL_PAIRS:-41}"
BIG_PAIRS="${BIG_PAIRS:-15}"

WORK="$(mktemp -d /dev/shm/retry-http-regression.XXXXXX)"
NGINX_PID=""
cleanup() {
    [[ -n "$NGINX_PID" ]] && kill "$NGINX_PID" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

mkdir -p "$WORK/conf" "$WORK/logs" "$WORK/html" "$WORK/tmp"
chmod 755 "$WORK" "$WORK/html"
head -c 1024 /dev/urandom >"$WORK/html/small.bin"
head -c $((1 << 30)) /dev/zero >"$WORK/html/big.bin"
chmod 644 "$WORK/html/"*
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
USER_LINE=""
[[ "$(id -u)" == 0 ]] && USER_LINE="user nobody nogroup;"
cat >"$WORK/conf/nginx.conf" <<EOF
$USER_LINE
worker_processes 1;
daemon off;
pid logs/nginx.pid;
error_log logs/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    client_body_temp_path tmp/client_body;
    proxy_temp_path tmp/proxy;
    fastcgi_temp_path tmp/fastcgi;
    uwsgi_temp_path tmp/uwsgi;
    scgi_temp_path tmp/scgi;
    default_type application/octet-stream;
    server { listen 127.0.0.1:$PORT; root html; }
}
EOF
nginx -p "$WORK" -c conf/nginx.conf -e logs/error.log &
NGINX_PID=$!
for _ in $(seq 50); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
    sleep 0.1
done

URL="http://127.0.0.1:$PORT"
python3 "$HERE/alternate.py" --runs "$SMALL_PAIRS" --warmup 5 --out "$WORK/small.json" \
    "$OLD -s -o /dev/null $URL/small.bin" "$NEW -s -o /dev/null $URL/small.bin"
python3 "$HERE/alternate.py" --runs "$BIG_PAIRS" --warmup 1 --out "$WORK/big.json" \
    "$OLD -s -o $WORK/old.out $URL/big.bin" "$NEW -s -o $WORK/new.out $URL/big.bin"

python3 - "$WORK/small.json" "$WORK/big.json" <<'EOF'
import json, statistics, sys
worst = 0.0
for label, path, unit, scale in (("start-up + 1 KiB GET", sys.argv[1], "ms", 1e3),
                                  ("1 GiB to -o on tmpfs", sys.argv[2], "s", 1.0)):
    old, new = (r for r in json.load(open(path))["results"])
    for r in (old, new):
        bad = [c for c in r["exit_codes"] if c != 0]
        if bad:
            sys.exit(f"{label}: {r['command']} exited {bad[0]}")
    mo, mn = statistics.median(old["times"]), statistics.median(new["times"])
    ratio = mn / mo
    worst = max(worst, ratio)
    print(f"{label}: old {mo*scale:.3g} {unit} ({min(old['times'])*scale:.3g}-{max(old['times'])*scale:.3g}), "
          f"new {mn*scale:.3g} {unit} ({min(new['times'])*scale:.3g}-{max(new['times'])*scale:.3g}), "
          f"new/old {ratio:.3f} over {len(old['times'])} pairs")
print("ok" if worst <= 1.05 else "REGRESSION")
EOF
