//! The bulk of a plain-HTTP body of known length, moved from the socket to the spool file
//! by the kernel: `splice(2)` from the socket into a pipe, then from the pipe into the
//! file, so the bytes never cross into this process (one copy fewer than `read` + `write`,
//! and none of ureq's buffering).
//!
//! ureq has already read the head, and often the first bytes of the body with it, into its
//! own buffer. Those come first, through ureq as usual. To know where they end, the
//! transport's tap is armed: the next time ureq asks the socket for more, the transport
//! refuses and notes that the rest is handed over (see `tap`); from there the socket is read
//! here, exactly the bytes the Content-Length still promises, and never one more.
//!
//! Everything the copy loop of `receive` checks is checked here too, between pipe-fulls:
//! the attempt's time and `--stall-timeout` (as the socket's receive timeout: a splice
//! that waits longer fails as ureq's read would), `-Y`/`-y`, `--max-filesize`, and the
//! progress line. A body cut short is the same failure, in the same words, as on the
//! other path. The deadline and signals end a splice in flight as they end a read: the
//! socket is shut down (see `Agent::shutdown`), and the splice returns.
//!
//! `splice(2)`, `pipe2(2)` and `F_SETPIPE_SZ` are Linux's: this module is built on Linux
//! only. Elsewhere the tap is never armed, and every body goes through `receive`'s copy
//! loop.

use crate::http::failure::{Failure, Stage, classify, classify_io, max_filesize, write_failed};
use crate::http::speed::SpeedCheck;
use crate::http::tap::Wired;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

/// The most moved by one splice, in bytes: the pipe is asked to hold this much (the
/// kernel's default `pipe-max-size`); where it may not, it keeps its default 64 KiB.
const PIPE_BYTES: usize = 1 << 20;

/// What the splice loop reports to, and checks against, as the copy loop does.
pub(crate) struct Checks<'a> {
    pub(crate) limit: Option<u64>,
    pub(crate) speed: Option<&'a mut SpeedCheck>,
    pub(crate) progress: &'a mut dyn FnMut(u64),
}

/// Moves the rest of a body, `left` bytes, from `wire`'s socket to the end of `file`,
/// `done` bytes having been written already. Returns the body's bytes written in all.
pub(crate) fn rest(
    wire: &Wired,
    file: &File,
    done: u64,
    left: u64,
    checks: Checks<'_>,
) -> Result<u64, Failure> {
    let Checks {
        limit,
        mut speed,
        progress,
    } = checks;
    let mut pipe = Pipe::new().map_err(|e| write_failed(&e))?;
    let mut total = done;
    let mut left = left;
    while left > 0 {
        let waited = wire.receive_limit()?;
        let want = usize::try_from(left).unwrap_or(usize::MAX).min(pipe.size);
        let n = match pipe.fill(wire.socket.fd(), want) {
            Ok(0) => {
                return Err(classify_io(
                    &io::Error::new(io::ErrorKind::UnexpectedEof, "Peer disconnected"),
                    Stage::Body,
                ));
            }
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                let f = classify(&ureq::Error::Timeout(waited), Stage::Body);
                return Err(match speed {
                    Some(check) => check.timed_out(f, Instant::now()),
                    None => f,
                });
            }
            Err(e) => return Err(classify_io(&e, Stage::Body)),
        };
        if let Some(check) = speed.as_deref_mut() {
            check.observe(n as u64, Instant::now())?;
        }
        total += n as u64;
        left -= n as u64;
        max_filesize(total, limit)?;
        pipe.drain(file, n).map_err(|e| write_failed(&e))?;
        progress(total);
    }
    Ok(total)
}

impl Wired {
    /// Sets the socket's receive timeout to what is left: the attempt's time or the stall
    /// limit, whichever ends first; says which, to name it if it runs out.
    fn receive_limit(&self) -> Result<ureq::Timeout, Failure> {
        let now = Instant::now();
        let attempt = self.until.map(|u| u.saturating_duration_since(now));
        if attempt.is_some_and(|a| a.is_zero()) {
            return Err(classify(
                &ureq::Error::Timeout(ureq::Timeout::Global),
                Stage::Body,
            ));
        }
        let (limit, which) = match (attempt, self.stall) {
            (Some(a), Some(s)) if s < a => (Some(s), ureq::Timeout::PerRead),
            (Some(a), _) => (Some(a), ureq::Timeout::Global),
            (None, Some(s)) => (Some(s), ureq::Timeout::PerRead),
            (None, None) => (None, ureq::Timeout::Global),
        };
        // A zero timeout would mean none at all.
        let limit = limit.map(|l| l.max(Duration::from_millis(1)));
        self.socket
            .set_read_timeout(limit)
            .map_err(|e| classify_io(&e, Stage::Body))?;
        Ok(which)
    }
}

/// The pipe between the socket and the file.
struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
    /// Its capacity, in bytes.
    size: usize,
    /// The file refused splice (EINVAL: a file system without it, `O_APPEND`): the pipe is
    /// emptied with read and write instead.
    copy: bool,
}

