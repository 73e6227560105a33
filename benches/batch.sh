#!/usr/bin/env bash
# Many URLs in one run, side by side with curl -Z in the same run, on the same servers:
#   1. 300 URLs against a loopback server allowing 40 requests a second per origin (429 and
#      Retry-After beyond): retry-http -Z --parallel-max 50, curl -Z --parallel-max 50
#      --retry 5, and one retry-http process per URL (xargs -P 50): completion time, 429s,
#      requests started during a hold, failed transfers, beside the ideal 300/R + holds;
#   2. the same server announcing its quota in RateLimit fields (draft 12, the earlier
#      drafts' three fields, X-RateLimit-* with an epoch and with a delay reset): 429s (goal
#      0) and the share of the quota used (goal >= 90%);
#   3. 1,000 small GETs to one origin, no limit (nginx): one batch run, 1,000 processes
#      (xargs -P 50), curl -Z --parallel-max 50: wall and CPU time;
#   4. peak RSS of a batch over --url @FILE of 10,000 and 100,000 URLs (curl -K beside).
#
#   bash benches/batch.sh [--no-build] [--quick] [--rate 40] [--urls 300] [--sections LIST]
#   RETRY_HTTP=path/to/retry-http bash benches/batch.sh
#   BATCH_FLAGS='--parallel-max-host 50' bash benches/batch.sh   # more flags for the batch
#
# A build without -Z (two URLs under -Z --parallel-max 2 not both served) is measured where
# it can be (curl, a process per URL); the batch's cells then say "not measured", and the
# same command measures them once the build has it. The servers and the measuring are
# benches/batch_server.py and benches/batch_bench.py (their docstrings say how each figure
# is taken). Writes benches/RESULTS-batch.md (above its findings marker) and
# benches/results/batch.json (--quick, a smoke run: benches/results-quick/). About 7
# minutes on 2 cores, 3 of them the batch's 100,000 URLs (--quick: about 2 minutes).
# Needs curl, python3, xargs, nginx (Debian's nginx-light; without it the no-limit
# sections use batch_server.py --rate 0) and GNU time (/usr/bin/time; without it peak RSS
# is read from /proc). Every server listens on 127.0.0.1, on a free port, and is stopped
# on exit. Not part of the test suite.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
export PATH="$PATH:/usr/sbin:/sbin"
export LC_ALL=C
BUILD=1
QUICK=0
RATE=40
URLS=300
SECTIONS=rate,ratelimit,gets,memory
ARGS=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --no-build) BUILD=0 ;;
        --quick) QUICK=1; ARGS+=(--rounds 1 --get-rounds 1 --gets 300 --mem 2000,20000) ;;
        --rate) RATE="$2"; shift ;;
        --urls) URLS="$2"; shift ;;
        --sections) SECTIONS="$2"; shift ;;
        -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
        *) echo "usage: bash benches/batch.sh [--no-build] [--quick] [--rate R] [--urls N] [--sections LIST]" >&2; exit 2 ;;
    esac
    shift
done

log() { printf '[%s] batch: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }
for c in curl python3 xargs; do command -v "$c" >/dev/null || die "needs $c"; done

# shellcheck source=benches/binary.sh
source "$HERE/binary.sh"
release_binary

WORK="$(mktemp -d /tmp/retry-http-batch.XXXXXX)"
chmod 755 "$WORK"
NGINX_PID=""
cleanup() {
    if [[ -n "$NGINX_PID" ]]; then
        kill "$NGINX_PID" 2>/dev/null || true
        wait "$NGINX_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

# The no-limit target: nginx serving 1 KiB (every URL differs by its query).
NGINX_PORT=0
if command -v nginx >/dev/null; then
    mkdir -p "$WORK/nginx/html"
    chmod 755 "$WORK/nginx" "$WORK/nginx/html"
    head -c 1024 /dev/urandom >"$WORK/nginx/html/small.bin"
    chmod 644 "$WORK/nginx/html/small.bin"
    # shellcheck source=benches/nginx.sh
    source "$HERE/nginx.sh"
    start_nginx "$WORK/nginx" "$WORK/nginx/html" || die "nginx did not start"
else
    log "no nginx: the no-limit sections use batch_server.py --rate 0"
fi

# The machine: kind, cores, memory, versions, load (no paths, no other processes).
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "nproc: $(nproc)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
    echo "ram: $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
    echo "kernel: $(uname -r)"
    echo "os: $(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-unknown}")"
    echo "retry-http: $("$BIN" --version) ($(stat -c %s "$BIN") bytes)"
    echo "git: $(git -C "$ROOT" log -1 --format='%h %s' 2>/dev/null | cut -c1-100)"
    echo "curl: $(curl --version | head -1)"
    [[ $NGINX_PORT != 0 ]] && echo "nginx: $(nginx -v 2>&1)"
    echo "python3: $(python3 --version 2>&1)"
    echo "peak RSS from: $([[ -x /usr/bin/time ]] && echo '/usr/bin/time (%M)' || echo 'VmHWM in /proc')"
    echo "loadavg at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$WORK/machine.txt"

# A quick run writes beside the other quick results, never over the full run's.
if [[ $QUICK == 1 ]]; then OUT="results-quick"; MD="$OUT/RESULTS-batch.md"; else OUT="results"; MD="RESULTS-batch.md"; fi
mkdir -p "$HERE/$OUT"
log "rate $RATE/s, $URLS URLs, sections $SECTIONS"
python3 "$HERE/batch_bench.py" --bin "$BIN" --nginx-port "$NGINX_PORT" \
    --machine "$WORK/machine.txt" --out "$HERE/$OUT/batch.json" \
    --results "$HERE/$MD" --rate "$RATE" --urls "$URLS" \
    --sections "$SECTIONS" --batch-flags "${BATCH_FLAGS:-}" "${ARGS[@]}"
log "wrote benches/$MD and benches/$OUT/batch.json"
