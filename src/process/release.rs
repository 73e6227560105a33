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
//! The detached child is built on Linux only (`pipe2`, `close_range`): elsewhere nothing is
//! released in the background, and large spools are freed by the exit, the ordinary way.

use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::sync::{Mutex, OnceLock};

/// Files larger than this are freed in the background at exit: below it, freeing takes
/// well under a millisecond.
#[cfg(target_os = "linux")]
const LARGE: u64 = 64 << 20;

fn registry() -> &'static Mutex<Vec<OwnedFd>> {
    static FILES: OnceLock<Mutex<Vec<OwnedFd>>> = OnceLock::new();
    FILES.get_or_init(|| Mutex::new(Vec::new()))
}

/// The device, inode and size of an open file.
fn identity(fd: RawFd) -> Option<(u64, u64, u64)> {
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
    #[cfg(target_os = "linux")]
    if let Ok(mut files) = registry().lock() {
        files.retain(large);
    }
    #[cfg(not(target_os = "linux"))]
    if let Ok(mut files) = registry().lock() {
        files.clear();
    }
}

/// Whether a descriptor refers to a file large enough to be worth freeing in the
/// background.
#[cfg(target_os = "linux")]
fn large(fd: &OwnedFd) -> bool {
    identity(fd.as_raw_fd()).is_some_and(|(_, _, size)| size >= LARGE)
}

/// At the end of the run: hands the large registered files to a detached child process
/// that frees them once this process has exited. Safe to call from any thread, more than
/// once; does nothing when no registered file is large.
#[cfg(target_os = "linux")]
pub fn release_at_exit() {
    let Ok(files) = registry().lock() else { return };
    let keep: Vec<RawFd> = files
        .iter()
        .filter(|f| large(f))
        .map(|f| f.as_raw_fd())
        .collect();
    if keep.is_empty() {
        return;
    }
    let mut pipe = [0 as RawFd; 2];
    // SAFETY: pipe2 fills two descriptors we then own.
    if unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return;
    }
    let (wait_end, exit_end) = (pipe[0], pipe[1]);
    let mut kept = keep.clone();
    kept.push(wait_end);
    kept.sort_unstable();
    // SAFETY: after fork the child calls only async-signal-safe functions (setsid, close,
    // close_range, read, _exit) on memory prepared before the fork.
    unsafe {
        match libc::fork() {
            0 => {
                libc::setsid();
                close_all_but(&kept);
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

/// Not on Linux: nothing is released in the background; the exit frees every file.
#[cfg(not(target_os = "linux"))]
pub fn release_at_exit() {}

/// Closes every descriptor but the sorted `keep` ones (in the child, after fork).
///
/// # Safety
/// Only for a freshly forked child: it closes descriptors that other code may own.
#[cfg(target_os = "linux")]
unsafe fn close_all_but(keep: &[RawFd]) {
    let mut from: u32 = 0;
    for &k in keep {
        let k = k as u32;
        if k > from {
            // SAFETY: the caller is a forked child that owns every descriptor.
            unsafe { close_range(from, k - 1) };
        }
        from = k + 1;
    }
    // SAFETY: as above.
    unsafe { close_range(from, u32::MAX) };
}

/// close_range(2), or a loop over the usual descriptor numbers where the kernel lacks it.
///
/// # Safety
/// As [`close_all_but`].
#[cfg(target_os = "linux")]
unsafe fn close_range(first: u32, last: u32) {
    // SAFETY: a plain system call on descriptor numbers.
    let done = unsafe { libc::syscall(libc::SYS_close_range, first, last, 0) } == 0;
    if !done {
        for fd in first..=last.min(4095) {
            // SAFETY: closing a descriptor number; EBADF for unused ones is harmless.
            unsafe { libc::close(fd as RawFd) };
        }
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
