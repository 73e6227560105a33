#!/usr/bin/env bash
# Checks the release files .ci/dist.sh wrote in target/dist/, as a user would use them (as root):
#   1. SHA256SUMS names exactly the five files there, and `sha256sum -c` passes;
#   2. each archive holds exactly its folder: the binary (mode 755, for the archive's machine,
#      statically linked), the two man pages, the five completions, README.md, the licences;
#   3. the binary from each archive, unpacked, answers --version and fetches a file from a
#      loopback server byte for byte: the x86-64 one directly, the aarch64 one under qemu;
#   4. each Debian package: Package, Version, Architecture (amd64, arm64), its file list, the
#      machine of its binary, its copyright file;
#   5. the amd64 package installed, checked and removed by .ci/package.sh;
#   6. the Windows zip holds exactly its folder (retry-http.exe, a PE32+ x86-64 executable,
#      README.md, the licences, the PowerShell completion), and its retry-http.exe answers
#      --version and fetches a file byte for byte under Wine.
#
# Usage: bash .ci/check-dist.sh   (after bash .ci/dist.sh; from anywhere)
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/aarch64-env.sh
source .ci/windows-env.sh

fail() {
    echo "check-dist.sh: $*" >&2
    exit 1
}
version=$(cargo metadata --no-deps --format-version 1 --locked |
    python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "retry-http"))')
