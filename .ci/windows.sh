#!/usr/bin/env bash
# Windows, as CI checks it on an x86-64 Debian 12 machine (as root), with mingw-w64 and Wine
# (.ci/windows-env.sh installs them, pinned, and makes the Wine prefix):
#   1. `cargo clippy` of the library and the binary for x86_64-pc-windows-gnu, warnings refused;
#   2. the release build, cross-compiled: a PE32+ x86-64 executable that needs no DLL but
#      Windows' own (no libgcc or winpthread to ship beside it), at most 5 MiB, that answers
#      --version under Wine;
#   3. the unit tests built for Windows and run under Wine (cargo's runner);
#   4. the smoke set of integration tests (tests/it/smoke.rs) with retry-http.exe, under Wine,
#      as the binary under test: a GET, Retry-After on 503 and 429, the deadline, -o whole or
#      absent, https with --cacert, the state file, a batch;
#   5. Ctrl-C (a console control event) ending a run under Wine: exit 130, no temporary file.
# The release archive (.zip) is made by .ci/dist.sh and checked by .ci/check-dist.sh.
#
# Usage: bash .ci/windows.sh   (from anywhere; it works in the repository that holds it)
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/windows-env.sh
trap '"$WINESERVER" -k 2>/dev/null || true' EXIT

LIMIT=$((5 << 20))
fail() {
    echo "windows.sh: $*" >&2
    exit 1
}

echo "== cargo clippy --lib --bins --target $WINDOWS_TARGET -- -D warnings"
cargo clippy --locked --lib --bins --target "$WINDOWS_TARGET" -- -D warnings

echo "== cargo build --release --target $WINDOWS_TARGET"
cargo build --release --locked --target "$WINDOWS_TARGET"

echo "== a PE32+ x86-64 executable needing only Windows' own DLLs, at most 5 MiB"
headers=$(x86_64-w64-mingw32-objdump -p "$WINDOWS_BIN")
grep -q 'file format pei-x86-64' <<<"$headers" || fail "$WINDOWS_BIN is not a PE32+ x86-64 executable"
dlls=$(sed -n 's/^\tDLL Name: //p' <<<"$headers" | tr 'A-Z' 'a-z' | sort -u)
foreign=$(grep -Evx 'kernel32\.dll|ntdll\.dll|ws2_32\.dll|advapi32\.dll|bcrypt\.dll|bcryptprimitives\.dll|crypt32\.dll|userenv\.dll|msvcrt\.dll|api-ms-win-[a-z0-9-]+\.dll' <<<"$dlls" || true)
[ -z "$foreign" ] || fail "$WINDOWS_BIN needs DLLs Windows does not have: $foreign"
size=$(stat -c %s "$WINDOWS_BIN")
echo "size: $size bytes; DLLs: $(tr '\n' ' ' <<<"$dlls")"
((size <= LIMIT)) || fail "the Windows binary is $size bytes, over 5 MiB"
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
answer=$("$WINE" "$WINDOWS_BIN" --version | tr -d '\r')
[ "$answer" = "retry-http $version" ] || fail "--version under Wine said: $answer"

echo "== cargo test --lib --target $WINDOWS_TARGET (under Wine)"
cargo test --locked --lib --target "$WINDOWS_TARGET"

echo "== the smoke set with retry-http.exe under Wine (tests/it/smoke.rs)"
RETRY_HTTP_BIN_UNDER_TEST="$PWD/$WINDOWS_BIN" RETRY_HTTP_BIN_RUNNER="$WINE" \
    cargo test --locked --test it smoke:: 2>&1 | tee target/windows-smoke.out
grep -Eq '^test result: ok\. [1-9][0-9]* passed' target/windows-smoke.out ||
    fail "the smoke set did not run"

echo "windows.sh: all checks passed"
