#!/usr/bin/env bash
# Benchmark harness for retry-http, each measurement beside curl in the same run.
#
#   bash benches/run.sh            # full run (~15 min on 2 cores), writes benches/RESULTS.md
#                                  # (sections 1-6) and benches/RESULTS-state.md (7, 8)
#   bash benches/run.sh --quick    # smoke run (< ~90 s), writes benches/results-quick/RESULTS*.md
#
# Options (after --quick or alone):
#   --no-build        use the existing target/release/retry-http (or $RETRY_HTTP)
#   --only LIST       run only these sections, comma-separated: 1,2,3,4,5,6,7,8
#                     (7, 8: the shared state, --state FILE and redis://; a run of only
#                     those leaves RESULTS.md alone)
#
# Environment:
#   RETRY_HTTP        the binary to measure (default: target/release/retry-http, built here)
#   SIZES_DIR         where the profile-variant builds of section 5 go
#                     (default /tmp/retry-http-sizes; kept, so a re-run only relinks)
#   BENCH_OUT         write raw results and RESULTS.md to this folder instead
#   BENCH_S2_RUNS, BENCH_S2_VARIANTS   section 2's runs per variant and its variants
#                     (file pipe pipe-nobuf devnull)
#   BENCH_S6_DIAG=1   the diagnostic storms of section 6 in a --quick run too
#   BENCH_S8_MODES    section 8's modes (budget unlimited nostate budget-t2s warm-t2s)
#
# Every server is started here, on 127.0.0.1 only, on a free port, and killed on exit.
# Every loop is bounded; every client run is capped with timeout(1).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
cd "$ROOT"
export PATH="$PATH:/usr/sbin:/sbin"
export LC_ALL=C

QUICK=0
BUILD=1
ALL="1,2,3,4,5,6,7,8"
ONLY="$ALL"
while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick) QUICK=1 ;;
        --no-build) BUILD=0 ;;
        --only) ONLY="$2"; shift ;;
        -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
        *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
want() { [[ ",$ONLY," == *",$1,"* ]]; }

if [[ $QUICK == 1 ]]; then
    RES="$HERE/results-quick"
    BIG_SIZE=64M
    S1_ROUNDS=2; S1_RUNS=10; S1_WARMUP=5; S1_ALT=30
    S2_RUNS=3
    S3_SEEDS=2
    S4_RUNS=3; S4_CURL_CAP=3
    S6_CLIENTS=50; S6_RUNS=1; S6_CURL=0; S6_DIAG=${BENCH_S6_DIAG:-0}
    S7_ROUNDS=20; S7_WARMUP=5; S7_TRIPS=3
    S8_CLIENTS=50; S8_RUNS=1
else
    RES="$HERE/results"
    BIG_SIZE=1G
    S1_ROUNDS=10; S1_RUNS=20; S1_WARMUP=20; S1_ALT=200
    S2_RUNS=7
    S3_SEEDS=20
    S4_RUNS=10; S4_CURL_CAP=30
    S6_CLIENTS=200; S6_RUNS=5; S6_CURL=1; S6_DIAG=1
    S7_ROUNDS=200; S7_WARMUP=20; S7_TRIPS=10
    S8_CLIENTS=200; S8_RUNS=3
