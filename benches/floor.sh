#!/usr/bin/env bash
# retry-http beside curl and beside the physical floor (../shared/bench/floor.c: a static C
# program that connects, sends one GET, skips the head and writes the body, nothing else),
# in one run, alternating, against nginx on loopback; bodies go to tmpfs (/dev/shm), where
# disk writeback cannot hide the client's cost.
#
#   bash benches/floor.sh              # builds both release binaries, then measures
#   bash benches/floor.sh --no-build   # the existing binaries (or $RETRY_HTTP, $RETRY_HTTP_STATIC)
#   SMALL_RUNS=40 BULK_RUNS=9 bash benches/floor.sh
#   STARTUP_ONLY=1 FLOOR_OUT=benches/RESULTS-static.md bash benches/floor.sh --no-build
#
# Two builds are measured: the dynamic one (target/release/retry-http) and the static one
# (`cargo build --release --target x86_64-unknown-linux-musl`), whose start-up rows stand
# beside the dynamic build's in the same rounds; where the static binary is missing, its
# rows are left out. STARTUP_ONLY=1 measures the start-up rows alone (no 1 GiB runs).
#
# Figures (medians of alternating per-process runs, with the spread): start-up + one 1 KiB
# GET to /dev/null (wall and CPU, SMALL_RUNS rounds, default 30); `--version` (wall);
# 1 GiB to a new file on tmpfs, and replacing one (wall and CPU, BULK_RUNS rounds, default
# 7); peak RSS on 1 GiB; the system calls of the small GET; the binary's size. Each as a
# ratio to the floor and to curl. Where floor.c is not found, the harness says so and
# leaves the floor's column out. Writes the section "Beside the physical floor" at the head
# of benches/RESULTS.md (between its markers; report.py keeps it), or, with FLOOR_OUT=path,
# that table alone to another file. Needs nginx, curl, cc (gcc), python3 and strace (else
# the system-call row is left out); uses about 3 GiB of /dev/shm.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
SMALL_RUNS="${SMALL_RUNS:-30}"
BULK_RUNS="${BULK_RUNS:-7}"
OUT="${FLOOR_OUT:-}"
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

STATIC_TARGET=x86_64-unknown-linux-musl
if [[ "${1:-}" != "--no-build" ]]; then
    [[ -z "${RETRY_HTTP:-}" ]] && (cd "$ROOT" && cargo build --release -q)
    [[ -z "${RETRY_HTTP_STATIC:-}" ]] && (cd "$ROOT" && cargo build --release -q --target "$STATIC_TARGET")
fi
BIN="${RETRY_HTTP:-$ROOT/target/release/retry-http}"
STATIC="${RETRY_HTTP_STATIC:-$ROOT/target/$STATIC_TARGET/release/retry-http}"
if [[ ! -x "$STATIC" ]]; then
    log "no static binary at $STATIC: its rows are left out"
    STATIC=""
fi
STARTUP_ONLY="${STARTUP_ONLY:-}"
LOAD_START="$(cut -d' ' -f1 /proc/loadavg)"
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

mkdir -p "$SHM/html" && chmod 755 "$SHM" "$SHM/html"
head -c 1024 /dev/urandom >"$SHM/html/small.bin"
[[ -z "$STARTUP_ONLY" ]] && head -c $((1 << 30)) /dev/urandom >"$SHM/html/big.bin"
chmod 644 "$SHM/html/"*
# shellcheck source=benches/nginx.sh
source "$HERE/nginx.sh"
start_nginx "$WORK/nginx" "$SHM/html" || die "nginx did not start"
PORT="$NGINX_PORT"

