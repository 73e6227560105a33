#!/usr/bin/env bash
# The release files, in target/dist/ (emptied first), for the version in Cargo.toml:
#   retry-http-VERSION-x86_64-unknown-linux-musl.tar.gz    the static binaries, each in a folder
#   retry-http-VERSION-aarch64-unknown-linux-musl.tar.gz   of that name with the man pages, the
#                                                          completions, README.md and the licences
#   retry-http_VERSION-1_amd64.deb, retry-http_VERSION-1_arm64.deb   the Debian packages (cargo-deb)
#   retry-http-VERSION-x86_64-pc-windows-gnu.zip           retry-http.exe (mingw-w64), README.md,
#                                                          the licences, the PowerShell completion
#   SHA256SUMS                                             over the five, for `sha256sum -c`
# A build already made is reused (cargo builds nothing new after .ci/static.sh and .ci/arm64.sh).
# The archives and the packages are reproducible: names sorted, owner root, every time the last
# commit's (or SOURCE_DATE_EPOCH's), gzip without a name or time; the zip's entries sorted,
# with that time and no extra fields. No macOS file is made here: linking for macOS needs
# Apple's SDK.
# .ci/check-dist.sh checks what this writes.
#
# Needs (installed when missing, as root): rustup's two musl targets, Debian's musl-tools,
# dpkg-dev, and what .ci/aarch64-env.sh, .ci/windows-env.sh and .ci/cargo-deb.sh install.
#
# Usage: bash .ci/dist.sh   (no arguments; from anywhere, it works in the repository that holds it)
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 0 ] || {
    echo "usage: bash .ci/dist.sh (no arguments: the version is Cargo.toml's)" >&2
    exit 2
}

X86_TARGET=x86_64-unknown-linux-musl
rustup target list --installed | grep -qx "$X86_TARGET" || rustup target add "$X86_TARGET"
missing=()
command -v musl-gcc >/dev/null || missing+=(musl-tools)
command -v dpkg-shlibdeps >/dev/null || missing+=(dpkg-dev)
if [ ${#missing[@]} -gt 0 ]; then
    echo "== apt-get install ${missing[*]}"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
source .ci/aarch64-env.sh
source .ci/windows-env.sh
"$WINESERVER" -k 2>/dev/null || true # nothing runs under Wine here
source .ci/cargo-deb.sh

version=$(cargo metadata --no-deps --format-version 1 --locked |
    python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "retry-http"))')
# The archives' time, not exported: ring's C compiler setup reads SOURCE_DATE_EPOCH, and a new
# value would make cargo build ring, and the binaries, again.
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || stat -c %Y Cargo.toml)}
dist=target/dist
rm -rf "$dist"
mkdir -p "$dist"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

for target in "$X86_TARGET" "$AARCH64_TARGET"; do
    echo "== cargo build --release --target $target"
    cargo build --release --locked --target "$target"

    name="retry-http-$version-$target"
    echo "== $name.tar.gz"
    mkdir -p "$stage/$name"
    cp "target/$target/release/retry-http" "$stage/$name/"
    cp -r man completions README.md LICENSE-MIT LICENSE-APACHE "$stage/$name/"
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" \
        -C "$stage" -cf - "$name" | gzip -9 -n >"$dist/$name.tar.gz"

    echo "== cargo deb --target $target"
    # cargo-deb takes the files' times from SOURCE_DATE_EPOCH (it builds nothing here).
    SOURCE_DATE_EPOCH=$epoch cargo deb --target "$target" --locked --no-build | tee "$stage/cargo-deb.out"
    cp "$(tail -n 1 "$stage/cargo-deb.out")" "$dist/"
done

echo "== cargo build --release --target $WINDOWS_TARGET"
cargo build --release --locked --target "$WINDOWS_TARGET"
name="retry-http-$version-$WINDOWS_TARGET"
echo "== $name.zip"
mkdir -p "$stage/$name"
cp "$WINDOWS_BIN" README.md LICENSE-MIT LICENSE-APACHE completions/_retry-http.ps1 "$stage/$name/"
find "$stage/$name" -exec touch -h -d "@$epoch" {} +
# -X: no Unix owners or extra times; the order sorted, so the bytes are the same every time.
(cd "$stage" && find "$name" | LC_ALL=C sort | TZ=UTC zip -X -9 -q "$OLDPWD/$dist/$name.zip" -@)

(cd "$dist" && sha256sum -- *.tar.gz *.deb *.zip >SHA256SUMS)
echo "== $dist"
(cd "$dist" && ls -l -- * && cat SHA256SUMS)