fi
# Overrides, for a focused re-measurement (documented in README.md).
RES="${BENCH_OUT:-$RES}"
S2_RUNS="${BENCH_S2_RUNS:-$S2_RUNS}"
S2_VARIANTS="${BENCH_S2_VARIANTS:-file pipe pipe-nobuf devnull}"
# Section 5 builds only in the full run.
[[ $QUICK == 1 ]] && ONLY="$(tr ',' '\n' <<<"$ONLY" | { grep -vx 5 || true; } | paste -sd, -)"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# ------------------------------------------------------------------ tools ---
APT_UPDATED=0
apt_install() {
    command -v apt-get >/dev/null || die "need $* but apt-get is not available"
    export DEBIAN_FRONTEND=noninteractive
    if [[ $APT_UPDATED == 0 ]]; then apt-get update -qq >/dev/null; APT_UPDATED=1; fi
    log "apt-get install $*"
    apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
command -v hyperfine >/dev/null || apt_install hyperfine
command -v nginx >/dev/null || apt_install nginx-light
command -v curl >/dev/null || apt_install curl
[[ -x /usr/bin/time ]] || apt_install time
command -v python3 >/dev/null || apt_install python3
command -v timeout >/dev/null || die "timeout(1) not found (coreutils)"
# Sections 7 and 8 start a redis-server of their own (never a system service).
if want 7 || want 8; then
    { command -v redis-server >/dev/null && command -v redis-cli >/dev/null; } || apt_install redis-server
fi

# shellcheck source=benches/binary.sh
source "$HERE/binary.sh"
release_binary

# ------------------------------------------------------------- workspace ---
mkdir -p "$RES"
if [[ "$ONLY" == "$ALL" || ( $QUICK == 1 && "$ONLY" == "1,2,3,4,6,7,8" ) ]]; then
    rm -rf "${RES:?}"/*
else  # a partial re-run replaces only its own sections' files
    for n in ${ONLY//,/ }; do
        rm -f "$RES"/s"$n"_* "$RES"/s"$n".tsv
        [[ -f "$RES/commands.tsv" ]] && { grep -v "^$n" "$RES/commands.tsv" >"$RES/commands.tmp" || true; mv "$RES/commands.tmp" "$RES/commands.tsv"; }
    done
fi
WORK="$(mktemp -d /tmp/retry-http-bench.XXXXXX)"
chmod 755 "$WORK"
mkdir -p "$WORK/tmp"
# retry-http spools stdout and special -o targets here: measured in section 2.
export TMPDIR="$WORK/tmp"
PIDS=()

forget_pid() {  # drop a stopped server from the list the exit trap kills
    local keep=() p
    for p in "${PIDS[@]}"; do [[ $p == "$1" ]] || keep+=("$p"); done
    PIDS=("${keep[@]}")
}
stop_pid() {
    local pid="$1"
    forget_pid "$pid"
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}
SHM=""  # section 7's state file on tmpfs, in a folder of its own
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    for pid in "${PIDS[@]}"; do stop_pid "$pid"; done
    rm -rf "$WORK"
    [[ -n "$SHM" ]] && rm -rf "$SHM"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
wait_port() {  # PORT: wait up to 10 s for a listener
    for _ in $(seq 1 100); do
        python3 -c "import socket,sys; s=socket.socket(); s.settimeout(0.2); sys.exit(s.connect_ex(('127.0.0.1',$1)))" && return 0
        sleep 0.1
    done
    die "nothing listens on port $1"
}
# start_py NAME ARGS...: a Python server from benches/, in the background, remembered.
start_py() {
    local name="$1"; shift
    python3 "$HERE/$name" "$@" >"$WORK/$name.out" 2>&1 &
    PIDS+=($!)
    LAST_PID=$!
}
CMDS="$RES/commands.tsv"
# Command lines are recorded without this machine's paths: the binary relative to the
# repository, the size builds under $SIZES_DIR.
note_cmd() {
    local c="${2//"$ROOT/"/}"
    [[ -n "${SIZES_DIR:-}" ]] && c="${c//"$SIZES_DIR"/\$SIZES_DIR}"
    printf '%s\t%s\n' "$1" "$c" >>"$CMDS"
}
now() { echo "$EPOCHREALTIME"; }
elapsed() { python3 -c "print(f'{$2 - $1:.6f}')"; }

# ---------------------------------------------------------------- machine ---
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "mode: $([[ $QUICK == 1 ]] && echo quick || echo full)"
    echo "nproc: $(nproc)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
    echo "ram: $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
    echo "kernel: $(uname -r)"
    echo "os: $(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-unknown}")"
    echo "retry-http: $("$BIN" --version)"
    echo "retry-http binary: ${BIN#"$ROOT/"} ($(stat -c %s "$BIN") bytes)"
    echo "curl: $(curl --version | head -1)"
    echo "nginx: $(nginx -v 2>&1)"
    if want 7 || want 8; then echo "redis-server: $(redis-server --version)"; fi
    echo "hyperfine: $(hyperfine --version)"
    echo "rustc: $(rustc --version 2>/dev/null || echo n/a)"
    echo "python3: $(python3 --version 2>&1)"
    echo "SSL_CERT_FILE=${SSL_CERT_FILE:-<unset>} SSL_CERT_DIR=${SSL_CERT_DIR:-<unset>} (read by rustls-native-certs at retry-http start-up)"
    echo "loadavg at start: $(cat /proc/loadavg)"
    echo "git: $(git -C "$ROOT" log -1 --format='%h %s' 2>/dev/null | cut -c1-100)"
} >"$RES/env.txt"
log "results in $RES, work dir $WORK"

# ------------------------------------------------------------------ nginx ---
need_nginx=0
{ want 1 || want 2 || want 7; } && need_nginx=1
if [[ $need_nginx == 1 ]]; then
    NGX="$WORK/nginx"
    mkdir -p "$NGX/html"
    chmod 755 "$NGX" "$NGX/html"
    head -c 1024 /dev/urandom >"$NGX/html/small.bin"
    if want 2; then
        log "creating the $BIG_SIZE file"
        head -c "$BIG_SIZE" /dev/urandom >"$NGX/html/big.bin"
    fi
    chmod 644 "$NGX/html/"*
    # shellcheck source=benches/nginx.sh
    source "$HERE/nginx.sh"
    start_nginx "$NGX" "$NGX/html" || die "nginx did not start"
    PIDS+=("$NGINX_PID")
    SMALL="http://127.0.0.1:$NGINX_PORT/small.bin"
    BIG="http://127.0.0.1:$NGINX_PORT/big.bin"
    log "nginx on 127.0.0.1:$NGINX_PORT"
fi

# ------------------------------------------- 1. start-up + one small GET ---
if want 1; then
    log "1. start-up + one small GET: hyperfine, $S1_ROUNDS rounds x $S1_RUNS runs, order alternating"
    A="$BIN -s $SMALL"
    C="curl -s $SMALL"
    # Diagnostics in the same rounds: -k skips loading the system trust store (which
    # retry-http does at start-up even for http:// URLs); the other variant unsets
    # SSL_CERT_DIR/SSL_CERT_FILE, which make rustls-native-certs read every file there.
    AK="$BIN -k -s $SMALL"
    AE="env -u SSL_CERT_DIR -u SSL_CERT_FILE $BIN -s $SMALL"
    note_cmd 1 "hyperfine -N --warmup $S1_WARMUP --runs $S1_RUNS --export-json s1_roundK.json '$A' '$C' '$AK' '$AE'   # order reversed on even rounds; $S1_ROUNDS rounds"
    for k in $(seq 1 "$S1_ROUNDS"); do
        w=$([[ $k == 1 ]] && echo "$S1_WARMUP" || echo 3)
        if (( k % 2 )); then order=("$A" "$C" "$AK" "$AE"); else order=("$AE" "$AK" "$C" "$A"); fi
        hyperfine -N --style none --warmup "$w" --runs "$S1_RUNS" \
            --export-json "$RES/s1_round$k.json" "${order[@]}" >/dev/null 2>"$WORK/hf.err" \
            || { cat "$WORK/hf.err" >&2; die "hyperfine failed"; }
    done
    log "1b. strict alternation, $S1_ALT pairs"
    note_cmd 1b "python3 benches/alternate.py --runs $S1_ALT --warmup 10 --out s1_alternate.json '$A' '$C'"
    python3 "$HERE/alternate.py" --runs "$S1_ALT" --warmup 10 --out "$RES/s1_alternate.json" "$A" "$C"
fi

# ----------------------------------------------------------- 2. big file ---
if want 2; then
    log "2. $BIG_SIZE download, $S2_RUNS alternating runs per variant (+1 warm-up each)"
    S2="$RES/s2.tsv"
    printf 'variant\ttool\trun\twall_s\tmaxrss_kb\texit\tbytes\tuser_s\tsys_s\n' >"$S2"
    OUTF="$WORK/out.bin"
    # one_run VARIANT TOOL RUN: runs one download, appends a line to s2.tsv.
    one_run() {
        local variant="$1" tool="$2" run="$3" t0 t1 rc=0 bytes=0
        rm -f "$OUTF" "$WORK/count"
        sync
        local -a cmd
        case "$tool" in
            retry-http) cmd=("$BIN" -s) ;;
            retry-http-N) cmd=("$BIN" -s --no-buffer) ;;
            curl) cmd=(curl -s) ;;
        esac
        t0=$(now)
        if [[ $variant == file ]]; then
            timeout 300 /usr/bin/time -f '%M %U %S' -o "$WORK/rss" "${cmd[@]}" -o "$OUTF" "$BIG" || rc=$?
        elif [[ $variant == devnull ]]; then
            timeout 300 /usr/bin/time -f '%M %U %S' -o "$WORK/rss" "${cmd[@]}" -o /dev/null \
                -w '%{size_download}' "$BIG" >"$WORK/count" || rc=$?
        else
            timeout 300 /usr/bin/time -f '%M %U %S' -o "$WORK/rss" "${cmd[@]}" "$BIG" | wc -c >"$WORK/count" || rc=$?
        fi
        t1=$(now)
        if [[ $variant == file ]]; then bytes=$(stat -c %s "$OUTF" 2>/dev/null || echo 0)
        else bytes=$(cat "$WORK/count"); fi
        local rss user sys
        read -r rss user sys < <(tail -1 "$WORK/rss")
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$variant" "$tool" "$run" "$(elapsed "$t0" "$t1")" \
            "$rss" "$rc" "$bytes" "$user" "$sys" >>"$S2"
    }
    note_cmd 2-file "rm -f OUT; sync; /usr/bin/time -f %M retry-http -s -o OUT $BIG   # alternating with: curl -s -o OUT $BIG"
    note_cmd 2-pipe "/usr/bin/time -f %M retry-http -s $BIG | wc -c   # alternating with: curl -s $BIG | wc -c"
    note_cmd 2-nobuf "/usr/bin/time -f %M retry-http -s --no-buffer $BIG | wc -c   # alternating with curl"
    note_cmd 2-devnull "/usr/bin/time -f %M retry-http -s -o /dev/null -w '%{size_download}' $BIG   # alternating with: curl -s -o /dev/null -w '%{size_download}' $BIG"
    for variant in $S2_VARIANTS; do
        rtool=retry-http; [[ $variant == pipe-nobuf ]] && rtool=retry-http-N
        for r in $(seq 0 "$S2_RUNS"); do   # run 0 is the warm-up, not counted
            if (( r % 2 )); then one_run "$variant" curl "$r"; one_run "$variant" "$rtool" "$r"
            else one_run "$variant" "$rtool" "$r"; one_run "$variant" curl "$r"; fi
        done
    done
    rm -f "$OUTF"
    log "2b. disk used by the stdout spool (separate run, watched through /proc/PID/fd)"
    note_cmd 2-spool "TMPDIR=DIR retry-http -s $BIG > >(wc -c) & python3 benches/fdwatch.py \$! DIR"
    for tool in retry-http retry-http-N retry-http-devnull; do
        # (sleep; exec): the watcher gets the PID before the download starts.
        case $tool in
            retry-http) (sleep 0.3; exec "$BIN" -s "$BIG") > >(wc -c >"$WORK/count") & ;;
            retry-http-N) (sleep 0.3; exec "$BIN" -s --no-buffer "$BIG") > >(wc -c >"$WORK/count") & ;;
            retry-http-devnull) (sleep 0.3; exec "$BIN" -s -o /dev/null -w '%{size_download}' "$BIG") >"$WORK/count" & ;;
        esac
        cpid=$!
        python3 "$HERE/fdwatch.py" "$cpid" "$TMPDIR" --interval 0.005 --max-seconds 300 >"$RES/s2_spool_$tool.json"
        wait "$cpid" || true
        sleep 0.2
        echo "{\"bytes_out\": $(cat "$WORK/count" 2>/dev/null || echo 0)}" >"$RES/s2_spool_${tool}_out.json"
    done
    rm -f "$NGX/html/big.bin"
fi

# ------------------------------------------------------- 3. wait precision ---
if want 3; then
    log "3. wait precision: $S3_SEEDS seeds x 21 attempts against always503.py"
    P3="$(free_port)"
    start_py always503.py "$P3" "$RES/s3_server.jsonl" --max-seconds 600
    wait_port "$P3"
    note_cmd 3 "python3 benches/always503.py PORT server.jsonl & retry-http --seed S --attempts 21 --base 20ms --cap 200ms --jitter full --log-format json -H 'X-Run: S' http://127.0.0.1:PORT/ 2>client_S.jsonl   # S = 1..$S3_SEEDS"
    for s in $(seq 1 "$S3_SEEDS"); do
        rc=0
        timeout 60 "$BIN" --seed "$s" --attempts 21 --base 20ms --cap 200ms --jitter full \
            --log-format json -H "X-Run: $s" "http://127.0.0.1:$P3/" \
            >/dev/null 2>"$RES/s3_client_$s.jsonl" || rc=$?
        [[ $rc == 4 ]] || log "  seed $s: exit $rc (expected 4)"
    done
    stop_pid "$LAST_PID"
fi

# ------------------------------------------------------------- 4. deadline ---
if want 4; then
    log "4. deadline against a server that never answers: $S4_RUNS alternating runs"
    P4="$(free_port)"
    start_py hang.py "$P4" --max-seconds 600
    HANG_PID=$LAST_PID
    wait_port "$P4"
    U4="http://127.0.0.1:$P4/"
    S4="$RES/s4.tsv"
    printf 'tool\trun\twall_s\texit\n' >"$S4"
    four() {  # TOOL RUN CAP CMD...
        local tool="$1" run="$2" cap="$3" t0 t1 rc=0; shift 3
        t0=$(now)
        timeout "$cap" "$@" >/dev/null 2>>"$WORK/s4.err" || rc=$?
        t1=$(now)
        printf '%s\t%s\t%s\t%s\n' "$tool" "$run" "$(elapsed "$t0" "$t1")" "$rc" >>"$S4"
    }
    note_cmd 4-retry-http "retry-http -s --deadline 1s $U4"
    note_cmd 4-curl-maxtime "timeout 30 curl -s --retry 5 --retry-max-time 1 --max-time 1 $U4"
    note_cmd 4-curl "timeout $S4_CURL_CAP curl -s --retry 5 --retry-max-time 1 $U4"
    for r in $(seq 1 "$S4_RUNS"); do
        if (( r % 2 )); then
            four retry-http "$r" 30 "$BIN" -s --deadline 1s "$U4"
            four curl-maxtime "$r" 30 curl -s --retry 5 --retry-max-time 1 --max-time 1 "$U4"
        else
            four curl-maxtime "$r" 30 curl -s --retry 5 --retry-max-time 1 --max-time 1 "$U4"
            four retry-http "$r" 30 "$BIN" -s --deadline 1s "$U4"
        fi
    done
    four curl-no-maxtime 1 "$S4_CURL_CAP" curl -s --retry 5 --retry-max-time 1 "$U4"
    stop_pid "$HANG_PID"
fi

# ----------------------------------------------------------------- 6. storm ---
if want 6; then
    N=$S6_CLIENTS
    log "6. storm: $N processes per run, $S6_RUNS run(s) per jitter mode"
    MODEL_ARGS=(--clients "$N" --outage 600ms --capacity 24 --window 100ms --attempts 8 --base 100ms)
    "$BIN" simulate --format json "${MODEL_ARGS[@]}" --runs 20 >"$RES/s6_model.json"
    note_cmd 6-model "retry-http simulate --format json ${MODEL_ARGS[*]} --runs 20"
    # The model's own spread: 20 single runs (seeds 1..20).
    : >"$RES/s6_model_seeds.jsonl"
    for s in $(seq 1 20); do
        "$BIN" simulate --format json "${MODEL_ARGS[@]}" --runs 1 --seed "$s" >>"$RES/s6_model_seeds.jsonl"
        echo >>"$RES/s6_model_seeds.jsonl"
    done
    # curl --retry 7 as the model sees it: doubling from 1 s, no jitter, 40 s budget.
    "$BIN" simulate --format json --clients "$N" --outage 600ms --capacity 24 --window 100ms \
        --attempts 8 --base 1s --cap 600s --deadline 40s --strategies exponential --runs 1 \
        >"$RES/s6_model_curl.json"

    # storm NAME KIND MODE RUN [extra client args...]: one storm of N processes.
    storm() {
        local name="$1" kind="$2" mode="$3" run="$4" port sp t0 t1 i p rc
        shift 4
        port="$(free_port)"
        local attempts_flag=(--attempts 8)
        [[ $kind == curl ]] && attempts_flag=(--attempts 0)
        python3 "$HERE/storm_server.py" --port "$port" --clients "$N" "${attempts_flag[@]}" \
            --summary "$RES/$name.json" --requests "$RES/$name.requests.jsonl" \
            --hold-timeout 60 --max-seconds 150 >"$WORK/storm.out" 2>&1 &
        sp=$!
        PIDS+=($sp)
        wait_port "$port"
        local -a pids=()
        local logdir="$WORK/logs-$name"
        mkdir -p "$logdir"
        t0=$(now)
        for i in $(seq 1 "$N"); do
            if [[ $kind == curl ]]; then
                # Not -o /dev/null: curl 7.88 truncates the output before a retry and
                # fails with exit 23 ("Failed to truncate file") on /dev/null.
                timeout 70 curl -s -o "$logdir/out$i" --retry 7 --retry-max-time 40 \
                    -H "X-Client: $i" "http://127.0.0.1:$port/" 2>/dev/null &
            elif [[ $kind == diag ]]; then
                timeout 90 "$BIN" --attempts 8 --base 100ms --cap 8s --jitter "$mode" \
                    --log-format json -o /dev/null -H "X-Client: $i" \
                    "http://127.0.0.1:$port/" 2>"$logdir/c$i.jsonl" &
            else
                timeout 90 "$BIN" --attempts 8 --base 100ms --cap 8s --jitter "$mode" \
                    -s -o /dev/null -H "X-Client: $i" "http://127.0.0.1:$port/" 2>/dev/null &
            fi
            pids+=($!)
        done
        t1=$(now)
        local -A codes=()
        for p in "${pids[@]}"; do
            rc=0; wait "$p" || rc=$?
            codes[$rc]=$(( ${codes[$rc]:-0} + 1 ))
        done
        local t2; t2=$(now)
        # The server stops by itself when every client is done (served or 8 requests);
        # curl's clients may stop earlier (--retry-max-time), so it is told.
        for _ in $(seq 1 30); do kill -0 "$sp" 2>/dev/null || break; sleep 0.1; done
        stop_pid "$sp"
        local codes_json="{" sep=""
        for rc in "${!codes[@]}"; do codes_json+="$sep\"$rc\": ${codes[$rc]}"; sep=", "; done
        codes_json+="}"
        python3 - "$RES/$name.json" "$kind" "$mode" "$run" "$(elapsed "$t0" "$t1")" \
            "$(elapsed "$t0" "$t2")" "$codes_json" <<'PY'
import json, sys
path, kind, mode, run, launch, total, codes = sys.argv[1:]
d = json.load(open(path))
d.update({"kind": kind, "mode": mode, "run": int(run), "launch_s": float(launch),
          "clients_done_s": float(total), "exit_codes": json.loads(codes)})
json.dump(d, open(path, "w"), indent=1)
PY
        if [[ $kind == diag ]]; then
            # keep each line's client: prefix it with the file's number
            : >"$RES/$name.clients.jsonl"
            for i in $(seq 1 "$N"); do
                sed "s/^{/{\"client\":\"$i\",/" "$logdir/c$i.jsonl" >>"$RES/$name.clients.jsonl"
            done
        fi
        rm -rf "$logdir"
        log "  $name: $(python3 -c "import json; d=json.load(open('$RES/$name.json')); print('served %.1f%%, %d requests, last success %s s, launch %.2f s, exits %s' % (d['served_pct'], d['total_requests'], d['last_success_s'] and round(d['last_success_s'],3), d['launch_s'], d['exit_codes']))")"
    }
    note_cmd 6-server "python3 benches/storm_server.py --port PORT --clients $N --attempts 8 --summary S.json --requests R.jsonl"
    note_cmd 6-clients "for i in 1..$N: retry-http --attempts 8 --base 100ms --cap 8s --jitter MODE -s -o /dev/null -H 'X-Client: \$i' http://127.0.0.1:PORT/ &   # all at once, then wait"
    for r in $(seq 1 "$S6_RUNS"); do
        for mode in full equal decorrelated none; do
            storm "s6_${mode}_$r" retry-http "$mode" "$r"
        done
    done
    if [[ $S6_DIAG == 1 ]]; then
        note_cmd 6-diag "as 6-clients with --jitter none (then decorrelated), without -s, --log-format json, stderr per client"
        storm s6_diag_none_1 diag none 1
        storm s6_diag_decorrelated_1 diag decorrelated 1
    fi
    if [[ $S6_CURL == 1 ]]; then
        note_cmd 6-curl "python3 benches/storm_server.py --port PORT --clients $N --summary S.json; for i in 1..$N: timeout 70 curl -s -o DIR/out\$i --retry 7 --retry-max-time 40 -H 'X-Client: \$i' http://127.0.0.1:PORT/ &   # not -o /dev/null: curl 7.88 --retry fails there with exit 23"
        storm s6_curl_1 curl curl 1
    fi
fi

# ------------------------------------------------------------------ redis ---
# One redis-server of the harness's own for sections 7 and 8: TCP on a free port of
# 127.0.0.1 and a Unix socket in the work folder, nothing saved to disk.
if want 7 || want 8; then
    RDIR="$WORK/redis"
    mkdir -p "$RDIR"
    RPORT="$(free_port)"
    RSOCK="$RDIR/redis.sock"
    redis-server --port "$RPORT" --bind 127.0.0.1 --protected-mode no --save '' \
        --appendonly no --daemonize no --dir "$RDIR" --unixsocket "$RSOCK" \
        --unixsocketperm 700 >"$RDIR/redis.log" 2>&1 &
    RPID=$!
    PIDS+=($RPID)
    wait_port "$RPORT"
    rcli() { redis-cli -h 127.0.0.1 -p "$RPORT" "$@"; }
    for _ in $(seq 1 50); do [[ "$(rcli ping 2>/dev/null)" == PONG ]] && break; sleep 0.1; done
    [[ "$(rcli ping 2>/dev/null)" == PONG ]] || { cat "$RDIR/redis.log" >&2; die "redis-server does not answer"; }
    [[ -S "$RSOCK" ]] || die "redis-server made no socket at $RSOCK"
    RURL="redis://127.0.0.1:$RPORT"
    RUNIX="redis+unix://$RSOCK"
    # CPU seconds redis-server has used so far (utime + stime of /proc/PID/stat).
    redis_cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$RPID/stat"; }
    log "redis-server on 127.0.0.1:$RPORT and a Unix socket"
fi

# --------------------------------------------- 7. the shared state's cost ---
if want 7; then
    log "7. start-up + one small GET with --state: none, FILE on tmpfs, redis://, redis+unix://; $S7_ROUNDS rounds"
    if [[ -d /dev/shm && -w /dev/shm ]]; then SHM="$(mktemp -d /dev/shm/retry-http-bench.XXXXXX)"
    else SHM="$(mktemp -d "$WORK/shm.XXXXXX")"; log "  no writable /dev/shm: the state file is in $SHM"; fi
    rcli flushall >/dev/null
    V7A="$BIN -s $SMALL"
    V7B="$BIN -s --state $SHM/state.json $SMALL"
    V7C="$BIN -s --state $RURL $SMALL"
    V7D="$BIN -s --state $RUNIX $SMALL"
    note_cmd 7 "python3 benches/alternate.py --runs $S7_ROUNDS --warmup $S7_WARMUP --out s7_alternate.json 'retry-http -s $SMALL' 'retry-http -s --state /dev/shm/DIR/state.json $SMALL' 'retry-http -s --state redis://127.0.0.1:RPORT $SMALL' 'retry-http -s --state redis+unix:///DIR/redis.sock $SMALL'   # redis-server --port RPORT --unixsocket /DIR/redis.sock --save '' --appendonly no"
    # Each variant once without -s first: what it says on stderr (a store warning would
    # show here; -s hides warnings).
    for v in a b c d; do
        case $v in a) c="$V7A" ;; b) c="$V7B" ;; c) c="$V7C" ;; d) c="$V7D" ;; esac
        rc=0
        # shellcheck disable=SC2086
        timeout 30 ${c/ -s / } >/dev/null 2>"$WORK/s7_check.err" || rc=$?
        { echo "exit $rc"; sed -e "s#$SHM#/dev/shm/DIR#g" -e "s#$RSOCK#/DIR/redis.sock#g" "$WORK/s7_check.err"; } >"$RES/s7_check_$v.txt"
    done
    cpu0=$(redis_cpu)
    python3 "$HERE/alternate.py" --runs "$S7_ROUNDS" --warmup "$S7_WARMUP" --out "$RES/s7_alternate.json" \
        "$V7A" "$V7B" "$V7C" "$V7D"
    cpu1=$(redis_cpu)
    # The store's commands per run, steady state (the key exists): counted by the server.
    : >"$RES/s7_trips.tsv"
    for v in c d; do
        for k in $(seq 1 "$S7_TRIPS"); do
            rcli config resetstat >/dev/null
            # shellcheck disable=SC2086
            if [[ $v == c ]]; then timeout 30 $V7C >/dev/null 2>&1 || true; else timeout 30 $V7D >/dev/null 2>&1 || true; fi
            printf '%s\t%s\t%s\n' "$v" "$k" "$(rcli info all | tr -d '\r' \
                | grep -E '^(cmdstat_|total_connections_received)' | paste -sd' ')" >>"$RES/s7_trips.tsv"
        done
    done
    printf '{"redis_cpu_s": %s, "store_runs": %s, "rounds": %s}\n' "$(python3 -c "print(round($cpu1 - $cpu0, 2))")" \
        "$(( 2 * S7_ROUNDS ))" "$S7_ROUNDS" >"$RES/s7_redis_cpu.json"
    rcli --raw get "retry-http:http://127.0.0.1:$NGINX_PORT" >"$RES/s7_record.json" 2>/dev/null || true
    rcli flushall >/dev/null
fi

# ------------------------------------------ 8. a fleet sharing one Redis ---
if want 8; then
    N=$S8_CLIENTS
    S8_FLOOR=20; S8_PCT=10
    S8_WARM=$(( 5 * N ))  # warm-t2s: every host succeeded 5 times in the window before
    # "Off": a budget that never refuses here (1000% is the most --retry-budget takes; the
    # floor alone is above the 7 retries x N clients a storm can ask for).
    S8_OFF_PCT=1000; S8_OFF_FLOOR=100000
    S8_MODES="${BENCH_S8_MODES:-budget unlimited nostate budget-t2s warm-t2s}"
    log "8. fleet storm: $N processes sharing $RURL; modes $S8_MODES; $S8_RUNS run(s) each"
    # storm8 NAME MODE RUN: N processes at once against storm_server.py; every client's
    # stderr is kept (warnings included); the store's counters and record are read after.
    storm8() {
        local name="$1" mode="$2" run="$3" port sp t0 t1 t2 i p rc
        local -a state=()
        local pct=0 floor=0 st=250ms
        case $mode in
            budget) pct=$S8_PCT; floor=$S8_FLOOR ;;
            budget-t2s|warm-t2s) pct=$S8_PCT; floor=$S8_FLOOR; st=2s ;;
            unlimited) pct=$S8_OFF_PCT; floor=$S8_OFF_FLOOR ;;
        esac
        [[ $mode == nostate ]] || state=(--state "$RURL" --retry-budget "$pct%" --budget-floor "$floor")
        [[ $st == 250ms ]] || state+=(--state-timeout "$st")
        port="$(free_port)"
        rcli flushall >/dev/null
        local seeded=0
        if [[ $mode == warm-t2s ]]; then
            # A budget that has earned retries: the record as runs would have left it after
            # S8_WARM successes in the current bucket of the window (format 2); --explain
            # shows what the runs will read.
            seeded=$S8_WARM
            local ts tus tnow
            read -r ts tus < <(rcli time | paste -sd' ')
            tnow=$(( ts * 1000 + tus / 1000 ))
            rcli set "retry-http:http://127.0.0.1:$port" "{\"format\":\"retry-http-state\",\"rev\":1,\"target\":{\"breaker\":{\"failures\":0,\"opened_at\":null,\"probe_until\":null,\"probe_id\":null},\"budget\":[[$(( tnow - tnow % 60000 )),$seeded,0]],\"hold_until\":null,\"seen\":$tnow}}" px 86400000 >/dev/null
            "$BIN" --explain "${state[@]}" "http://127.0.0.1:$port/" 2>&1 | grep -E 'retry budget:|warning' \
                | sed 's/^ *//' >"$RES/$name.explain.txt" || true
        fi
        rcli config resetstat >/dev/null
        python3 "$HERE/storm_server.py" --port "$port" --clients "$N" --attempts 8 \
            --summary "$RES/$name.json" --requests "$RES/$name.requests.jsonl" \
            --hold-timeout 60 --max-seconds 150 >"$WORK/storm8.out" 2>&1 &
        sp=$!
        PIDS+=($sp)
        wait_port "$port"
        local logdir="$WORK/logs-$name"
        mkdir -p "$logdir"
        local -a pids=()
        local cpu0; cpu0=$(redis_cpu)
        t0=$(now)
        for i in $(seq 1 "$N"); do
            timeout 90 "$BIN" --attempts 8 --base 100ms --cap 8s --jitter full "${state[@]}" \
                -o /dev/null -H "X-Client: $i" "http://127.0.0.1:$port/" 2>"$logdir/c$i.err" &
            pids+=($!)
        done
        t1=$(now)
        local -A codes=()
        for p in "${pids[@]}"; do
            rc=0; wait "$p" || rc=$?
            codes[$rc]=$(( ${codes[$rc]:-0} + 1 ))
        done
        t2=$(now)
        local cpu1; cpu1=$(redis_cpu)
        # Clients refused by the budget stop after one request: the server would wait for
        # their 8; every client is done, so it is told now.
        for _ in $(seq 1 10); do kill -0 "$sp" 2>/dev/null || break; sleep 0.1; done
        stop_pid "$sp"
        rcli info all | tr -d '\r' \
            | grep -E '^(cmdstat_|total_connections_received|total_commands_processed)' >"$RES/$name.redis.txt"
        rcli --raw get "retry-http:http://127.0.0.1:$port" >"$RES/$name.record.json" 2>/dev/null || true
        # Every client's stderr, each line prefixed with its number.
        : >"$RES/$name.stderr.txt"
        for i in $(seq 1 "$N"); do sed "s/^/$i\t/" "$logdir/c$i.err" >>"$RES/$name.stderr.txt"; done
        rm -rf "$logdir"
        local codes_json="{" sep=""
        for rc in "${!codes[@]}"; do codes_json+="$sep\"$rc\": ${codes[$rc]}"; sep=", "; done
        codes_json+="}"
        python3 - "$RES/$name.json" "$mode" "$run" "$(elapsed "$t0" "$t1")" "$(elapsed "$t0" "$t2")" \
            "$codes_json" "$(python3 -c "print(round($cpu1 - $cpu0, 2))")" "$pct" "$floor" "$st" "$seeded" <<'PY'
import json, sys
path, mode, run, launch, total, codes, rcpu, pct, floor, st, seeded = sys.argv[1:]
d = json.load(open(path))
d.update({"mode": mode, "run": int(run), "launch_s": float(launch), "clients_done_s": float(total),
          "exit_codes": json.loads(codes), "redis_cpu_s": float(rcpu),
          "budget_pct": float(pct), "budget_floor": int(floor), "state_timeout": st,
          "seeded_successes": int(seeded)})
json.dump(d, open(path, "w"), indent=1)
PY
        log "  $name: $(python3 -c "import json; d=json.load(open('$RES/$name.json')); print('%d requests (%d retries), served %d, all done %.2f s, exits %s' % (d['total_requests'], d['total_requests'] - d['clients_expected'], d['served_clients'], d['clients_done_s'], d['exit_codes']))"), warnings: $(grep -c 'warning' "$RES/$name.stderr.txt" || true)"
    }
    note_cmd 8-server "python3 benches/storm_server.py --port PORT --clients $N --attempts 8 --summary S.json --requests R.jsonl   # redis-cli FLUSHALL; CONFIG RESETSTAT before each run"
    note_cmd 8-budget "for i in 1..$N: retry-http --attempts 8 --base 100ms --cap 8s --jitter full --state redis://127.0.0.1:RPORT --retry-budget $S8_PCT% --budget-floor $S8_FLOOR -o /dev/null -H 'X-Client: \$i' http://127.0.0.1:PORT/ 2>c\$i.err &   # all at once, then wait"
    note_cmd 8-unlimited "as 8-budget with --retry-budget $S8_OFF_PCT% --budget-floor $S8_OFF_FLOOR (a budget that never refuses here)"
    note_cmd 8-nostate "as 8-budget without --state and the budget flags"
    note_cmd 8-budget-t2s "as 8-budget with --state-timeout 2s (default 250ms)"
    note_cmd 8-warm-t2s "as 8-budget-t2s, the target's record first set to $S8_WARM successes in the window (redis-cli SET, format 2; checked with retry-http --explain)"
    for r in $(seq 1 "$S8_RUNS"); do
        for mode in $S8_MODES; do
            storm8 "s8_${mode}_$r" "$mode" "$r"
        done
    done