SMALL="http://127.0.0.1:$PORT/small.bin"
BIG="http://127.0.0.1:$PORT/big.bin"
small=("$BIN -s -o /dev/null $SMALL" "curl -s -o /dev/null $SMALL")
# A new file each run: the last run's output is removed first (by sh, for every client
# alike), so no client writes into pages the last one of its kind just freed.
fresh() { echo "sh -c 'rm -f $1; exec $2'"; }
bulk=("$(fresh "$SHM/out-r" "$BIN -s -o $SHM/out-r $BIG")" "$(fresh "$SHM/out-c" "curl -s -o $SHM/out-c $BIG")")
# An existing file replaced: curl and the floor truncate it and write into it; retry-http
# writes beside it and renames over it (a failed download never clobbers it). "floor,
# renamed" does what retry-http does, to show what the file system charges for it.
replace=("$BIN -s -o $SHM/rep-r $BIG" "curl -s -o $SHM/rep-c $BIG")
if [[ -n "$FLOOR" ]]; then
    small+=("$FLOOR 127.0.0.1 $PORT /small.bin /dev/null")
    bulk+=("$(fresh "$SHM/out-f" "$FLOOR 127.0.0.1 $PORT /big.bin $SHM/out-f")")
    replace+=("$FLOOR 127.0.0.1 $PORT /big.bin $SHM/rep-f"
        "sh -c '$FLOOR 127.0.0.1 $PORT /big.bin $SHM/rep-g.tmp && exec mv $SHM/rep-g.tmp $SHM/rep-g'")
fi
# The static build last, so the indexes of the others stay as they were: dynamic, curl,
# floor, static (report below).
[[ -n "$STATIC" ]] && small+=("$STATIC -s -o /dev/null $SMALL")
log "start-up + 1 KiB GET: $SMALL_RUNS alternating rounds"
python3 "$HERE/alternate.py" --runs "$SMALL_RUNS" --warmup 5 --out "$WORK/small.json" "${small[@]}"
log "--version: $SMALL_RUNS alternating rounds (beside the floor's GET)"
version=("$BIN --version")
[[ -n "$FLOOR" ]] && version+=("$FLOOR 127.0.0.1 $PORT /small.bin /dev/null") || version+=("$BIN --version")
[[ -n "$STATIC" ]] && version+=("$STATIC --version")
python3 "$HERE/alternate.py" --runs "$SMALL_RUNS" --warmup 5 --out "$WORK/version.json" "${version[@]}"
if [[ -n "$STARTUP_ONLY" ]]; then
    echo '{"results": []}' >"$WORK/bulk.json"
    cp "$WORK/bulk.json" "$WORK/replace.json"
    RSS_R=""; RSS_C=""; RSS_F=""
else
log "1 GiB to a new file on tmpfs: $BULK_RUNS alternating rounds"
python3 "$HERE/alternate.py" --runs "$BULK_RUNS" --warmup 1 --out "$WORK/bulk.json" "${bulk[@]}"
log "1 GiB replacing a file on tmpfs: $BULK_RUNS alternating rounds"
python3 "$HERE/alternate.py" --runs "$BULK_RUNS" --warmup 1 --out "$WORK/replace.json" "${replace[@]}"
rm -f "$SHM"/out-* "$SHM"/rep-*
log "peak RSS on 1 GiB (max of 3 runs each)"
rss() { local m=0 k; for _ in 1 2 3; do
        /usr/bin/time -o "$WORK/rss.txt" -f '%M' "$@" >/dev/null 2>&1 || true
        k=$(tail -1 "$WORK/rss.txt"); rm -f "$SHM/rss"
        if [[ "$k" =~ ^[0-9]+$ ]] && (( k > m )); then m=$k; fi; done; echo "$m"; }
RSS_R=$(rss "$BIN" -s -o "$SHM/rss" "$BIG")
RSS_C=$(rss curl -s -o "$SHM/rss" "$BIG")
RSS_F=""; [[ -n "$FLOOR" ]] && RSS_F=$(rss "$FLOOR" 127.0.0.1 "$PORT" /big.bin "$SHM/rss")
fi
log "system calls of start-up + 1 KiB GET (strace -f -c)"
calls() { strace -f -c -o "$WORK/calls.txt" "$@" >/dev/null 2>&1; awk '$NF == "total" { print $4 }' "$WORK/calls.txt"; }
if command -v strace >/dev/null; then
    CALLS_R=$(calls "$BIN" -s -o /dev/null "$SMALL")
    CALLS_C=$(calls curl -s -o /dev/null "$SMALL")
    CALLS_F=""; [[ -n "$FLOOR" ]] && CALLS_F=$(calls "$FLOOR" 127.0.0.1 "$PORT" /small.bin /dev/null)
