#!/usr/bin/env bash
# retry-http beside curl and beside the physical floor (../shared/bench/floor.c: a static C
# program that connects, sends one GET, skips the head and writes the body, nothing else),
# in one run, alternating, against nginx on loopback; bodies go to tmpfs (/dev/shm), where
# disk writeback cannot hide the client's cost.
#
#   bash benches/floor.sh              # builds target/release/retry-http, then measures
#   bash benches/floor.sh --no-build   # the existing binary (or $RETRY_HTTP)
#   SMALL_RUNS=40 BULK_RUNS=9 bash benches/floor.sh
#
# Figures (medians of alternating per-process runs, with the spread): start-up + one 1 KiB
# GET to /dev/null (wall and CPU, SMALL_RUNS rounds, default 30); `--version` (wall);
# 1 GiB to a file on tmpfs (wall and CPU, BULK_RUNS rounds, default 7). Each as a ratio to
# the floor and to curl. Where floor.c is not found, the harness says so and leaves the
# floor's column out. Writes benches/RESULTS-floor.md (FLOOR_OUT=path for another file).
# Needs nginx, curl, cc (gcc) and python3; uses about 2 GiB of /dev/shm.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
SMALL_RUNS="${SMALL_RUNS:-30}"
BULK_RUNS="${BULK_RUNS:-7}"
OUT="${FLOOR_OUT:-$HERE/RESULTS-floor.md}"
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

if [[ "${1:-}" != "--no-build" && -z "${RETRY_HTTP:-}" ]]; then
    (cd "$ROOT" && cargo build --release -q)
fi
BIN="${RETRY_HTTP:-$ROOT/target/release/retry-http}"
for c in nginx curl cc python3; do command -v "$c" >/dev/null || die "needs $c"; done

WORK="$(mktemp -d /tmp/retry-http-floor.XXXXXX)"
SHM="$(mktemp -d /dev/shm/retry-http-floor.XXXXXX)"
NGINX_PID=""
cleanup() {
    [[ -n "$NGINX_PID" ]] && kill "$NGINX_PID" 2>/dev/null && wait "$NGINX_PID" 2>/dev/null
    rm -rf "$WORK" "$SHM"
}
trap cleanup EXIT

FLOOR_SRC="$ROOT/../shared/bench/floor.c"
FLOOR=""
if [[ -f "$FLOOR_SRC" ]]; then
    cc -O2 -static -o "$WORK/floor" "$FLOOR_SRC" && FLOOR="$WORK/floor"
    log "floor built from ../shared/bench/floor.c (cc -O2 -static)"
else
    log "no ../shared/bench/floor.c here: the floor's column is left out"
fi

NGX="$WORK/nginx"
mkdir -p "$NGX/conf" "$NGX/logs" "$NGX/tmp"
mkdir -p "$SHM/html" && chmod 755 "$SHM" "$SHM/html"
head -c 1024 /dev/urandom >"$SHM/html/small.bin"
head -c $((1 << 30)) /dev/urandom >"$SHM/html/big.bin"
chmod 644 "$SHM/html/"*
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
USER_LINE=""
[[ "$(id -u)" == 0 ]] && USER_LINE="user nobody nogroup;"
cat >"$NGX/conf/nginx.conf" <<EOF
$USER_LINE
worker_processes 1;
daemon off;
pid logs/nginx.pid;
error_log logs/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    client_body_temp_path tmp/client_body;
    proxy_temp_path tmp/proxy;
    fastcgi_temp_path tmp/fastcgi;
    uwsgi_temp_path tmp/uwsgi;
    scgi_temp_path tmp/scgi;
    default_type application/octet-stream;
    server { listen 127.0.0.1:$PORT; root $SHM/html; }
}
EOF
nginx -p "$NGX" -c conf/nginx.conf -e logs/error.log >"$WORK/nginx.out" 2>&1 &
NGINX_PID=$!
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$PORT/small.bin" && break; sleep 0.1; done

