//! The files the run makes or keeps for itself, under one rule: the Redis Cluster's
//! slot-owner cache and its temporary file, the state file (once `--state`'s link is
//! followed), its lock and its temporary files, `-C -`'s leftover bytes and their record, and
//! the temporary files of `-o`, `--etag-save` and the leftover's record. Files the user names
//! (`-K`, `-H @`, `-d @`, `--cacert`, netrc, `-b`, `-o`, `-D`) follow their flags' rules
//! instead: a FIFO or a pipe is allowed there, bounded by the deadline.
//!
//! - A new file is created exclusively, under a name of this run's own with random letters
//!   (`O_CREAT | O_EXCL`, as [`temp_beside`] makes it): an exclusive create never follows a
//!   symbolic link, so nothing put at a name in advance is written through or truncated.
//! - An existing one is opened without following a link in its last step (`O_NOFOLLOW`) and
//!   without blocking (`O_NONBLOCK`: a FIFO with no writer opens at once), then refused
//!   unless what was opened is a regular file (`fstat`, so nothing swapped in between is
//!   read): see [`open`].
//! - It is read within a size bound, each kind's own ([`read`]); a regular file's read
//!   does not wait for a writer, so it ends within the operation's time bound too.
//! - It is replaced by rename, which replaces the name: a link there is replaced, never
//!   followed; a folder there makes the rename fail.
//!
//! The state file's lock is the one file opened for good rather than replaced: created when
//! missing without `O_EXCL` (runs share it), but still `O_NOFOLLOW`, so a dangling link at
//! its name is refused, not created through ([`Access::Lock`]).

use std::fs::File;
use std::io;
use std::path::Path;
use tempfile::NamedTempFile;

/// How a file of the run's own is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read only.
    Read,
    /// Read and written in place (`-C -`'s claimed bytes, which the download completes).
    ReadWrite,
    /// Written, created when missing and never truncated: the state file's lock.
    Lock,
}

/// What lies at a path where a regular file of the run's own was expected: "a FIFO", "a
/// symbolic link"... It is the inner error of the `io::Error` [`open`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotRegular(pub &'static str);

impl std::fmt::Display for NotRegular {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "is {}, not a regular file", self.0)
    }
}

impl std::error::Error for NotRegular {}

impl NotRegular {
    /// The refusal inside `e`, when `e` is one.
    pub fn of(e: &io::Error) -> Option<NotRegular> {
        e.get_ref()?.downcast_ref::<NotRegular>().copied()
    }

    fn error(self) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidInput, self)
    }
}

/// What a file type is, in words, for a path that must be a regular file and is not.
pub fn kind(t: std::fs::FileType) -> &'static str {
    if t.is_symlink() {
        "a symbolic link"
    } else if t.is_dir() {
        "a folder"
    } else {
        crate::platform::special_kind(&t).unwrap_or("not a regular file")
    }
}

/// Opens `path`, a file of the run's own, as `access` says: never through a symbolic link
/// in its last step, never blocking, and only a regular file (see the module's comment).
/// `Ok(None)`: there is no such file (for [`Access::Lock`], never: it is created).
///
/// Errors: what lies there is not a regular file (a [`NotRegular`] inside, naming it: a
/// link, a FIFO, a socket, a device, a folder), or the system's error of the open.
pub fn open(path: &Path, access: Access) -> io::Result<Option<File>> {
    let mut options = std::fs::OpenOptions::new();
    match access {
        Access::Read => options.read(true),
        Access::ReadWrite => options.read(true).write(true),
        Access::Lock => options.write(true).create(true).truncate(false),
    };
    let file = match not_through_link(&mut options, path)?.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        // ELOOP (a link), ENXIO (a socket), EISDIR (a folder opened to write): say what.
        Err(e) => {
            return Err(match std::fs::symlink_metadata(path) {
                Ok(m) if !m.is_file() => NotRegular(kind(m.file_type())).error(),
                _ => e,
            });
        }
    };
    let t = file.metadata()?.file_type();
    if !t.is_file() {
        return Err(NotRegular(kind(t)).error());
    }
    blocking(&file)?;
    Ok(Some(file))
}

/// `options` set never to follow a link in the last step nor to block: on Unix
/// `O_NOFOLLOW | O_NONBLOCK | O_NOCTTY` (and mode 0666 less the umask for a new file). On
/// Windows, where an open has neither flag and nothing in a folder blocks an open, a
/// symbolic link (or junction) at `path` is refused before the open instead.
///
/// Errors: on Windows, `path` is a link (a [`NotRegular`] inside).
fn not_through_link<'a>(
    options: &'a mut std::fs::OpenOptions,
    path: &Path,
) -> io::Result<&'a mut std::fs::OpenOptions> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let _ = path;
        options
            .mode(0o666)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_NOCTTY);
    }
    #[cfg(not(unix))]
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(NotRegular("a symbolic link").error());
    }
    Ok(options)
}

