//! Which of two paths a platform-specific step takes: the Linux-only system calls, or the
//! portable one every Unix has (and macOS takes). A leaf: it uses nothing of the crate.
//!
//! The Linux-only calls and their portable paths:
//! - a plain body moved from the socket into its file by `splice(2)` (`http::splice`):
//!   elsewhere, the copy loop reads every body (`http::receive`);
//! - stdout's pipe enlarged to 1 MiB with `F_SETPIPE_SZ` (`output`): elsewhere, the
//!   system's pipe size;
//! - a spooled request body opened again through `/proc/self/fd` (`http::body`):
//!   elsewhere, copied into a spool of its own;
//! - large spools freed after the exit by a detached child (`process::release`): the child
//!   is forked on every Unix; on Linux its pipe comes from `pipe2(O_CLOEXEC)` and it closes
//!   what it does not keep with `close_range(2)`; elsewhere `pipe` then `FD_CLOEXEC`, and a
//!   `close` of each descriptor number below the limit of open files;
//! - glibc's `mallopt` tuning at start (`lib`): elsewhere the allocator's defaults.
//!
//! So that what macOS runs is what the tests ran, a debug build on Linux takes the portable
//! paths when its environment holds `RETRY_HTTP_TEST_PORTABLE=1` (read once, at the first
//! question): the test suite runs its integration tests of these steps both ways
//! (tests/it/portable.rs). A release build never reads the variable: there the answer is a
//! constant, and the Linux paths are all that is compiled in.

/// The variable that makes a debug build on Linux take the portable paths (the value `1`).
#[cfg_attr(not(debug_assertions), allow(dead_code))]
pub const TEST_SWITCH: &str = "RETRY_HTTP_TEST_PORTABLE";

/// Whether the Linux-only system calls are to be made: on Linux, unless a debug build was
/// told to take the portable paths (see the module's comment); never elsewhere.
pub fn linux_calls() -> bool {
    cfg!(target_os = "linux") && !forced_portable()
}

/// Whether a debug build's environment asks for the portable paths (read once per run).
#[cfg(debug_assertions)]
fn forced_portable() -> bool {
    static FORCED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FORCED.get_or_init(|| std::env::var_os(TEST_SWITCH).is_some_and(|v| v == "1"))
}

/// A release build: never (the variable is not read).
#[cfg(not(debug_assertions))]
fn forced_portable() -> bool {
    false
}
