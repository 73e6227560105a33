# Sourced by the benchmark scripts: sets BIN to the binary they measure, $RETRY_HTTP when
# given, else the release build of the tree at $ROOT (built first when $BUILD is 1). Needs
# the caller's ROOT, BUILD, log and die.
release_binary() {
    if [[ -n "${RETRY_HTTP:-}" ]]; then
        BIN="$(realpath "$RETRY_HTTP")"
    else
        BIN="$ROOT/target/release/retry-http"
        if [[ $BUILD == 1 ]]; then
            log "cargo build --release"
            (cd "$ROOT" && cargo build --release 2>&1 | tail -1 >&2)
        fi
    fi
    [[ -x "$BIN" ]] || die "no binary at $BIN"
}
