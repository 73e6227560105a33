#!/usr/bin/env bash
# Whether a new build of retry-http is slower than an old one on the two figures a change
# must not slow down, by the rule: no median regresses, measured by interleaving the old and
# the new build at least 30 runs each, a regression being a median beyond the larger of 5%
# and twice the old build's spread against itself.
#
#     bash benches/regression.sh OLD_BINARY NEW_BINARY
#     SMALL_PAIRS=42 BIG_PAIRS=30 bash benches/regression.sh OLD NEW     # the defaults
#
# The figures, against nginx on loopback (benches/nginx.sh):
#   1. start-up + a 1 KiB GET to /dev/null, wall time (SMALL_PAIRS rounds, default 42);
#   2. 1 GiB to `-o` on tmpfs (/dev/shm, so disk writeback cannot swamp it), wall time
#      (BIG_PAIRS rounds, default 30); every run writes the same path, which is removed
#      before it outside the timed span, so every run starts alike (see benches/README.md on
#      why replacing a file on tmpfs varies so much on a virtual machine) and at most 2 GiB
#      of /dev/shm is used (the served file and one output).
#
# The old build's spread against itself is measured the same way as the comparison: each
# round runs three commands, OLD, NEW and OLD again, in an order that goes through every
# place (alternate.py --order balanced), so "OLD again against OLD" is two medians of as
# many interleaved runs as "NEW against OLD", under the same load at the same moments. The
# spread is |median(OLD again) / median(OLD) - 1|; the threshold is max(5%, 2 x spread); a
# figure regresses when median(NEW) / median(OLD) - 1 is above its threshold. (Splitting
# the old runs in halves instead would compare medians of half as many runs, a wider
# spread than the comparison it stands for, and first half against second mixes a drift
# in the machine's load into it.)
#
# Prints, for each figure, the three medians (with min-max), new/old, the old build against
# itself, the threshold and "ok" or "REGRESSION", then one line: "ok" or "REGRESSION". Exits
# 0 when both figures are ok, 1 on a regression, 2 when a run failed. Needs nginx and
# python3; uses about 2 GiB of /dev/shm. With fewer than 30 rounds it still runs (to try
# the script) but says the result does not meet the rule.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
if [[ $# -ne 2 ]]; then
    echo "usage: bash benches/regression.sh OLD_BINARY NEW_BINARY" >&2
    exit 2
fi
OLD="$(realpath "$1")"
NEW="$(realpath "$2")"
SMALL_PAIRS="${SMALL_PAIRS:-42}"
BIG_PAIRS="${BIG_PAIRS:-30}"
for tool in nginx python3; do
    command -v "$tool" >/dev/null || {
        echo "regression.sh needs $tool (Debian: apt-get install nginx-light python3; benches/run.sh installs them)" >&2
        exit 2
    }
done
free_kib="$(df -k --output=avail /dev/shm | tail -1)"
if ((free_kib < (2 << 20) + (64 << 10))); then
    echo "regression.sh needs about 2 GiB free in /dev/shm (the served file and one output); $((free_kib >> 10)) MiB free" >&2
    exit 2
fi

WORK="$(mktemp -d /dev/shm/retry-http-regression.XXXXXX)"
NGINX_PID=""
cleanup() {
    [[ -n "$NGINX_PID" ]] && kill "$NGINX_PID" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

mkdir -p "$WORK/html"
chmod 755 "$WORK" "$WORK/html"
head -c 1024 /dev/urandom >"$WORK/html/small.bin"
head -c $((1 << 30)) /dev/zero >"$WORK/html/big.bin"
chmod 644 "$WORK/html/"*
# shellcheck source=benches/nginx.sh
source "$HERE/nginx.sh"
start_nginx "$WORK/nginx" "$WORK/html"
PORT="$NGINX_PORT"

URL="http://127.0.0.1:$PORT"
# The three commands of a round: OLD, NEW, OLD again (the same binary, a command of its own).
three() {
    local args="$1"
    printf '%s\n' "$OLD $args" "$NEW $args" "$OLD $args"
}
mapfile -t small < <(three "-s -o /dev/null $URL/small.bin")
mapfile -t big < <(three "-s -o $WORK/out $URL/big.bin")
python3 "$HERE/alternate.py" --runs "$SMALL_PAIRS" --warmup 5 --order balanced \
    --out "$WORK/small.json" -- "${small[@]}"
python3 "$HERE/alternate.py" --runs "$BIG_PAIRS" --warmup 1 --order balanced \
    --prepare "rm -f $WORK/out" --out "$WORK/big.json" -- "${big[@]}"

python3 - "$WORK/small.json" "$WORK/big.json" <<'EOF'
import json, statistics, sys

RULE_RUNS = 30      # the rule's least number of runs of each build
FLOOR = 0.05        # the rule's least threshold: 5%


def figure(label, path, unit, scale):
    """Prints one figure's lines; returns whether it regressed."""
    old, new, again = json.load(open(path))["results"]
    for r in (old, new, again):
        bad = [c for c in r["exit_codes"] if c != 0]
        if bad:
            print(f"{label}: {r['command']} exited {bad[0]}")
            sys.exit(2)
    med = {k: statistics.median(r["times"]) for k, r in (("old", old), ("new", new), ("again", again))}
    ratio = med["new"] / med["old"]
    spread = abs(med["again"] / med["old"] - 1)
    threshold = max(FLOOR, 2 * spread)
    regressed = ratio - 1 > threshold + 1e-9   # beyond it: 1.05 against 5% is not (floating point)
    shown = lambda r, m: (f"{m*scale:.3g} {unit} "
                          f"({min(r['times'])*scale:.3g}-{max(r['times'])*scale:.3g})")
    print(f"{label}, {len(old['times'])} rounds of old, new, old again:")
    print(f"  medians: old {shown(old, med['old'])}, new {shown(new, med['new'])}, "
          f"old again {shown(again, med['again'])}")
    print(f"  new/old {ratio:.3f}; old again/old {med['again'] / med['old']:.3f} "
          f"(spread {spread:.1%}); threshold max(5%, 2 x {spread:.1%}) = {threshold:.1%}: "
          f"{'REGRESSION' if regressed else 'ok'}")
    if len(old["times"]) < RULE_RUNS:
        print(f"  (fewer than {RULE_RUNS} runs of each build: a try of the script, not the rule)")
    return regressed


regressed = [figure(label, path, unit, scale)
             for label, path, unit, scale in (("start-up + 1 KiB GET", sys.argv[1], "ms", 1e3),
                                              ("1 GiB to -o on tmpfs", sys.argv[2], "s", 1.0))]
print("REGRESSION" if any(regressed) else "ok")
sys.exit(1 if any(regressed) else 0)
EOF