/// Clears `O_NONBLOCK` on `file` (a regular file by now, which it does not change, but the
/// descriptor is then an ordinary one for whoever writes it). Nothing to do on Windows.
#[cfg(not(unix))]
fn blocking(_: &File) -> io::Result<()> {
    Ok(())
}

/// See the Windows one above.
#[cfg(unix)]
fn blocking(file: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own, with integer arguments.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Reads the whole of `path`, a file of the run's own opened as [`open`] opens it, if it
/// holds at most `max` bytes. `Ok(None)`: there is no such file.
///
/// Errors: those of [`open`]; the file holds more than `max` bytes (`InvalidData`, "is
/// larger than N bytes"); the read fails.
pub fn read(path: &Path, max: u64) -> io::Result<Option<Vec<u8>>> {
    let Some(file) = open(path, Access::Read)? else {
        return Ok(None);
    };
    let too_large = || {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("is larger than {max} bytes"),
        )
    };
    if file.metadata()?.len() > max {
        return Err(too_large());
    }
    super::read_bounded(file, max)?
        .ok_or_else(too_large)
        .map(Some)
}

/// A new temporary file in `dest`'s folder, named `{prefix}XXXXXX{suffix}` (hidden when
/// `prefix` starts with a dot), created exclusively (see the module's comment), to be
/// renamed over `dest` once complete. It has `dest`'s mode exactly, whatever the umask,
/// when `dest` is a regular file (a link there is not followed for it), so that others who
/// can read it now still can; else the mode a plain create gives (0666 less the umask).
///
/// Errors: the folder cannot be written, or the mode cannot be set.
pub fn temp_beside(dest: &Path, prefix: &str, suffix: &str) -> io::Result<NamedTempFile> {
    temp_in(super::folder(dest), dest, prefix, suffix)
}

/// [`temp_beside`], but in the folder `dir`, which must be on the file system `dest` will
/// be on (`--create-dirs` spools in the nearest folder that exists, and makes the others
/// only when the file is put in place).
///
/// Errors: the folder cannot be written, or the mode cannot be set.
pub fn temp_in(dir: &Path, dest: &Path, prefix: &str, suffix: &str) -> io::Result<NamedTempFile> {
    // tempfile creates with `create_new` (O_CREAT | O_EXCL), a new random name on EEXIST.
    let mut builder = tempfile::Builder::new();
    builder.prefix(fitting(prefix, suffix)).suffix(suffix);
    with_mode_of(&mut builder, dir, dest)
}

/// Makes the temporary file of [`temp_in`] with `dest`'s mode (Unix).
#[cfg(unix)]
fn with_mode_of(
    builder: &mut tempfile::Builder,
    dir: &Path,
    dest: &Path,
) -> io::Result<NamedTempFile> {
    use std::os::unix::fs::PermissionsExt;
    let existing = std::fs::symlink_metadata(dest)
        .ok()
        .filter(std::fs::Metadata::is_file)
        .map(|m| m.permissions().mode());
    let tmp = builder
        .permissions(std::fs::Permissions::from_mode(existing.unwrap_or(0o666)))
        .tempfile_in(dir)?;
    if let Some(mode) = existing {
        // The create above is subject to the umask; an existing file's mode is not.
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))?;
    }
    Ok(tmp)
}

/// On Windows a file has no mode: the new file takes its folder's inherited access
/// rules, as any file made there does (a read-only `dest` is refused by the rename).
#[cfg(not(unix))]
fn with_mode_of(
    builder: &mut tempfile::Builder,
    dir: &Path,
    _: &Path,
) -> io::Result<NamedTempFile> {
    builder.tempfile_in(dir)
}

/// How long a rename that Windows refuses (`PermissionDenied`) is tried again: an
/// antivirus scanner or the search indexer holds a file it has just seen open for a moment,
/// and Windows refuses to replace a file open without `FILE_SHARE_DELETE`. 10 s, as uv
/// (`uv-fs`) retries its renames; a target another process keeps open fails after that.
#[cfg_attr(not(windows), allow(dead_code))]
pub const RENAME_PATIENCE: std::time::Duration = std::time::Duration::from_secs(10);

