#!/usr/bin/env bash
# How long the simulations take with the release binary (the overload model's budget: a
# 1000-client, 80-second run under a second).
#
#   bash benches/simulate.sh              # builds target/release/retry-http, then measures
#   bash benches/simulate.sh --no-build   # the existing binary (or $RETRY_HTTP)
#   RUNS=20 bash benches/simulate.sh      # more runs per command (default 10)
#
# Needs hyperfine. Every command is a pure computation (no network, no files but the
# hyperfine export in a mktemp -d folder, removed at the end); the table goes to stdout.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
cd "$ROOT"
export LC_ALL=C

BUILD=1
[[ "${1:-}" == "--no-build" ]] && BUILD=0
RUNS="${RUNS:-10}"
if [[ -n "${RETRY_HTTP:-}" ]]; then
    BIN="$RETRY_HTTP"
else
    BIN="$ROOT/target/release/retry-http"
    [[ $BUILD == 1 ]] && cargo build --release --quiet
fi
command -v hyperfine >/dev/null || { echo "needs hyperfine" >&2; exit 1; }
[[ -x "$BIN" ]] || { echo "no binary at $BIN" >&2; exit 1; }

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# name | arguments after `simulate`
CASES=(
    "overload, full, 1000 clients, 80 s|--model overload --clients 1000 --duration 80s --strategies full"
    "overload, retries (stuck), 1000 clients, 80 s|--model overload --clients 1000 --duration 80s --strategies retries"
    "overload, every strategy|--model overload --clients 1000 --duration 80s"
    "overload, closed population, every strategy|--model overload --population closed --clients 1000 --duration 80s"
    "overload, boundary sweep (990 runs)|--model overload --sweep"
    "failure-rate, every strategy|--model failure-rate"
    "failure-rate, p sweep (363 runs)|--model failure-rate --sweep"
    "outage (the default), every strategy|"
    "cron, 100000 hosts, no splay|--model cron"
    "cron, 1000000 hosts, splay 1m|--model cron --clients 1000000 --splay 1m"
)

echo "retry-http: $BIN ($("$BIN" --version 2>/dev/null | head -1))"
echo "machine: $(nproc) cores, $(uname -m), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
printf '| %-46s | %10s | %10s | %10s |\n' "simulate ..." "mean" "min" "max"
printf '|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..48})" "------------" "------------" "------------"
i=0
for case in "${CASES[@]}"; do
    name="${case%%|*}"
    args="${case#*|}"
    i=$((i + 1))
    # shellcheck disable=SC2086 # the arguments are words
    "$BIN" simulate $args >/dev/null # fails loudly on a flag the binary lacks
    hyperfine -N --style none --warmup 1 --runs "$RUNS" \
        --export-json "$WORK/$i.json" "$BIN simulate $args" >/dev/null 2>&1
    python3 - "$WORK/$i.json" "$name" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
ms = lambda s: f"{s * 1000:.1f} ms"
print(f"| {sys.argv[2]:<46} | {ms(r['mean']):>10} | {ms(r['min']):>10} | {ms(r['max']):>10} |")
EOF
done
