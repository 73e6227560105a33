#!/usr/bin/env bash
# The fleet store at scale: round trips per run, store operations per second, the wall time
# a run adds against no state (p50, p99) and outcomes lost, at 1, 64, 128 and 1,000 runs at
# once on one target (nginx, 1 KiB), all sharing one redis-server of the script's own.
#
#   bash benches/state_scale.sh [--no-build] [--label before|after] [--levels 1,64,128,1000]
#   RETRY_HTTP=path/to/retry-http bash benches/state_scale.sh --label after
#
# The measuring is benches/state_scale.py (its docstring says how each figure is taken).
# Writes benches/results/state_scale-LABEL.json (raw) and the block of LABEL in
# benches/RESULTS-state.md (section 9, below the findings, so report_state.py keeps it;
# the other label's block is kept too). A few minutes on 2 cores (the 1,000 level most).
# Round trips are counted by benches/state_scale/proxy.rs, the tests' proxy as a program.
# Needs rustc, nginx (Debian's nginx-light), redis-server and redis-cli, python3; installs the
# Debian packages it misses (as root). 1,000 runs at once need 4,096 open files: the
# script raises its soft limit, or stops if the hard limit is lower.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
BUILD=1
LABEL=before
LEVELS=1,64,128,1000
while [[ $# -gt 0 ]]; do
    case "$1" in
        --no-build) BUILD=0 ;;
        --label) LABEL="$2"; shift ;;
        --levels) LEVELS="$2"; shift ;;
        *) echo "usage: bash benches/state_scale.sh [--no-build] [--label L] [--levels N,N]" >&2; exit 2 ;;
    esac
    shift
done

log() { echo "state_scale: $*" >&2; }
die() { log "$*"; exit 1; }

apt_install() {
    command -v apt-get >/dev/null || die "need $* but apt-get is not available"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
command -v nginx >/dev/null || apt_install nginx-light
{ command -v redis-server >/dev/null && command -v redis-cli >/dev/null; } || apt_install redis-server
command -v python3 >/dev/null || apt_install python3

ulimit -n 4096 2>/dev/null || die "cannot raise the open files limit to 4096 (hard limit $(ulimit -Hn))"

# shellcheck source=benches/binary.sh
source "$HERE/binary.sh"
release_binary

WORK="$(mktemp -d /tmp/retry-http-scale.XXXXXX)"
chmod 755 "$WORK"
PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

# The target: nginx serving 1 KiB.
NGX="$WORK/nginx"
mkdir -p "$NGX/html"
chmod 755 "$NGX" "$NGX/html"
head -c 1024 /dev/urandom >"$NGX/html/small.bin"
chmod 644 "$NGX/html/small.bin"
# shellcheck source=benches/nginx.sh
source "$HERE/nginx.sh"
start_nginx "$NGX" "$NGX/html" || die "nginx did not start"
PIDS+=("$NGINX_PID")
TARGET="http://127.0.0.1:$NGINX_PORT/small.bin"

# The store: a redis-server of our own, no persistence, enough clients for 1,000 runs.
RPORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
redis-server --port "$RPORT" --bind 127.0.0.1 --protected-mode no --save '' --appendonly no \
    --maxclients 3000 --dir "$WORK" --daemonize no >"$WORK/redis.log" 2>&1 &
PIDS+=("$!")
for _ in $(seq 100); do
    [[ "$(redis-cli -p "$RPORT" ping 2>/dev/null)" == PONG ]] && break
    sleep 0.05
done
[[ "$(redis-cli -p "$RPORT" ping 2>/dev/null)" == PONG ]] || { cat "$WORK/redis.log" >&2; die "redis-server does not answer"; }

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
    echo "redis-server: $(redis-server --version)"
    echo "nginx: $(nginx -v 2>&1)"
    echo "python3: $(python3 --version 2>&1)"
    echo "open files limit: $(ulimit -n)"
    echo "loadavg at start: $(cat /proc/loadavg)"
} >"$WORK/machine.txt"

# The tests' round-trip counting proxy, as a program (std only: rustc alone builds it).
rustc --edition 2024 -O -o "$WORK/proxy" "$HERE/state_scale/proxy.rs" || die "cannot build the proxy"

mkdir -p "$HERE/results"
log "levels $LEVELS, label $LABEL; target $TARGET, redis on $RPORT"
python3 "$HERE/state_scale.py" --bin "$BIN" --target "$TARGET" --redis-port "$RPORT" \
    --proxy "$WORK/proxy" --levels "$LEVELS" --label "$LABEL" --machine "$WORK/machine.txt" \
    --out "$HERE/results/state_scale-$LABEL.json" --results "$HERE/RESULTS-state.md"
log "wrote benches/results/state_scale-$LABEL.json and the $LABEL block of benches/RESULTS-state.md"