/// Renames the complete temporary file `tmp` over `dest` (replacing it atomically: a
/// reader sees the old file or the new one, whole). On Windows a rename refused with
/// `PermissionDenied` is tried again every 50 ms to 400 ms for [`RENAME_PATIENCE`]; when it
/// is still refused, the error says that another process holds `dest` open. Unix renames
/// once.
///
/// Errors: the rename's (with the file given back, which its drop removes).
pub fn persist(tmp: NamedTempFile, dest: &Path) -> Result<File, tempfile::PersistError<File>> {
    #[cfg(windows)]
    {
        let until = std::time::Instant::now() + RENAME_PATIENCE;
        let mut pause = std::time::Duration::from_millis(50);
        let mut tmp = tmp;
        loop {
            match tmp.persist(dest) {
                Err(e) if e.error.kind() == io::ErrorKind::PermissionDenied => {
                    if std::time::Instant::now() >= until {
                        let why = format!(
                            "{} is held open by another process (Windows refuses to replace \
                             it; tried for {} s): close it and run again",
                            dest.display(),
                            RENAME_PATIENCE.as_secs()
                        );
                        let error = io::Error::new(io::ErrorKind::PermissionDenied, why);
                        return Err(tempfile::PersistError {
                            error,
                            file: e.file,
                        });
                    }
                    tmp = e.file;
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(std::time::Duration::from_millis(400));
                }
                other => return other,
            }
        }
    }
    #[cfg(not(windows))]
    tmp.persist(dest)
}

/// Whether a new file can be made in `dir` (one is made exclusively and removed at once);
/// `Err` is the system's reason alone: the name of the probe file is no concern of the
/// user's.
pub fn probe_write(dir: &Path) -> Result<(), String> {
    tempfile::Builder::new()
        .prefix(".retry-http-check")
        .tempfile_in(dir)
        .map(drop)
        .map_err(|e| {
            e.raw_os_error().map_or_else(
                || e.kind().to_string(),
                |n| io::Error::from_raw_os_error(n).to_string(),
            )
        })
}

/// `prefix`, shortened (at a character boundary) so that `{prefix}XXXXXX{suffix}` is a
/// name the file system takes: a destination of 250 bytes is legal, its temporary file
/// named after it in full would not be.
fn fitting<'a>(prefix: &'a str, suffix: &str) -> &'a str {
    let room = super::NAME_MAX.saturating_sub(suffix.len() + 6);
    let mut end = prefix.len().min(room);
    while !prefix.is_char_boundary(end) {
        end -= 1;
    }
    &prefix[..end]
}

/// The tests make links, FIFOs and modes: Unix only.
#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::files::NAME_MAX;
    use std::os::unix::fs::PermissionsExt;

    /// Makes a FIFO at `path`.
    fn fifo(path: &Path) {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("a path");
        // SAFETY: a NUL-terminated path, a plain mode.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    }

    #[test]
    fn only_a_regular_file_is_opened_and_never_through_a_link() {
        let dir = tempfile::tempdir().expect("dir");
        let d = dir.path();
        let foreign = d.join("foreign");
        std::fs::write(&foreign, "keep").expect("write");
        std::os::unix::fs::symlink(&foreign, d.join("link")).expect("link");
        std::os::unix::fs::symlink(d.join("none"), d.join("dangling")).expect("link");
        fifo(&d.join("fifo"));
        std::fs::create_dir(d.join("folder")).expect("folder");
        let _socket = std::os::unix::net::UnixListener::bind(d.join("socket")).expect("socket");
        for access in [Access::Read, Access::ReadWrite, Access::Lock] {
            for (name, what) in [
                ("link", "a symbolic link"),
                ("dangling", "a symbolic link"),
                ("fifo", "a FIFO"),
                ("folder", "a folder"),
                ("socket", "a socket"),
            ] {
                let e = open(&d.join(name), access).map(|_| ()).unwrap_err();
                assert_eq!(
                    NotRegular::of(&e),
                    Some(NotRegular(what)),
                    "{name} {access:?}"
                );
                assert_eq!(e.to_string(), format!("is {what}, not a regular file"));
            }
        }
        assert!(
            !d.join("none").exists(),
            "nothing made through a dangling link"
        );
        assert_eq!(std::fs::read(&foreign).expect("read"), b"keep");
        assert!(
            open(&d.join("missing"), Access::Read)
                .expect("ok")
                .is_none()
        );
        assert!(open(&foreign, Access::ReadWrite).expect("ok").is_some());
        assert!(
            open(&d.join("new.lock"), Access::Lock)
                .expect("ok")
                .is_some()
        );
        assert!(d.join("new.lock").is_file());
    }

    #[test]
    fn a_read_is_bounded() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("f");
        std::fs::write(&path, "abcd").expect("write");
        assert_eq!(read(&path, 4).expect("read"), Some(b"abcd".to_vec()));
        let e = read(&path, 3).unwrap_err();
        assert_eq!(e.to_string(), "is larger than 3 bytes");
        assert_eq!(read(&dir.path().join("no"), 3).expect("read"), None);
    }

    #[test]
    fn a_temporary_file_is_never_made_through_a_link() {
        let dir = tempfile::tempdir().expect("dir");
        let foreign = dir.path().join("foreign");
        std::fs::write(&foreign, "keep").expect("write");
        std::fs::set_permissions(&foreign, std::fs::Permissions::from_mode(0o604)).expect("mode");
        let dest = dir.path().join("dest");
        std::os::unix::fs::symlink(&foreign, &dest).expect("link");
        let mut tmp = temp_beside(&dest, ".dest.", ".tmp").expect("temp");
        std::io::Write::write_all(&mut tmp, b"new").expect("write");
        let mode = tmp.as_file().metadata().expect("meta").permissions().mode();
        assert_ne!(mode & 0o777, 0o604, "a link's target lends no mode");
        tmp.persist(&dest).expect("rename");
        assert_eq!(std::fs::read(&foreign).expect("read"), b"keep");
        assert!(std::fs::symlink_metadata(&dest).expect("meta").is_file());
    }

    #[test]
    fn the_temporary_file_keeps_the_mode_of_what_it_replaces() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let dest = dir.path().join("out.txt");
        std::fs::write(&dest, "old").expect("write");
        std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o604)).expect("chmod");
        let tmp = temp_beside(&dest, ".out.", ".part").expect("temp");
        assert_eq!(tmp.path().parent(), Some(dir.path()));
        let name = tmp.path().file_name().expect("a name").to_string_lossy();
        assert!(
            name.starts_with(".out.") && name.ends_with(".part"),
            "{name}"
        );
        let mode = std::fs::metadata(tmp.path())
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o604);
        tmp.persist(&dest).expect("rename");
        assert_eq!(std::fs::read(&dest).expect("read"), b"");
        let fresh = temp_beside(&dir.path().join("new"), ".new", "").expect("temp");
        let mode = std::fs::metadata(fresh.path())
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o111, 0, "no execute bits for a new file");
    }

    #[test]
    fn a_long_name_gets_a_temporary_file_that_fits() {
        let dir = tempfile::tempdir().expect("dir");
        let name = "n".repeat(NAME_MAX);
        let dest = dir.path().join(&name);
        let tmp = temp_beside(&dest, &format!(".{name}."), ".part").expect("temp");
        let made = tmp.path().file_name().map_or(0, |n| n.len());
        assert!(made <= NAME_MAX, "{made}");
        assert_eq!(fitting(".é", ""), ".é");
        assert_eq!(fitting(&"é".repeat(200), ".part").len() % 2, 0);
    }
}

