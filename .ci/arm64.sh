#!/usr/bin/env bash
# arm64 Linux, as CI checks it on an x86-64 machine (Debian 12, as root):
#   1. the static aarch64-unknown-linux-musl build, cross-compiled (.ci/aarch64-env.sh installs
#      the C cross compiler and qemu-user-static, pinned, and sets them; .cargo/config.toml
#      links with rust-lld): an AArch64 executable, statically linked, at most 4 MiB, that
#      answers --version under qemu;
#   2. the unit tests built for aarch64 and run under qemu (cargo's runner);
#   3. the smoke set of integration tests (tests/it/smoke.rs) with the aarch64 binary, under
#      qemu, as the binary under test: a GET, Retry-After on 503 and 429, the deadline, -o
#      whole or absent, https with --cacert, the state file, a batch.
# The Debian package and the archive for arm64 are made by .ci/dist.sh and checked by
# .ci/check-dist.sh.
#
# Usage: bash .ci/arm64.sh   (from anywhere; it works in the repository that holds it)
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/aarch64-env.sh

LIMIT=$((4 << 20))
fail() {
    echo "arm64.sh: $*" >&2
    exit 1
}

echo "== cargo build --release --target $AARCH64_TARGET"
cargo build --release --locked --target "$AARCH64_TARGET"

echo "== an AArch64 executable, statically linked, at most 4 MiB"
headers=$(readelf --file-header --program-headers --dynamic "$AARCH64_BIN")
grep -q 'Machine: *AArch64' <<<"$headers" || fail "$AARCH64_BIN is not an AArch64 executable"
! grep -q 'INTERP' <<<"$headers" || fail "$AARCH64_BIN names a program interpreter"
! grep -q '(NEEDED)' <<<"$headers" || fail "$AARCH64_BIN needs shared libraries"
size=$(stat -c %s "$AARCH64_BIN")
echo "size: $size bytes"
((size <= LIMIT)) || fail "the aarch64 binary is $size bytes, over 4 MiB"
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
answer=$(qemu-aarch64-static "$AARCH64_BIN" --version)
[ "$answer" = "retry-http $version" ] || fail "--version under qemu said: $answer"

# The unit tests of every crate of the workspace. Those that start other programs (the Redis
# store's, in crates/retry-http-store: redis-server, redis-cli) run
# one at a time: qemu-user 7.2 can deadlock a guest that forks while another of its threads
# runs (seen here: a child stuck between fork and exec, the machine idle, for 15 minutes), and
# with one test thread the harness's other thread only waits. Each part is bounded, so that
# a hang fails this step instead of using up CI's time.
echo "== cargo test --lib --target $AARCH64_TARGET (under qemu)"
timeout 1200 cargo test --locked --lib --target "$AARCH64_TARGET" -- --skip redis::tests
echo "== cargo test --lib -p retry-http-store --target $AARCH64_TARGET redis::tests (under qemu, one at a time)"
timeout 900 cargo test --locked --lib -p retry-http-store --target "$AARCH64_TARGET" redis::tests -- --test-threads=1

echo "== the smoke set with the aarch64 binary under qemu (tests/it/smoke.rs)"
RETRY_HTTP_BIN_UNDER_TEST="$PWD/$AARCH64_BIN" RETRY_HTTP_BIN_RUNNER=qemu-aarch64-static \
    cargo test --locked --test it smoke:: 2>&1 | tee target/arm64-smoke.out
grep -Eq '^test result: ok\. [1-9][0-9]* passed' target/arm64-smoke.out ||
    fail "the smoke set did not run"

echo "arm64.sh: all checks passed"
