#!/usr/bin/env bash
# The crate as it would be published: `cargo package` (which builds the packed crate), a list
# that holds the build script, the sources and the licences and none of benches/, interop/ or
# the tests, then `cargo install --path` on the unpacked crate (target/package/retry-http-VERSION)
# into a temporary root, whose binary must answer --version. The install builds the static
# target into the repository's target folder, so it reuses the dependencies .ci/static.sh built.
#
# Usage: bash .ci/crate.sh   (from anywhere; it works in the repository that holds it)
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET=x86_64-unknown-linux-musl
fail() {
    echo "crate.sh: $*" >&2
    exit 1
}
version=$(cargo metadata --no-deps --format-version 1 --locked |
    python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "retry-http"))')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== cargo package --list"
cargo package --locked --list | tee "$work/list"
for f in Cargo.toml Cargo.lock build.rs src/main.rs src/lib.rs src/fleet/redis/ops.lua README.md \
    LICENSE-MIT LICENSE-APACHE man/retry-http.1; do
    grep -qx "$f" "$work/list" || fail "the crate does not hold $f"
done
! grep -E '^(benches|interop|tests|debian|docs|\.ci)/' "$work/list" || fail "the crate holds the files above"

echo "== cargo package"
cargo package --locked
crate="target/package/retry-http-$version"
[ -f "$crate.crate" ] || fail "cargo package wrote no $crate.crate"
echo "$crate.crate: $(stat -c %s "$crate.crate") bytes"

echo "== cargo install --path $crate --target $TARGET"
CARGO_TARGET_DIR="$PWD/target" cargo install --locked --path "$crate" --root "$work/root" --target "$TARGET" --quiet
answer=$("$work/root/bin/retry-http" --version)
[ "$answer" = "retry-http $version" ] || fail "the installed binary's --version said: $answer"
echo "crate.sh: all checks passed"
