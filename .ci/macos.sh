#!/usr/bin/env bash
# macOS, checked on every change: `cargo check` and `cargo clippy --all-targets -- -D
# warnings` for x86_64-apple-darwin and aarch64-apple-darwin, from this Linux machine.
# Nothing is linked (that needs Apple's SDK): ring's build script, which compiles its C
# with that SDK, is replaced for these checks by the `links` override of
# .ci/macos-check.toml (passed with --config, so no other build sees it). What macOS runs
# is tested here on Linux: tests/it/portable.rs and the suite's runs with
# RETRY_HTTP_TEST_PORTABLE=1 (.ci/run) take the portable paths
# (crates/retry-http-system/src/platform.rs).
#
# Needs: rustup (the two targets' standard libraries are added here when missing) and the
# network the first time, for them and for the macOS-only crates.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=(x86_64-apple-darwin aarch64-apple-darwin)
CONFIG=.ci/macos-check.toml

# The override names ring's `links` key, which carries ring's version: a ring moved in
# Cargo.lock without the override moved with it would run ring's build script and fail
# on its C; say why instead.
ring=$(awk '/^name = "ring"$/ { getline; gsub(/[^0-9.]/, ""); print; exit }' Cargo.lock)
links="ring_core_${ring//./_}_"
for target in "${TARGETS[@]}"; do
    if ! grep -qxF "[target.$target.$links]" "$CONFIG"; then
        echo "error: $CONFIG has no [target.$target.$links] (Cargo.lock holds ring $ring): update its section names" >&2
        exit 1
    fi
done

rustup component add clippy >/dev/null 2>&1 || true
installed=$(rustup target list --installed)
for target in "${TARGETS[@]}"; do
    grep -qx "$target" <<<"$installed" || rustup target add "$target"
done

for target in "${TARGETS[@]}"; do
    echo "== cargo check --target $target"
    cargo check --config "$CONFIG" --target "$target"
    echo "== cargo clippy --all-targets --target $target -- -D warnings"
    cargo clippy --config "$CONFIG" --all-targets --target "$target" -- -D warnings
done
