#!/usr/bin/env bash
# The crates as they would be published: `cargo package --workspace` (which builds each packed
# crate against the others packed, as crates.io would serve them), a list for the command
# that holds the build script, the sources and the licences and none of benches/, interop/ or
# the tests, the store's Lua script in its crate, then `cargo install --path` on the unpacked
# command (target/package/retry-http-VERSION), its crates of the workspace taken from their
# unpacked packages, into a temporary root, whose binary must answer --version. The install
# builds the static target into the repository's target folder, so it reuses the
# dependencies .ci/static.sh built.
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

echo "== cargo package --list -p retry-http"
cargo package --locked --list -p retry-http | tee "$work/list"
for f in Cargo.toml Cargo.lock build.rs src/main.rs src/lib.rs README.md \
    LICENSE-MIT LICENSE-APACHE man/retry-http.1; do
    grep -qx "$f" "$work/list" || fail "the crate does not hold $f"
done
! grep -E '^(benches|interop|tests|debian|docs|crates|\.ci)/' "$work/list" || fail "the crate holds the files above"
cargo package --locked --list -p retry-http-store | grep -qx src/redis/ops.lua ||
    fail "the store's crate does not hold src/redis/ops.lua"

# The crates of the workspace, by name (the folders of crates/).
members=()
for m in crates/*/Cargo.toml; do members+=("$(basename "$(dirname "$m")")"); done

# `cargo package --workspace` verifies each crate against the others through a temporary
# local registry. Cargo takes a registry's crate of one version to be the same for ever: it
# unpacks it once into its home's registry/src/ (a folder named "-HASH", as a local registry
# has no host) and builds it once into target/. A second run of the same version would build
# the command against the first run's sources. Both copies are removed first (cargo unpacks
# and builds them again from the new packages; `cargo clean -p` takes the workspace's own
# build of each crate too, which the next build redoes).
clean=()
for name in "${members[@]}"; do
    rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/"$name-$version"
    clean+=(-p "$name")
done
cargo clean --locked "${clean[@]}"

echo "== cargo package --workspace"
cargo package --locked --workspace
crate="target/package/retry-http-$version"
for name in retry-http "${members[@]}"; do
    [ -f "target/package/$name-$version.crate" ] || fail "cargo package wrote no $name-$version.crate"
    echo "$name-$version.crate: $(stat -c %s "target/package/$name-$version.crate") bytes"
done

# The packed command names its crates of the workspace as crates.io would serve them: each is
# patched to its unpacked package, and its Cargo.lock entry made a path's (no source, no
# checksum), so that --locked still holds every other dependency to the lock.
patches=()
for name in "${members[@]}"; do
    patches+=(--config "patch.crates-io.$name.path=\"$PWD/target/package/$name-$version\"")
done
python3 - "$crate/Cargo.lock" "${members[@]}" <<'PY'
import re, sys
path, names = sys.argv[1], set(sys.argv[2:])
blocks = open(path).read().split("\n\n")
def local(block):
    m = re.search(r'^name = "([^"]+)"', block, re.M)
    if not (m and m.group(1) in names):
        return block
    return "\n".join(l for l in block.split("\n") if not l.startswith(("source = ", "checksum = ")))
open(path, "w").write("\n\n".join(local(b) for b in blocks))
PY

echo "== cargo install --path $crate --target $TARGET"
CARGO_TARGET_DIR="$PWD/target" cargo install --locked --path "$crate" "${patches[@]}" --root "$work/root" --target "$TARGET" --quiet
answer=$("$work/root/bin/retry-http" --version)
[ "$answer" = "retry-http $version" ] || fail "the installed binary's --version said: $answer"
echo "crate.sh: all checks passed"
