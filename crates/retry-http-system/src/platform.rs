//! Which of two paths a platform-specific step takes: the Linux-only system calls, or the
//! portable one every Unix has (and macOS takes). A leaf: it uses nothing of the workspace.
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

// What Unix has and Windows has not. On Windows (`x86_64-pc-windows-gnu`, and MSVC) there
// are no FIFOs, sockets or devices in the file system that `std::fs` shows (a named pipe
// lives under `\\.\pipe\`, which retry-http never opens as a file of its own), no file
// modes (a file's read-only flag is all), no `O_NOFOLLOW`/`O_NONBLOCK` opens: the answers
// below say so, and docs/install.md lists what differs.

/// Whether `t` is a Unix domain socket (never on Windows: one is not seen as a file type).
pub fn is_socket(t: &std::fs::FileType) -> bool {
    #[cfg(unix)]
    return std::os::unix::fs::FileTypeExt::is_socket(t);
    #[cfg(not(unix))]
    return {
        let _ = t;
        false
    };
}

/// What a file type that is neither a file, a folder nor a link is, in words ("a FIFO", "a
/// socket", "a character device", "a block device"), if it is one of those (never on
/// Windows).
pub fn special_kind(t: &std::fs::FileType) -> Option<&'static str> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            Some("a FIFO")
        } else if t.is_socket() {
            Some("a socket")
        } else if t.is_char_device() {
            Some("a character device")
        } else if t.is_block_device() {
            Some("a block device")
        } else {
            None
        }
    }
    #[cfg(not(unix))]
    {
        let _ = t;
        None
    }
}

/// Whether `e` says that symbolic links form a loop (`ELOOP`; on Windows
/// `ERROR_CANT_RESOLVE_FILENAME`, 1921).
pub fn is_link_loop(e: &std::io::Error) -> bool {
    #[cfg(unix)]
    return e.raw_os_error() == Some(libc::ELOOP);
    #[cfg(not(unix))]
    return e.raw_os_error() == Some(1921);
}

/// Reads exactly `buf.len()` bytes of `file` from `offset` on, leaving the file's position
/// where it was (`pread` on Unix; on Windows `seek_read`, which moves the position, then
/// the position put back).
///
/// Errors: the system's, or `UnexpectedEof` when the file ends first.
pub fn read_exact_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    return std::os::unix::fs::FileExt::read_exact_at(file, buf, offset);
    #[cfg(windows)]
    return {
        use std::io::{Seek, SeekFrom};
        use std::os::windows::fs::FileExt;
        let mut handle = file;
        let at = handle.stream_position()?;
        let (mut buf, mut offset) = (buf, offset);
        let mut read = Ok(());
        while !buf.is_empty() {
            match file.seek_read(buf, offset) {
                Ok(0) => {
                    read = Err(std::io::ErrorKind::UnexpectedEof.into());
                    break;
                }
                Ok(n) => {
                    buf = &mut buf[n..];
                    offset += n as u64;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    read = Err(e);
                    break;
                }
            }
        }
        handle.seek(SeekFrom::Start(at))?;
        read
    };
}

/// Writes all of `buf` into `file` at `offset`, leaving the file's position where it was
/// (`pwrite` on Unix; on Windows `seek_write`, then the position put back).
///
/// Errors: the system's.
pub fn write_all_at(file: &std::fs::File, buf: &[u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    return std::os::unix::fs::FileExt::write_all_at(file, buf, offset);
    #[cfg(windows)]
    return {
        use std::io::{Seek, SeekFrom};
        use std::os::windows::fs::FileExt;
        let mut handle = file;
        let at = handle.stream_position()?;
        let (mut buf, mut offset) = (buf, offset);
        let mut wrote = Ok(());
        while !buf.is_empty() {
            match file.seek_write(buf, offset) {
                Ok(0) => {
                    wrote = Err(std::io::ErrorKind::WriteZero.into());
                    break;
                }
                Ok(n) => {
                    buf = &buf[n..];
                    offset += n as u64;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    wrote = Err(e);
                    break;
                }
            }
        }
        handle.seek(SeekFrom::Start(at))?;
        wrote
    };
}

/// A socket's number, which `splice` (Linux only) reads: a descriptor on Unix, a `SOCKET`
/// on Windows.
#[cfg(unix)]
pub use std::os::fd::RawFd;
/// See the Unix one.
#[cfg(windows)]
pub type RawFd = std::os::windows::io::RawSocket;

/// The number of socket `s` (see [`RawFd`]).
#[cfg(unix)]
pub fn raw_fd(s: &impl std::os::fd::AsRawFd) -> RawFd {
    s.as_raw_fd()
}

/// The number of socket `s` (see [`RawFd`]).
#[cfg(windows)]
pub fn raw_fd(s: &impl std::os::windows::io::AsRawSocket) -> RawFd {
    s.as_raw_socket()
}

/// `--unix-socket PATH` can be honoured: always on Unix.
///
/// Errors: on Windows, one line saying that Unix sockets are not supported there.
pub fn unix_sockets(path: &std::path::Path) -> Result<(), String> {
    if cfg!(windows) {
        return Err(format!(
            "--unix-socket {}: Unix sockets are not supported on Windows: use a TCP address",
            path.display()
        ));
    }
    Ok(())
}

#[cfg(unix)]
pub use std::os::unix::net::UnixStream;

/// Windows: std has no Unix domain sockets, so `--unix-socket` and `redis+unix://` are
/// refused there ([`UnixStream::connect`] says so). The type has no value: every other
/// method is never reached.
#[cfg(windows)]
pub enum UnixStream {}

#[cfg(windows)]
impl UnixStream {
    /// Errors: always (`Unsupported`): Windows' build has no Unix sockets.
    pub fn connect(_: impl AsRef<std::path::Path>) -> std::io::Result<UnixStream> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "Unix sockets are not supported on Windows: use a TCP address",
        ))
    }
    pub fn set_read_timeout(&self, _: Option<std::time::Duration>) -> std::io::Result<()> {
        match *self {}
    }
    pub fn set_write_timeout(&self, _: Option<std::time::Duration>) -> std::io::Result<()> {
        match *self {}
    }
    pub fn set_nonblocking(&self, _: bool) -> std::io::Result<()> {
        match *self {}
    }
    pub fn shutdown(&self, _: std::net::Shutdown) -> std::io::Result<()> {
        match *self {}
    }
}

#[cfg(windows)]
impl std::os::windows::io::AsRawSocket for UnixStream {
    fn as_raw_socket(&self) -> RawFd {
        match *self {}
    }
}

#[cfg(windows)]
impl std::io::Read for &UnixStream {
    fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
        match **self {}
    }
}

#[cfg(windows)]
impl std::io::Write for &UnixStream {
    fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
        match **self {}
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match **self {}
    }
}

#[cfg(windows)]
impl std::io::Read for UnixStream {
    fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
        match *self {}
    }
}

#[cfg(windows)]
impl std::io::Write for UnixStream {
    fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
        match *self {}
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match *self {}
    }
}
