//! Freeing large temporary files without making the exit wait for it.
//!
//! Removing a spool of several GB costs seconds: the file system frees its blocks (and, on
//! a disk mounted with `discard`, trims them) when the last descriptor of the file is
//! closed, and a process that exits closes its descriptors before its parent sees the exit
//! status. A run cut by its deadline must not end seconds late for that.
//!
//! So every spool is registered here when it is created (a duplicate of its descriptor is
//! kept), and at the end of the run, if any registered file is large, a small child process
//! is forked that holds those duplicates, closes everything else (stdout and stderr
//! included, so no pipe waits for it) and waits until this process is gone. The last close,
//! and the freeing, then happen in the child, after the exit status has been delivered. A
//! spool thrown away during the run keeps its disk space until the run ends.
//!
//! The child is forked on every Unix. Its pipe and its closing are Linux's calls on Linux
//! (`pipe2` with `O_CLOEXEC`, `close_range`); elsewhere, and on the portable paths (see
//! `platform`), `pipe` then `FD_CLOEXEC` on each end, and a `close` of every descriptor
//! number below the limit of open files (at most 65,536), from 0 up, so stdout and stderr
//! are closed first.

use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::sync::{Mutex, OnceLock};

/// Files larger than this are freed in the background at exit: below it, freeing takes
/// well under a millisecond.
const LARGE: u64 = 64 << 20;

/// The highest descriptor number the detached child closes one by one, where it cannot
/// close a range at once (the portable path, or a Linux kernel before 5.9), plus one: the
/// limit of open files, at most 65,536 (macOS's may be unlimited).
const MOST_CLOSED: u64 = 1 << 16;

fn registry() -> &'static Mutex<Vec<OwnedFd>> {
    static FILES: OnceLock<Mutex<Vec<OwnedFd>>> = OnceLock::new();
    FILES.get_or_init(|| Mutex::new(Vec::new()))
}

/// The device, inode and size (bytes) of an open file. The device's type is the
/// platform's (`dev_t`: a `u64` on Linux, an `i32` on macOS).
fn identity(fd: RawFd) -> Option<(libc::dev_t, libc::ino_t, u64)> {
    // SAFETY: fstat on an open descriptor, into a zeroed stat buffer.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        (libc::fstat(fd, &mut st) == 0).then_some((st.st_dev, st.st_ino, st.st_size as u64))
    }
}

/// Keeps a duplicate of `file`'s descriptor until the end of the run. When it cannot be
/// duplicated the file is freed the ordinary way, which is only slower.
pub fn register(file: &File) {
    if let (Ok(dup), Ok(mut files)) = (file.as_fd().try_clone_to_owned(), registry().lock()) {
        files.push(dup);
    }
}

/// Drops the duplicate kept for `file`: it is not a temporary any more (renamed into
/// place).
pub fn forget(file: &File) {
    let Some((dev, ino, _)) = identity(file.as_raw_fd()) else {
        return;
    };
    if let Ok(mut files) = registry().lock() {
        files.retain(|f| identity(f.as_raw_fd()).is_none_or(|(d, i, _)| (d, i) != (dev, ino)));
    }
}

/// Drops the duplicates kept for small files (below the size worth freeing in the
/// background): a batch calls it after each transfer, so that the spools of thousands of
/// finished transfers hold no descriptor and no disk space until the end of the run.
/// Closing a duplicate of a spool still in use only closes the duplicate.
pub fn forget_small() {
    if let Ok(mut files) = registry().lock() {
        files.retain(large);
    }
}

/// Whether a descriptor refers to a file large enough to be worth freeing in the
/// background.
fn large(fd: &OwnedFd) -> bool {
    identity(fd.as_raw_fd()).is_some_and(|(_, _, size)| size >= LARGE)
}

