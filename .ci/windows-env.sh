# The cross build for x86_64-pc-windows-gnu on an x86-64 Debian 12 machine, and Wine to run
# it, sourced by .ci/windows.sh and .ci/dist.sh (`source .ci/windows-env.sh`, from the
# repository's root):
#   - installs what it needs when missing: rustup's target, and Debian 12's
#     gcc-mingw-w64-x86-64 (the linker, and ring's C; pinned to bookworm's version), wine64
#     (pinned to bookworm's 8.0), zip and unzip (the release archive), with apt-get;
#   - makes a Wine prefix of its own in target/wine/prefix, with the stub
#     bcryptprimitives.dll that Wine 8 lacks (.ci/windows/processprng.c: Rust's std asks its
#     ProcessPrng for random bytes before main);
#   - exports Wine as cargo's runner (`cargo test --target x86_64-pc-windows-gnu` runs the
#     tests through it) and as the smoke tests' runner (tests/it/common.rs).
# docs/install.md has the build's commands for a user.

WINDOWS_TARGET=x86_64-pc-windows-gnu
WINDOWS_APT=(gcc-mingw-w64-x86-64='12.2.0-14+25.2' 'wine64=8.0~repack-4' 'zip=3.0-13*' 'unzip=6.0-28*')
WINE=/usr/lib/wine/wine64

rustup target list --installed | grep -qx "$WINDOWS_TARGET" || rustup target add "$WINDOWS_TARGET"
if ! command -v x86_64-w64-mingw32-gcc >/dev/null || [ ! -x "$WINE" ] ||
    ! command -v zip >/dev/null || ! command -v unzip >/dev/null; then
    echo "== apt-get install ${WINDOWS_APT[*]}"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${WINDOWS_APT[@]}" >/dev/null
fi

# Wine's own prefix, quiet, made once (wineboot takes a few seconds), and the stub DLL put in
# its system32 whenever its source is newer.
export WINEPREFIX="$PWD/target/wine/prefix"
export WINEDEBUG=-all
# No window and no prompt to install Mono or Gecko (nothing here needs them).
export WINEDLLOVERRIDES="mscoree=;mshtml="
if [ ! -f "$WINEPREFIX/system.reg" ]; then
    echo "== wineboot (a Wine prefix in $WINEPREFIX)"
    mkdir -p "$WINEPREFIX"
    "$WINE" wineboot -i >/dev/null 2>&1
fi
stub="$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll"
if [ ! -f "$stub" ] || [ .ci/windows/processprng.c -nt "$stub" ]; then
    x86_64-w64-mingw32-gcc -O2 -s -shared -o "$stub" \
        .ci/windows/processprng.c .ci/windows/processprng.def -ladvapi32
fi

# One wineserver for all the runs, kept running (-p) until `wineserver -k`: otherwise each
# run that finds none starts one, and its services, which costs up to 4.8 s at a load
# average of 15 (tests/it/smoke.rs has the times).
# One left by an earlier run of this prefix (its own, in target/wine) is ended first: -p
# refuses to start beside it.
WINESERVER=/usr/lib/wine/wineserver
"$WINESERVER" -k 2>/dev/null || true
"$WINESERVER" -p
# Its services (winedevice.exe...) start with the first program and keep what that program
# inherited: started here, with nothing but /dev/null, they hold no pipe a test reads to its end.
"$WINE" wineboot >/dev/null 2>&1 </dev/null

export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER="$WINE"
WINDOWS_BIN="target/$WINDOWS_TARGET/release/retry-http.exe"
