#!/usr/bin/env bash
# The Debian package, end to end, on this machine (as root):
#   1. installs cargo-deb (pinned, from crates.io) under target/ci-tools, unless that version is there;
#   2. builds the package with the documented command, `cargo deb --target x86_64-unknown-linux-musl`
#      (or takes the one given as its argument), and checks its control fields and its file list
#      (`dpkg-deb -I`, `dpkg-deb -c`);
#   3. installs it with `dpkg -i` and checks what a user gets: `retry-http --version` from PATH
#      (/usr/bin/retry-http, a static binary), `man -w` for both man pages, the bash, zsh and fish
#      completions at Debian's paths, each loaded by its shell the way the shell finds it, `dpkg -s`;
#   4. removes it with `dpkg -r` and checks that none of its files is left;
#   5. checks that `cargo install --path .` still installs a working binary (into a temporary root).
# The machine is left as it was found, a failed check included: the trap removes the package and the
# temporary files. It refuses to start if the package, or a file at one of its paths, is already there.
#
# Needs: rustup's x86_64-unknown-linux-musl target (added here), and Debian's musl-tools (the C in
# ring), dpkg-dev (dpkg-shlibdeps, which finds that the static binary needs no library), man-db,
# bash-completion, zsh and fish. Missing ones are installed with apt-get, as `.ci/run` does.
#
# Usage: bash .ci/package.sh [PACKAGE.deb]   (from anywhere; it works in the repository that holds it)
set -euo pipefail
# A package already built (.ci/dist.sh's, from .ci/check-dist.sh) is checked as it is, not rebuilt.
GIVEN_DEB=${1:+$(realpath -e "$1")}
cd "$(dirname "$0")/.."

TARGET=x86_64-unknown-linux-musl
PKG=retry-http
# A plain PATH, so that --version is answered by the packaged /usr/bin/retry-http, not by a copy
# in ~/.cargo/bin or /usr/local/bin.
SYSTEM_PATH=/usr/sbin:/usr/bin:/sbin:/bin

# Where the package puts its files (the package's own list is checked against these too).
MAN_PAGES=(/usr/share/man/man1/retry-http.1.gz /usr/share/man/man1/retry-http-simulate.1.gz)
BASH_COMPLETION=/usr/share/bash-completion/completions/retry-http
ZSH_COMPLETION=/usr/share/zsh/vendor-completions/_retry-http
FISH_COMPLETION=/usr/share/fish/vendor_completions.d/retry-http.fish
BINARY=/usr/bin/retry-http
INSTALLED_FILES=("$BINARY" "${MAN_PAGES[@]}" "$BASH_COMPLETION" "$ZSH_COMPLETION" "$FISH_COMPLETION"
    /usr/share/doc/retry-http/README.md /usr/share/doc/retry-http/copyright)

step() { echo "== $*"; }
fail() {
    echo "package.sh: $*" >&2
    exit 1
}
# Runs "$@" and fails, naming the check, unless it succeeds.
check() {
    local what=$1
    shift
    "$@" || fail "check failed: $what"
}

[ "$(id -u)" -eq 0 ] || fail "must run as root (dpkg -i / dpkg -r)"

# --- prerequisites -------------------------------------------------------------------------------
missing=()
command -v musl-gcc >/dev/null || missing+=(musl-tools)
command -v dpkg-shlibdeps >/dev/null || missing+=(dpkg-dev)
command -v man >/dev/null || missing+=(man-db)
[ -f /usr/share/bash-completion/bash_completion ] || missing+=(bash-completion)
command -v zsh >/dev/null || missing+=(zsh)
command -v fish >/dev/null || missing+=(fish)
command -v readelf >/dev/null || missing+=(binutils)
if [ ${#missing[@]} -gt 0 ]; then
    step "apt-get install ${missing[*]}"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
rustup target list --installed | grep -qx "$TARGET" || rustup target add "$TARGET"
# ring's C for the musl target: the cc crate finds Debian's musl-gcc by itself. (Setting
# CC_x86_64_unknown_linux_musl here would only make ring build again for a plain `cargo build`.)

# --- the machine as found ------------------------------------------------------------------------
found=$(dpkg-query -W -f='${Status}' "$PKG" 2>/dev/null || true)
case "$found" in
    "" | *" not-installed") ;;
    *) fail "dpkg knows $PKG here ($found): this check would remove it (dpkg -P $PKG first)" ;;