else
    CALLS_R=""; CALLS_C=""; CALLS_F=""
    log "no strace here: the system-call row is left out"
fi
SIZE=$(stat -c %s "$BIN")
CALLS_S=""; SIZE_S=""
if [[ -n "$STATIC" ]]; then
    SIZE_S=$(stat -c %s "$STATIC")
    command -v strace >/dev/null && CALLS_S=$(calls "$STATIC" -s -o /dev/null "$SMALL")
fi

python3 - "$WORK" "$OUT" "$BIN" "${FLOOR:+yes}" "$RSS_R" "$RSS_C" "$RSS_F" "$CALLS_R" "$CALLS_C" "$CALLS_F" "$SIZE" "$ROOT/benches/RESULTS.md" "$STATIC" "$CALLS_S" "$SIZE_S" "$LOAD_START" <<'PY'
import json, os, platform, re, statistics, subprocess, sys, time
work, out, binary, have_floor = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "yes"
rss_r, rss_c, rss_f, calls_r, calls_c, calls_f, size, results_md = sys.argv[5:13]
static, calls_s, size_s, load_start = sys.argv[13:17]
def load(name):
    return json.load(open(os.path.join(work, name)))["results"]
def med(v):
    return statistics.median(v)
def spread(v):
    return f"{min(v)*1e3:.2f}-{max(v)*1e3:.2f}" if max(v) < 1 else f"{min(v):.2f}-{max(v):.2f}"
def fmt(s):
    return f"{s*1e3:.2f} ms" if s < 1 else f"{s:.3f} s"
rows = []
def figure(label, res, key, goal):
    r, c = res[0][key], res[1][key]
    f = res[2][key] if have_floor and len(res) > 2 else None
    row = [label, f"{fmt(med(r))} ({spread(r)})", f"{fmt(med(c))} ({spread(c)})", f"{med(r)/med(c):.2f}x"]
    row += [f"{fmt(med(f))} ({spread(f)})", f"**{med(r)/med(f):.2f}x**"] if f else ["-", "-"]
    rows.append(row + [goal])
small, version, bulk, replace = (load(n) for n in ("small.json", "version.json", "bulk.json", "replace.json"))
# The static build's runs come last in the small and --version rounds.
s_small = [small[-1], small[1]] + ([small[2]] if have_floor else []) if static else None
figure("start-up + 1 KiB GET to /dev/null, wall", small, "times", "<= 1.5x floor")
if s_small:
    figure("the same, static build, wall", s_small, "times", "<= 1.5x floor")
figure("the same, CPU time", small, "cpu_s", "<= 2.5x floor")
if s_small:
    figure("the same, static build, CPU time", s_small, "cpu_s", "-")
def version_row(label, v):
    fl = version[1]["times"] if have_floor else None
    rows.append([label, f"{fmt(med(v))} ({spread(v)})", "-", "-",
                 f"{fmt(med(fl))}" if fl else "-", f"**{med(v)/med(fl):.2f}x**" if fl else "-", "<= 1.2x floor's GET"])
version_row("`--version`, wall (beside the floor's whole GET)", version[0]["times"])
if static:
    version_row("`--version`, static build, wall", version[-1]["times"])