SMALL="http://127.0.0.1:$PORT/small.bin"
BIG="http://127.0.0.1:$PORT/big.bin"
small=("$BIN -s -o /dev/null $SMALL" "curl -s -o /dev/null $SMALL")
bulk=("$BIN -s -o $SHM/out-r $BIG" "curl -s -o $SHM/out-c $BIG")
if [[ -n "$FLOOR" ]]; then
    small+=("$FLOOR 127.0.0.1 $PORT /small.bin /dev/null")
    bulk+=("$FLOOR 127.0.0.1 $PORT /big.bin $SHM/out-f")
fi
log "start-up + 1 KiB GET: $SMALL_RUNS alternating rounds"
python3 "$HERE/alternate.py" --runs "$SMALL_RUNS" --warmup 5 --out "$WORK/small.json" "${small[@]}"
log "--version: $SMALL_RUNS alternating rounds (beside the floor's GET)"
version=("$BIN --version")
[[ -n "$FLOOR" ]] && version+=("$FLOOR 127.0.0.1 $PORT /small.bin /dev/null") || version+=("$BIN --version")
python3 "$HERE/alternate.py" --runs "$SMALL_RUNS" --warmup 5 --out "$WORK/version.json" "${version[@]}"
log "1 GiB to a file on tmpfs: $BULK_RUNS alternating rounds"
python3 "$HERE/alternate.py" --runs "$BULK_RUNS" --warmup 1 --out "$WORK/bulk.json" "${bulk[@]}"

python3 - "$WORK" "$OUT" "$BIN" "${FLOOR:+yes}" <<'PY'
import json, os, platform, statistics, subprocess, sys, time
work, out, binary, have_floor = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "yes"
def load(name):
    return json.load(open(os.path.join(work, name)))["results"]
def med(v):
    return statistics.median(v)
def spread(v):
    return f"{min(v)*1e3:.2f}-{max(v)*1e3:.2f}" if max(v) < 1 else f"{min(v):.2f}-{max(v):.2f}"
def fmt(s):
    return f"{s*1e3:.2f} ms" if s < 1 else f"{s:.3f} s"
rows = []
def figure(label, res, key):
    r, c = res[0][key], res[1][key]
    f = res[2][key] if have_floor and len(res) > 2 else None
    row = [label, f"{fmt(med(r))} ({spread(r)})", f"{fmt(med(c))}", f"{med(r)/med(c):.2f}x"]
    row += [f"{fmt(med(f))}", f"{med(r)/med(f):.2f}x"] if f else ["-", "-"]
    rows.append(row)
small, version, bulk = load("small.json"), load("version.json"), load("bulk.json")
figure("start-up + 1 KiB GET to /dev/null, wall", small, "times")
figure("the same, CPU time", small, "cpu_s")
v = version[0]["times"]
fl = version[1]["times"] if have_floor else None
rows.append(["`--version`, wall", f"{fmt(med(v))} ({spread(v)})", "-", "-",
             f"{fmt(med(fl))}" if fl else "-", f"{med(v)/med(fl):.2f}x" if fl else "-"])
figure("1 GiB to a file on tmpfs, wall", bulk, "times")
figure("the same, CPU time", bulk, "cpu_s")
ver = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()
curl = subprocess.run(["curl", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
nginx = subprocess.run(["nginx", "-v"], capture_output=True, text=True).stderr.strip()
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
mem = next((int(l.split()[1]) for l in open("/proc/meminfo") if l.startswith("MemTotal")), 0) / 1048576
with open(out, "w") as f:
    f.write("# retry-http beside curl and the physical floor\n\n")
    f.write(f"From `bash benches/floor.sh`, {time.strftime('%Y-%m-%d', time.gmtime())}: {os.cpu_count()} cores "
            f"({cpu}), {mem:.1f} GiB, {platform.system()} {platform.release()}; {ver}; {curl.split(' (')[0]}; {nginx}; "
            f"load average {os.getloadavg()[0]:.2f} at the end. Medians of alternating per-process runs "
            f"(min-max in brackets); bodies to tmpfs. The floor is `../shared/bench/floor.c` built with "
            f"`cc -O2 -static`{'' if have_floor else ' (not found: left out)'}.\n\n")
    f.write("| figure | retry-http | curl | vs curl | floor | vs floor |\n|---|---|---|---|---|---|\n")
    for r in rows:
        f.write("| " + " | ".join(r) + " |\n")
print(open(out).read())
PY
