#!/usr/bin/env bash
# Small GETs to one nginx on loopback in one run, curl beside retry-http builds, in
# interleaved rounds (benches/batch_gets.py says how each figure is taken):
#
#   bash benches/batch_gets.sh [--urls N] [--mode Z|serial] [--rounds R] [NAME=BINARY...]
#
# With no build named, it measures target/release/retry-http (built first). Prints the
# machine (kind, cores, memory, versions, load) and the medians; writes nothing.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
export PATH="$PATH:/usr/sbin:/sbin"
ARGS=()
BUILDS=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --urls|--mode|--rounds) ARGS+=("$1" "$2"); shift ;;
        -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
        *=*) BUILDS+=("$1") ;;
        *) echo "usage: bash benches/batch_gets.sh [--urls N] [--mode Z|serial] [--rounds R] [NAME=BINARY...]" >&2; exit 2 ;;
    esac
    shift
done
if [[ ${#BUILDS[@]} == 0 ]]; then
    (cd "$ROOT" && cargo build --release --quiet)
    BUILDS=("retry-http=$ROOT/target/release/retry-http")
fi
WORK="$(mktemp -d /tmp/retry-http-gets.XXXXXX)"
chmod 755 "$WORK"
NGINX_PID=""
cleanup() {
    [[ -n "$NGINX_PID" ]] && { kill "$NGINX_PID" 2>/dev/null || true; wait "$NGINX_PID" 2>/dev/null || true; }
    rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$WORK/html"
chmod 755 "$WORK/html"
head -c 1024 /dev/urandom >"$WORK/html/small.bin"
chmod 644 "$WORK/html/small.bin"
# shellcheck source=benches/nginx.sh
source "$HERE/nginx.sh"
start_nginx "$WORK/nginx" "$WORK/html"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores," \
    "$(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), Linux $(uname -r)"
echo "$(curl --version | head -1 | cut -d' ' -f1-2), $(nginx -v 2>&1 | sed 's/.*: //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$HERE/batch_gets.py" --port "$NGINX_PORT" --work "$WORK" "${ARGS[@]}" "${BUILDS[@]}"