if bulk:
    figure("1 GiB to a new file on tmpfs, wall", bulk, "times", "<= 1.1x floor")
    figure("the same, CPU time", bulk, "cpu_s", "-")
    figure("1 GiB replacing a file on tmpfs, wall", replace, "times", "-")
    if have_floor and len(replace) > 3:
        g = replace[3]["times"]
        rows.append(["the floor writing beside the file and renaming it, as retry-http does", "-", "-", "-",
                     f"{fmt(med(g))} ({spread(g)})", f"retry-http {med(replace[0]['times'])/med(g):.2f}x", "-"])
    kib = lambda k: f"{int(k)/1024:.1f} MiB" if k else "-"
    rows.append(["peak RSS, 1 GiB to a file (max of 3)", kib(rss_r), kib(rss_c),
                 f"{int(rss_r)/int(rss_c):.2f}x" if rss_r and rss_c else "-", kib(rss_f), "-", "<= 8 MiB"])
def calls_row(label, mine):
    rows.append([label, mine, calls_c, f"{int(mine)/int(calls_c):.2f}x", calls_f or "-",
                 f"{int(mine)/int(calls_f):.2f}x" if calls_f else "-", "-"])
if calls_r:
    calls_row("system calls, start-up + 1 KiB GET (strace -f -c)", calls_r)
if calls_s:
    calls_row("the same, static build", calls_s)
rows.append(["stripped binary", f"{int(size)/1048576:.2f} MiB ({int(size):,} bytes)", "-", "-", "-", "-", "<= 3.5 MiB"])
if size_s:
    rows.append(["the same, static build", f"{int(size_s)/1048576:.2f} MiB ({int(size_s):,} bytes)", "-", "-", "-", "-", "<= 4 MiB"])
ver = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()
commit = subprocess.run(["git", "-C", os.path.dirname(results_md), "log", "-1", "--format=%h"],
                        capture_output=True, text=True).stdout.strip()
ver += f" (commit {commit})" if commit else ""
curl = subprocess.run(["curl", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
nginx = subprocess.run(["nginx", "-v"], capture_output=True, text=True).stderr.strip()
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
mem = next((int(l.split()[1]) for l in open("/proc/meminfo") if l.startswith("MemTotal")), 0) / 1048576
bulk_runs = f", {len(bulk[0]['times'])} for 1 GiB" if bulk else ""
rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
static_note = (f" The static build (`--target x86_64-unknown-linux-musl`, {rustc}) runs in the same rounds "
               "as the dynamic one; its rows say so." if static else "")
body = (f"From `bash benches/floor.sh`, {time.strftime('%Y-%m-%d', time.gmtime())}: {os.cpu_count()} cores "
        f"({cpu}), {mem:.1f} GiB, {platform.system()} {platform.release()}; {ver}; {curl.split(' (')[0]}; {nginx}; "
        f"load average {load_start} at the start, {os.getloadavg()[0]:.2f} at the end. Medians of alternating per-process runs "
        f"(min-max in brackets; {len(small[0]['times'])} rounds for the small GET{bulk_runs}); bodies to tmpfs."
        f"{static_note} The floor is `../shared/bench/floor.c` built with "
        f"`cc -O2 -static`{'' if have_floor else ' (not found: left out)'}.\n\n"
        "| figure | retry-http | curl | vs curl | floor | vs floor | goal |\n|---|---|---|---|---|---|---|\n")
for r in rows:
    body += "| " + " | ".join(r) + " |\n"
if out:
    with open(out, "w") as f:
        f.write("# retry-http beside curl and the physical floor\n\n" + body)
    print(open(out).read())
    sys.exit(0)
# The table heads benches/RESULTS.md, between its markers (report.py keeps it).
begin, end = "<!-- floor -->", "<!-- /floor -->"
block = f"{begin}\n## Beside the physical floor\n\n{body}{end}\n"
if os.path.exists(results_md):
    text = open(results_md).read()
    if begin in text and end in text:
        text = text[:text.index(begin)] + block + text[text.index(end) + len(end) + 1:]
    else:
        at = text.find("\n## ")
        text = text[:at + 1] + block + "\n" + text[at + 1:] if at >= 0 else text + "\n" + block
    open(results_md, "w").write(text)
print(block)
PY
