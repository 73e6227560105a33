#!/usr/bin/env bash
# Compares two builds of retry-http on the two figures a change must not slow down by more
# than 5% (medians of alternating runs against nginx on loopback):
#   1. start-up + a 1 KiB GET to /dev/null (wall time, 41 pairs);
#   2. 1 GiB to `-o` on tmpfs (/dev/shm, so disk writeback cannot swamp it; 15 pairs:
#      with 7, the ratio between the same two builds read 1.10 in one run and 1.00 in the next),
#      a new file each run (the last output removed first: see benches/README.md on why
#      replacing a file on tmpfs varies so much on a virtual machine).
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
python3 "$HERE/alternate.py" --runs "$SMALL_PAIRS" --warmup 5 --out "$WORK/small.json" \
    "$OLD -s -o /dev/null $URL/small.bin" "$NEW -s -o /dev/null $URL/small.bin"
python3 "$HERE/alternate.py" --runs "$BIG_PAIRS" --warmup 1 --out "$WORK/big.json" \
    "sh -c 'rm -f $WORK/old.out; exec $OLD -s -o $WORK/old.out $URL/big.bin'" \
    "sh -c 'rm -f $WORK/new.out; exec $NEW -s -o $WORK/new.out $URL/big.bin'"

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
