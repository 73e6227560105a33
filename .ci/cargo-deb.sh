# cargo-deb, pinned, from crates.io: installed under target/ci-tools unless that version is
# there, and put first on PATH. Sourced by .ci/package.sh and .ci/dist.sh.
CARGO_DEB_VERSION=3.8.0
ci_tools="$PWD/target/ci-tools"
if ! { [ -x "$ci_tools/bin/cargo-deb" ] && "$ci_tools/bin/cargo-deb" --version | grep -qF "$CARGO_DEB_VERSION"; }; then
    echo "== cargo install cargo-deb $CARGO_DEB_VERSION (--locked, into target/ci-tools)"
    started=$SECONDS
    cargo install cargo-deb --version "$CARGO_DEB_VERSION" --locked --root "$ci_tools" --quiet
    echo "cargo-deb installed in $((SECONDS - started)) s"
fi
export PATH="$ci_tools/bin:$PATH"
