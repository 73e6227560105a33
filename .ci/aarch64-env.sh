# The cross build for aarch64-unknown-linux-musl on an x86-64 Debian 12 machine, sourced by
# .ci/arm64.sh and .ci/dist.sh (`source .ci/aarch64-env.sh`, from the repository's root):
#   - installs what it needs when missing: rustup's target, and Debian 12's
#     gcc-aarch64-linux-gnu (ring's C; pinned to bookworm's version) and qemu-user-static (the
#     emulator, pinned to bookworm's 7.2 and its security updates), with apt-get;
#   - exports the settings that depend on this machine: the C compiler for ring, and qemu as
#     cargo's runner (`cargo test --target aarch64-unknown-linux-musl` runs the tests through
#     it) and as the smoke tests' runner (tests/it/common.rs).
# The settings that do not depend on the machine (rust-lld as the linker, the relocation model)
# are in .cargo/config.toml. docs/install.md has the same commands for a user.

AARCH64_TARGET=aarch64-unknown-linux-musl
AARCH64_APT=(gcc-aarch64-linux-gnu=4:12.2.0-3 'qemu-user-static=1:7.2+dfsg-7+deb12u*')

rustup target list --installed | grep -qx "$AARCH64_TARGET" || rustup target add "$AARCH64_TARGET"
if ! command -v aarch64-linux-gnu-gcc >/dev/null || ! command -v qemu-aarch64-static >/dev/null; then
    echo "== apt-get install ${AARCH64_APT[*]}"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${AARCH64_APT[@]}" >/dev/null
fi

# ring's build script compiles its C and assembly with this (the cc crate reads CC_<target>).
export CC_aarch64_unknown_linux_musl=aarch64-linux-gnu-gcc
# No binfmt_misc registration is assumed (containers often have none): qemu is named.
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_RUNNER=qemu-aarch64-static
AARCH64_BIN="target/$AARCH64_TARGET/release/retry-http"