esac
for f in "${INSTALLED_FILES[@]}"; do
    [ ! -e "$f" ] || fail "$f already exists: installing the package would replace it"
done

work=$(mktemp -d)
we_installed=no
cleanup() {
    local status=$?
    if [ "$we_installed" = yes ]; then
        dpkg -r "$PKG" >/dev/null 2>&1 || true
    fi
    # dpkg keeps a removed package's record while it has configuration files; this one has none,
    # but a purge makes sure that the database is as it was.
    if dpkg-query -W "$PKG" >/dev/null 2>&1; then
        dpkg -P "$PKG" >/dev/null 2>&1 || true
    fi
    rm -rf "$work"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- build ---------------------------------------------------------------------------------------
if [ -n "$GIVEN_DEB" ]; then
    deb=$GIVEN_DEB
    step "the package $deb"
else
    source .ci/cargo-deb.sh
    step "cargo deb --target $TARGET"
    started=$SECONDS
    cargo deb --target "$TARGET" --locked | tee "$work/cargo-deb.out"
    deb=$(tail -n 1 "$work/cargo-deb.out")
    [ -f "$deb" ] || fail "cargo deb did not name the package it wrote (last line: $deb)"
    echo "built $deb ($(stat -c %s "$deb") bytes) in $((SECONDS - started)) s"
fi

step "the package's fields and files"
version=$(cargo metadata --no-deps --format-version 1 --locked |
    python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "retry-http"))')
dpkg-deb -I "$deb"
field() { dpkg-deb -f "$deb" "$1"; }
check "Package is $PKG" test "$(field Package)" = "$PKG"
check "Version is $version-1" test "$(field Version)" = "$version-1"
check "Architecture is amd64" test "$(field Architecture)" = amd64
# A static binary needs no shared library: no Depends at all, not even libc6.
check "no Depends (static binary)" test -z "$(field Depends)"
dpkg-deb -c "$deb" | tee "$work/contents"
for f in "${INSTALLED_FILES[@]}"; do
    check "the package holds $f" grep -q " \.$f\$" "$work/contents"
done
# Man pages gzipped as Debian policy asks; nothing outside /usr.
check "only files under /usr" test -z "$(awk '{print $6}' "$work/contents" | grep -v '^\./usr/' | grep -v '^\./$')"
dpkg-deb -x "$deb" "$work/root"
check "the binary is statically linked (no program interpreter)" \
    bash -c "! readelf -l '$work/root$BINARY' | grep -q 'Requesting program interpreter'"
check "the binary is statically linked (no shared library)" \
    bash -c "! readelf -d '$work/root$BINARY' | grep -q '(NEEDED)'"

# --- install -------------------------------------------------------------------------------------
# Docker-style images exclude /usr/share/man (and docs) in /etc/dpkg/dpkg.cfg.d; the man pages are
# part of what is checked, so this package's are included again (a later option wins in dpkg).
include=()
if grep -rqsE '^path-exclude[= ]+/usr/share/(man|doc)' /etc/dpkg/dpkg.cfg.d; then
    echo "this machine's dpkg excludes paths under /usr/share: including this package's again"
    include=(--path-include='/usr/share/man/man1/retry-http*' --path-include='/usr/share/doc/retry-http/*')
fi
step "dpkg -i"
we_installed=yes
dpkg "${include[@]}" -i "$deb"

step "what the package installed"
check "dpkg -s says installed" bash -c "dpkg -s '$PKG' | tee '$work/status' | grep -qx 'Status: install ok installed'"
cat "$work/status"
for f in "${INSTALLED_FILES[@]}"; do
    check "$f is installed" test -f "$f"
done
# The licence, in Debian's machine-readable form (DEP-5): the package's licence as Debian writes
# an alternative, then each licence's paragraph, the MIT text in full and Apache-2.0 by reference
# to the copy every Debian system holds.
copyright=/usr/share/doc/retry-http/copyright
check "copyright is machine-readable (DEP-5)" \
    grep -qx 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' "$copyright"
for line in 'Files: \*' 'License: MIT or Apache-2.0' 'License: MIT' 'License: Apache-2.0' \
    ' Permission is hereby granted, free of charge, .*' '.*"/usr/share/common-licenses/Apache-2.0"\.'; do
    check "copyright has the line '$line'" grep -qx "$line" "$copyright"