/// Windows' renames: a target held open without `FILE_SHARE_DELETE` (as an editor or a
/// scanner holds it) is waited for, and refused with a clear error after
/// [`RENAME_PATIENCE`], the temporary file removed and the target untouched.
#[cfg(all(test, windows))]
mod windows_tests {
    use super::*;
    use std::io::Write;
    use std::os::windows::fs::OpenOptionsExt;
    use std::time::{Duration, Instant};

    /// Opens `path` as a program that shares nothing does.
    fn hold(path: &Path) -> File {
        std::fs::OpenOptions::new()
            .read(true)
            .share_mode(0)
            .open(path)
            .expect("open")
    }

    fn spool(dest: &Path, text: &[u8]) -> NamedTempFile {
        let mut tmp = temp_beside(dest, ".out.", ".part").expect("temp");
        tmp.write_all(text).expect("write");
        tmp
    }

    #[test]
    fn a_rename_waits_for_a_target_held_open_a_moment() {
        let dir = tempfile::tempdir().expect("dir");
        let dest = dir.path().join("out.txt");
        std::fs::write(&dest, b"old").expect("write");
        let held = hold(&dest);
        let tmp = spool(&dest, b"new");
        let closer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(500));
            drop(held);
        });
        persist(tmp, &dest).expect("renamed once the target was closed");
        closer.join().expect("closer");
        assert_eq!(std::fs::read(&dest).expect("read"), b"new");
    }

    #[test]
    fn a_target_held_open_for_good_is_refused_whole() {
        let dir = tempfile::tempdir().expect("dir");
        let dest = dir.path().join("out.txt");
        std::fs::write(&dest, b"old").expect("write");
        let _held = hold(&dest);
        let tmp = spool(&dest, b"new");
        let t = Instant::now();
        let e = persist(tmp, &dest).expect_err("refused");
        assert!(t.elapsed() >= RENAME_PATIENCE, "{:?}", t.elapsed());
        assert!(
            e.error.to_string().contains("held open by another process"),
            "{}",
            e.error
        );
        drop(e);
        drop(_held);
        assert_eq!(std::fs::read(&dest).expect("read"), b"old");
        let names: Vec<_> = std::fs::read_dir(dir.path()).expect("list").collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }
}