dist=target/dist
work=$(mktemp -d)
server=
cleanup() {
    [ -z "$server" ] || kill "$server" 2>/dev/null || true
    "$WINESERVER" -k 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# target, its Debian architecture, readelf's name of its machine, how to run its binary here
ROWS=("x86_64-unknown-linux-musl amd64 X86-64 -"
    "aarch64-unknown-linux-musl arm64 AArch64 qemu-aarch64-static")
files=()
for row in "${ROWS[@]}"; do
    read -r target arch _ _ <<<"$row"
    files+=("retry-http-$version-$target.tar.gz" "retry-http_${version}-1_$arch.deb")
done
files+=("retry-http-$version-$WINDOWS_TARGET.zip")

echo "== SHA256SUMS"
listed=$(awk '{print $2}' "$dist/SHA256SUMS" | sort)
[ "$listed" = "$(printf '%s\n' "${files[@]}" | sort)" ] || fail "SHA256SUMS lists: $listed"
[ "$(ls "$dist" | sort)" = "$(printf '%s\n' "${files[@]}" SHA256SUMS | sort)" ] ||
    fail "target/dist holds: $(ls "$dist")"
(cd "$dist" && sha256sum -c SHA256SUMS)

# A loopback server for the binaries' GET: it serves the unpacked archives.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server --bind 127.0.0.1 --directory "$work" "$port" >/dev/null 2>&1 &
server=$!
for _ in $(seq 50); do
    curl -s -o /dev/null "http://127.0.0.1:$port/" && break
    sleep 0.1
done

for row in "${ROWS[@]}"; do
    read -r target arch machine runner <<<"$row"
    [ "$runner" != - ] || runner=
    name="retry-http-$version-$target"
    echo "== $name.tar.gz"
    tar -tzvf "$dist/$name.tar.gz"
    want=$(printf "$name/%s\n" "" retry-http man/ man/retry-http.1 man/retry-http-simulate.1 completions/ \
        completions/_retry-http completions/_retry-http.ps1 completions/retry-http.bash \
        completions/retry-http.elv completions/retry-http.fish README.md LICENSE-MIT LICENSE-APACHE | sort)
    [ "$(tar -tzf "$dist/$name.tar.gz" | sort)" = "$want" ] || fail "$name.tar.gz does not hold exactly: $want"
    tar -xzf "$dist/$name.tar.gz" -C "$work"
    bin="$work/$name/retry-http"
    [ "$(stat -c %a "$bin")" = 755 ] || fail "$bin is not mode 755"
    headers=$(readelf --file-header --program-headers --dynamic "$bin")
    grep -q "Machine: .*$machine$" <<<"$headers" || fail "$bin is not for $machine"
    ! grep -qE 'INTERP|\(NEEDED\)' <<<"$headers" || fail "$bin is not statically linked"
    cmp -s "$work/$name/LICENSE-APACHE" LICENSE-APACHE || fail "$name holds another LICENSE-APACHE"
    answer=$($runner "$bin" --version)
    [ "$answer" = "retry-http $version" ] || fail "$bin --version said: $answer"
    $runner "$bin" -sS --deadline 20s -o "$work/$arch.got" "http://127.0.0.1:$port/$name/README.md"
    cmp "$work/$arch.got" README.md || fail "$bin fetched README.md wrong"
    echo "$name: --version and a GET${runner:+ under $runner}: ok"

    deb="$dist/retry-http_${version}-1_$arch.deb"
    echo "== $deb"
    dpkg-deb -I "$deb"
    [ "$(dpkg-deb -f "$deb" Package)" = retry-http ] || fail "$deb: Package"
    [ "$(dpkg-deb -f "$deb" Version)" = "$version-1" ] || fail "$deb: Version"
    [ "$(dpkg-deb -f "$deb" Architecture)" = "$arch" ] || fail "$deb: Architecture is not $arch"
    dpkg-deb -c "$deb" | awk '{print $6}' | grep -v '/$' | sort >"$work/$arch.list"
    cat "$work/$arch.list"
    for f in /usr/bin/retry-http /usr/share/man/man1/retry-http.1.gz /usr/share/man/man1/retry-http-simulate.1.gz \
        /usr/share/bash-completion/completions/retry-http /usr/share/zsh/vendor-completions/_retry-http \
        /usr/share/fish/vendor_completions.d/retry-http.fish /usr/share/doc/retry-http/README.md \
        /usr/share/doc/retry-http/copyright; do
        grep -qx "\.$f" "$work/$arch.list" || fail "$deb does not hold $f"
    done
    dpkg-deb -x "$deb" "$work/$arch-root"
    cmp -s "$work/$arch-root/usr/bin/retry-http" "$bin" || fail "$deb holds another binary than $name"
    grep -qx 'License: MIT or Apache-2.0' "$work/$arch-root/usr/share/doc/retry-http/copyright" ||
        fail "$deb: its copyright file has no 'License: MIT or Apache-2.0'"
done
# Both packages hold the same files.
cmp "$work/amd64.list" "$work/arm64.list" || fail "the two packages hold different files"

name="retry-http-$version-$WINDOWS_TARGET"
echo "== $name.zip"
unzip -l "$dist/$name.zip"
want=$(printf "$name/%s\n" "" retry-http.exe README.md LICENSE-MIT LICENSE-APACHE _retry-http.ps1 | sort)
[ "$(unzip -Z1 "$dist/$name.zip" | sort)" = "$want" ] || fail "$name.zip does not hold exactly: $want"
unzip -q "$dist/$name.zip" -d "$work"
exe="$work/$name/retry-http.exe"
x86_64-w64-mingw32-objdump -f "$exe" | grep -q 'file format pei-x86-64' || fail "$exe is not a PE32+ x86-64 executable"
cmp -s "$work/$name/_retry-http.ps1" completions/_retry-http.ps1 || fail "$name holds another PowerShell completion"
answer=$("$WINE" "$exe" --version | tr -d '\r')
[ "$answer" = "retry-http $version" ] || fail "$exe --version said: $answer"
"$WINE" "$exe" -sS --deadline 20s -o "$work/windows.got" "http://127.0.0.1:$port/$name/README.md"
cmp "$work/windows.got" README.md || fail "$exe fetched README.md wrong"
echo "$name: --version and a GET under Wine: ok"

echo "== the amd64 package, installed and removed (.ci/package.sh)"
bash .ci/package.sh "$dist/retry-http_${version}-1_amd64.deb"

echo "check-dist.sh: all checks passed"