/// At the end of the run: hands the large registered files to a detached child process
/// that frees them once this process has exited. Safe to call from any thread, more than
/// once; does nothing when no registered file is large.
pub fn release_at_exit() {
    let Ok(files) = registry().lock() else { return };
    let mut kept: Vec<RawFd> = files
        .iter()
        .filter(|f| large(f))
        .map(|f| f.as_raw_fd())
        .collect();
    if kept.is_empty() {
        return;
    }
    let Some((wait_end, exit_end)) = pipe_closed_on_exec() else {
        return;
    };
    kept.push(wait_end);
    kept.sort_unstable();
    let closing = Closing {
        ranges: crate::platform::linux_calls(),
        below: open_limit(),
    };
    // SAFETY: after fork the child calls only async-signal-safe functions (setsid, close,
    // close_range, read, _exit) on memory prepared before the fork.
    unsafe {
        match libc::fork() {
            0 => {
                libc::setsid();
                close_all_but(&kept, closing);
                let mut byte = 0u8;
                // EOF once every copy of the other end is closed: this process has exited.
                while libc::read(wait_end, (&mut byte as *mut u8).cast(), 1) > 0 {}
                libc::_exit(0);
            }
            -1 => {
                libc::close(wait_end);
                libc::close(exit_end);
            }
            _ => {
                // The write end stays open until this process exits.
                libc::close(wait_end);
            }
        }
    }
}

/// A pipe whose two ends are closed on exec: `pipe2(O_CLOEXEC)` on Linux; elsewhere (and
/// on the portable paths) `pipe`, then `FD_CLOEXEC` on each end (between the two, a
/// program started by another thread would inherit the ends: none is started at exit).
fn pipe_closed_on_exec() -> Option<(RawFd, RawFd)> {
    let mut fds = [0 as RawFd; 2];
    #[cfg(target_os = "linux")]
    if crate::platform::linux_calls() {
        // SAFETY: pipe2 fills two descriptors we then own.
        let made = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == 0;
        return made.then_some((fds[0], fds[1]));
    }
    // SAFETY: pipe fills two descriptors we then own; fcntl sets a flag on each.
    unsafe {
        if libc::pipe(fds.as_mut_ptr()) != 0 {
            return None;
        }
        for fd in fds {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
    Some((fds[0], fds[1]))
}

/// The number of descriptor numbers the child closes one by one: the soft limit of open
/// files, at most [`MOST_CLOSED`] (read before the fork: the child only closes).
fn open_limit() -> u32 {
    // SAFETY: getrlimit writes the limit into a zeroed struct of ours.
    let soft = unsafe {
        let mut limit: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur
        } else {
            4096
        }
    };
    u32::try_from(soft.min(MOST_CLOSED)).unwrap_or(4096)
}

/// How the child closes what it does not keep.
#[derive(Clone, Copy)]
struct Closing {
    /// `close_range(2)` first (Linux's: read on Linux only).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    ranges: bool,
    /// One `close` per number below this, where there is no `close_range`.
    below: u32,
}

/// Closes every descriptor but the sorted `keep` ones (in the child, after fork).
///
/// # Safety
/// Only for a freshly forked child: it closes descriptors that other code may own.
unsafe fn close_all_but(keep: &[RawFd], how: Closing) {
    let mut from: u32 = 0;
    for &k in keep {
        let k = k as u32;
        if k > from {
            // SAFETY: the caller is a forked child that owns every descriptor.
            unsafe { close_range(from, k - 1, how) };
        }
        from = k + 1;
    }
    // SAFETY: as above.
    unsafe { close_range(from, u32::MAX, how) };
}

/// Closes the descriptors `first..=last`: close_range(2) on Linux; one close per number
/// below `how.below` where there is no close_range (the portable path, or an older kernel).
///
/// # Safety
/// As [`close_all_but`].
unsafe fn close_range(first: u32, last: u32, how: Closing) {
    #[cfg(target_os = "linux")]
    // SAFETY: a plain system call on descriptor numbers.
    if how.ranges && unsafe { libc::syscall(libc::SYS_close_range, first, last, 0) } == 0 {
        return;
    }
    for fd in first..=last.min(how.below.saturating_sub(1)) {
        // SAFETY: closing a descriptor number; EBADF for unused ones is harmless.
        unsafe { libc::close(fd as RawFd) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forgetting_drops_the_duplicate() {
        let f = tempfile::tempfile().unwrap();
        let me = identity(f.as_raw_fd()).map(|(d, i, _)| (d, i));
        let held = || {
            registry()
                .lock()
                .unwrap()
                .iter()
                .any(|g| identity(g.as_raw_fd()).map(|(d, i, _)| (d, i)) == me)
        };
        register(&f);
        assert!(held());
        forget(&f);
        assert!(!held());
    }
}