done
check "the licence copyright refers to is on this system" test -f /usr/share/common-licenses/Apache-2.0
check "$BINARY is what PATH finds" test "$(PATH=$SYSTEM_PATH command -v retry-http)" = "$BINARY"
answer=$(PATH=$SYSTEM_PATH retry-http --version)
echo "retry-http --version: $answer"
check "--version names version $version" test "$answer" = "retry-http $version"

for page in retry-http retry-http-simulate; do
    where=$(man -w "$page") || fail "man -w $page found nothing"
    echo "man -w $page: $where"
    check "man -w $page is the packaged page" test "$where" = "/usr/share/man/man1/$page.1.gz"
    # The page renders without a complaint from groff (man reads it as a user would).
    MANWIDTH=80 man -P cat "$page" >"$work/$page.txt" 2>"$work/$page.err" ||
        fail "man $page failed: $(cat "$work/$page.err")"
    check "man $page renders without warnings" test ! -s "$work/$page.err"
    check "man $page shows its NAME section" grep -q "^NAME" "$work/$page.txt"
done

# Each shell finds the completion the way it finds any packaged one, with no user configuration:
# bash through bash-completion's loader (by command name), zsh through compinit over its default
# fpath, fish through its default completion path (vendor_completions.d). Each must offer simulate's --clients.
bash_offers=$(HOME=$work PATH=$SYSTEM_PATH bash --norc --noprofile -c '
    source /usr/share/bash-completion/bash_completion
    __load_completion retry-http || exit 1
    fn=$(complete -p retry-http | sed -n "s/.*-F \([^ ]*\).*/\1/p")
    COMP_WORDS=(retry-http simulate --cl); COMP_CWORD=2
    "$fn" retry-http --cl simulate
    printf "%s\n" "${COMPREPLY[@]}"') || fail "bash could not load $BASH_COMPLETION"
check "bash offers --clients after 'retry-http simulate --cl'" grep -qx -- --clients <<<"$bash_offers"
check "zsh parses $ZSH_COMPLETION" zsh -n "$ZSH_COMPLETION"
zsh_function=$(HOME=$work PATH=$SYSTEM_PATH zsh -f -c '
    autoload -Uz compinit && compinit -u -D && print -r -- "${_comps[retry-http]}"')
check "zsh's compinit binds retry-http to _retry-http (got '$zsh_function')" test "$zsh_function" = _retry-http
check "fish sources $FISH_COMPLETION" env HOME="$work" fish --no-config -c "source $FISH_COMPLETION"
# Not --no-config: that skips fish's own start-up, which sets the completion path. A fresh HOME
# and XDG folders keep any user's configuration out.
fish_offers=$(HOME=$work XDG_CONFIG_HOME=$work/config XDG_DATA_HOME=$work/data PATH=$SYSTEM_PATH \
    fish -c 'complete -C "retry-http simulate --cl"' | cut -f1)
check "fish offers --clients after 'retry-http simulate --cl'" grep -qx -- --clients <<<"$fish_offers"

# --- remove --------------------------------------------------------------------------------------
step "dpkg -r"
dpkg -r "$PKG"
we_installed=no
for f in "${INSTALLED_FILES[@]}"; do
    check "$f is gone" test ! -e "$f"
done
check "the package's doc folder is gone" test ! -e /usr/share/doc/retry-http
check "dpkg no longer lists $PKG as installed" \
    bash -c "! dpkg-query -W -f='\${Status}' '$PKG' 2>/dev/null | grep -q ' installed'"
check "man -w retry-http finds nothing" bash -c "! man -w retry-http >/dev/null 2>&1"

# --- cargo install --path . ----------------------------------------------------------------------
# The same manifest through cargo's own installer, into a temporary root. For the musl target it
# reuses the build above; `cargo install --path .` with the host's target is the same command on
# the dynamic build (a full release build of its own, minutes on CI).
step "cargo install --path . --root TMP --target $TARGET"
cargo install --path . --locked --root "$work/cargo-root" --target "$TARGET" --quiet
check "cargo install's binary answers --version" \
    test "$("$work/cargo-root/bin/retry-http" --version)" = "retry-http $version"

echo "package.sh: all checks passed"