impl Pipe {
    fn new() -> io::Result<Pipe> {
        let mut fds = [0; 2];
        // SAFETY: `fds` is two ints, as pipe2 wants; on success both are ours to own.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both descriptors were just opened and are owned by nobody else.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let want = libc::c_int::try_from(PIPE_BYTES).unwrap_or(libc::c_int::MAX);
        // SAFETY: F_SETPIPE_SZ takes an int; a refusal leaves the pipe as it was.
        let set = unsafe { libc::fcntl(write.as_raw_fd(), libc::F_SETPIPE_SZ, want) };
        // SAFETY: F_GETPIPE_SZ takes no argument.
        let got = unsafe { libc::fcntl(write.as_raw_fd(), libc::F_GETPIPE_SZ) };
        let size = usize::try_from(if set > 0 { set } else { got }).unwrap_or(0);
        Ok(Pipe {
            read,
            write,
            size: size.max(4096),
            copy: false,
        })
    }

    /// Splices at most `want` bytes from `socket` into the pipe (which is empty): the
    /// bytes moved, 0 at the end of the stream. Waits at most the socket's receive timeout
    /// (then `WouldBlock`).
    fn fill(&self, socket: RawFd, want: usize) -> io::Result<usize> {
        loop {
            // SAFETY: both descriptors are open; null offsets mean "the current position",
            // which a socket and a pipe require.
            let n = unsafe {
                libc::splice(
                    socket,
                    std::ptr::null_mut(),
                    self.write.as_raw_fd(),
                    std::ptr::null_mut(),
                    want,
                    libc::SPLICE_F_MOVE,
                )
            };
            match usize::try_from(n) {
                Ok(n) => return Ok(n),
                Err(_) => {
                    let e = io::Error::last_os_error();
                    if e.kind() != io::ErrorKind::Interrupted {
                        return Err(e);
                    }
                }
            }
        }
    }

    /// Moves all `n` bytes in the pipe to `file`, at its position.
    fn drain(&mut self, file: &File, mut n: usize) -> io::Result<()> {
        while n > 0 {
            let moved = if self.copy {
                self.copy_out(file, n)?
            } else {
                // SAFETY: as in `fill`; the file's own position is used and advanced.
                let r = unsafe {
                    libc::splice(
                        self.read.as_raw_fd(),
                        std::ptr::null_mut(),
                        file.as_raw_fd(),
                        std::ptr::null_mut(),
                        n,
                        libc::SPLICE_F_MOVE,
                    )
                };
                match usize::try_from(r) {
                    Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
                    Ok(m) => m,
                    Err(_) => {
                        let e = io::Error::last_os_error();
                        match e.raw_os_error() {
                            Some(libc::EINTR) => continue,
                            Some(libc::EINVAL) => {
                                self.copy = true;
                                continue;
                            }
                            _ => return Err(e),
                        }
                    }
                }
            };
            n -= moved;
        }
        Ok(())
    }

    /// Reads at most `n` bytes out of the pipe and writes them all to `file`.
    fn copy_out(&self, file: &File, n: usize) -> io::Result<usize> {
        use std::io::{Read, Write};
        let mut buf = vec![0u8; n.min(64 * 1024)];
        let mut pipe = File::from(self.read.try_clone()?);
        let got = loop {
            match pipe.read(&mut buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other?,
            }
        };
        if got == 0 {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
        }
        (&*file).write_all(&buf[..got])?;
        Ok(got)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// Puts `data` into the pipe, as a splice from the socket would.
    fn filled(data: &[u8]) -> Pipe {
        let pipe = Pipe::new().expect("pipe");
        let mut w = File::from(pipe.write.try_clone().expect("dup"));
        w.write_all(data).expect("fill the pipe");
        pipe
    }

    #[test]
    fn the_pipe_is_emptied_into_the_file_at_its_position() {
        let data: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
        let mut pipe = filled(&data);
        assert!(pipe.size >= 64 * 1024, "{}", pipe.size);
        let mut file = tempfile::tempfile().expect("file");
        file.write_all(b"head:").expect("head");
        pipe.drain(&file, data.len()).expect("drain");
        assert!(!pipe.copy, "a plain file takes a splice");
        let mut back = Vec::new();
        use std::io::Seek;
        file.rewind().expect("rewind");
        file.read_to_end(&mut back).expect("read");
        assert_eq!(&back[..5], b"head:");
        assert!(back[5..] == data[..]);
    }

    #[test]
    fn a_file_that_refuses_splice_is_written_instead() {
        // splice(2) into a file opened with O_APPEND is EINVAL.
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("appended");
        std::fs::write(&path, b"kept:").expect("write");
        let file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .expect("open");
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 241) as u8).collect();
        let mut pipe = filled(&data[..60_000]);
        pipe.drain(&file, 60_000).expect("drain");
        assert!(pipe.copy, "the refusal was not noticed");
        let mut w = File::from(pipe.write.try_clone().expect("dup"));
        w.write_all(&data[60_000..]).expect("fill again");
        pipe.drain(&file, 40_000).expect("drain again");
        let back = std::fs::read(&path).expect("read");
        assert_eq!(&back[..5], b"kept:");
        assert!(back[5..] == data[..]);
    }
}