fi

# -------------------------------------------------------------- 5. size ---
if want 5; then
    SIZES_DIR="${SIZES_DIR:-/tmp/retry-http-sizes}"
    log "5. binary size per profile setting (builds in $SIZES_DIR, ~1-2 min each)"
    S5="$RES/s5.tsv"
    printf 'variant\topt\tlto\tcgu\tstrip\tpanic\tbytes\tbuild_s\n' >"$S5"
    # name opt lto codegen-units strip panic (each adds one setting to the one before)
    VARIANTS=(
        "plain 3 false 16 none unwind"
        "+strip 3 false 16 symbols unwind"
        "+lto-fat+cgu1 3 fat 1 symbols unwind"
        "+opt-s s fat 1 symbols unwind"
        "+opt-z z fat 1 symbols unwind"
        "+panic-abort z fat 1 symbols abort"
    )
    for v in "${VARIANTS[@]}"; do
        read -r name opt lto cgu strip panic <<<"$v"
        dir="$SIZES_DIR/${name//+/}"
        t0=$(now)
        CARGO_TARGET_DIR="$dir" CARGO_PROFILE_RELEASE_OPT_LEVEL="$opt" \
            CARGO_PROFILE_RELEASE_LTO="$lto" CARGO_PROFILE_RELEASE_CODEGEN_UNITS="$cgu" \
            CARGO_PROFILE_RELEASE_STRIP="$strip" CARGO_PROFILE_RELEASE_PANIC="$panic" \
            cargo build --release --locked --bin retry-http >"$WORK/build.log" 2>&1 \
            || { tail -20 "$WORK/build.log" >&2; die "build $name failed"; }
        t1=$(now)
        bytes=$(stat -c %s "$dir/release/retry-http")
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$opt" "$lto" "$cgu" "$strip" "$panic" \
            "$bytes" "$(elapsed "$t0" "$t1")" >>"$S5"
        log "  $name: $bytes bytes"
        note_cmd "5-$name" "CARGO_TARGET_DIR=$dir CARGO_PROFILE_RELEASE_OPT_LEVEL=$opt CARGO_PROFILE_RELEASE_LTO=$lto CARGO_PROFILE_RELEASE_CODEGEN_UNITS=$cgu CARGO_PROFILE_RELEASE_STRIP=$strip CARGO_PROFILE_RELEASE_PANIC=$panic cargo build --release --locked --bin retry-http"
    done
fi

# ---------------------------------------------------------------- report ---
echo "loadavg at end: $(cat /proc/loadavg)" >>"$RES/env.txt"
if [[ $QUICK == 1 || -n "${BENCH_OUT:-}" ]]; then OUT_DIR="$RES"; else OUT_DIR="$HERE"; fi
# RESULTS.md holds sections 1-6, RESULTS-state.md 7 and 8: a run of only 7 and 8 leaves
# RESULTS.md as it is.
if want 1 || want 2 || want 3 || want 4 || want 5 || want 6; then
    python3 "$HERE/report.py" "$RES" "$OUT_DIR/RESULTS.md"
    log "wrote $OUT_DIR/RESULTS.md"
fi
if want 7 || want 8; then
    python3 "$HERE/report_state.py" "$RES" "$OUT_DIR/RESULTS-state.md"
    log "wrote $OUT_DIR/RESULTS-state.md"
fi
