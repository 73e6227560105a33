#!/usr/bin/env bash
# The static build's check, as CI runs it (as root): docs/install.md's command builds it, readelf
# shows it statically linked (no program interpreter, no NEEDED entry), it is at most
# 4 MiB, then tests/static_build.rs runs it in empty roots (chroot): --version, a GET by
# address, https trusting a CA by --cacert, SSL_CERT_FILE, SSL_CERT_DIR and the root's
# /etc/ssl/certs, names from /etc/hosts and from a DNS server on loopback, a small body to
# stdout with no /tmp, a refused connection's exit status.
#
# Needs: the musl target (installed here with rustup when missing), and Debian's
# musl-tools (musl-gcc, for the C in ring), dnsmasq-base (the DNS server of the resolver's
# case), binutils (readelf) and coreutils (chroot); the missing packages are installed.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET=x86_64-unknown-linux-musl
LIMIT=$((4 << 20))

rustup target list --installed | grep -qx "$TARGET" || rustup target add "$TARGET"
missing=()
command -v musl-gcc >/dev/null || missing+=(musl-tools)
command -v dnsmasq >/dev/null || [[ -x /usr/sbin/dnsmasq ]] || missing+=(dnsmasq-base)
command -v readelf >/dev/null || missing+=(binutils)
if [ ${#missing[@]} -gt 0 ]; then
    echo "== apt-get install ${missing[*]}"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

echo "== cargo build --release --target $TARGET"
cargo build --release --target "$TARGET"
BIN="target/$TARGET/release/retry-http"

echo "== statically linked: no interpreter, no shared library"
headers="$(readelf --program-headers --dynamic "$BIN")"
if grep -q 'INTERP' <<<"$headers"; then
    echo "error: $BIN names a program interpreter" >&2
    exit 1
fi
if grep -q '(NEEDED)' <<<"$headers"; then
    echo "error: $BIN needs shared libraries:" >&2
    grep '(NEEDED)' <<<"$headers" >&2
    exit 1
fi

size=$(stat -c %s "$BIN")
echo "== size: $size bytes (at most $LIMIT)"
if (( size > LIMIT )); then
    echo "error: the static binary is $size bytes, over 4 MiB" >&2
    exit 1
fi

echo "== chroot tests (tests/static_build.rs)"
cargo test --test static_build
