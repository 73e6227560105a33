//! File-system steps that more than one part of the tool takes the same way: the folder a
//! path lives in, where a symbolic link leads, checks of a path the user names, bounded
//! reads. The files the run makes or keeps for itself (caches, the state file's lock, every
//! temporary file, `-C -`'s leftovers) are opened, read and created under the one rule of
//! [`owned`]; the system's certificate folders are read within bounds by [`certs`].

use std::io;
use std::path::{Path, PathBuf};

pub mod certs;
pub mod owned;
pub use owned::{persist, probe_write, temp_beside, temp_in};

/// The folder `path` lives in: its parent, or `.` when it has none that can be named (a
/// bare file name, or `/`).
pub fn folder(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Where `path` leads: through a symbolic link, its target (fully resolved when it exists,
/// else the link's text taken from the link's folder, so that a dangling link still names
/// where a new file would go); any other path (including one that does not exist) as it is.
///
/// Errors: the links form a loop (`ELOOP`: no file can ever be there, and writing "through"
/// it would replace the link itself), or the link can be neither resolved nor read.
pub fn follow_link(path: &Path) -> io::Result<PathBuf> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => match std::fs::canonicalize(path) {
            Ok(resolved) => Ok(resolved),
            Err(e) if crate::platform::is_link_loop(&e) => Err(e),
            Err(_) => {
                std::fs::read_link(path).map(|t| path.parent().unwrap_or(Path::new(".")).join(t))
            }
        },
        _ => Ok(path.to_path_buf()),
    }
}

/// Whether `a` and `b` name one file: the same device and inode when both exist, else the
/// same path once links are followed. (On Windows, where std gives no stable file index,
/// two existing paths are one file when their canonical forms are equal.)
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        #[cfg(unix)]
        (Ok(x), Ok(y)) => {
            use std::os::unix::fs::MetadataExt;
            (x.dev(), x.ino()) == (y.dev(), y.ino())
        }
        #[cfg(not(unix))]
        (Ok(_), Ok(_)) => std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok(),
        _ => {
            let lead = |p: &Path| normalised(&follow_link(p).unwrap_or_else(|_| p.to_path_buf()));
            lead(a) == lead(b)
        }
    }
}

/// `path` made absolute (from the current folder) with its `.` and `..` steps taken, so
/// that `x`, `./x` and `d/../x` compare equal before the file exists.
fn normalised(path: &Path) -> PathBuf {
    use std::path::Component;
    let whole = std::env::current_dir().map_or_else(|_| path.to_path_buf(), |d| d.join(path));
    let mut out = PathBuf::new();
    for c in whole.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Whether the path as typed names a folder rather than a file: it ends in `/`, `/.` or
/// `/..` (or is `.` or `..`); on Windows `\` counts as `/` does. `Path` drops those
/// endings, so a check made on its parts would take `ok/` for the file `ok`.
pub fn names_a_folder(path: &Path) -> bool {
    let s = path.as_os_str().as_encoded_bytes();
    let sep = |b: u8| b == b'/' || (cfg!(windows) && b == b'\\');
    let last = s.iter().rposition(|&b| sep(b)).map_or(0, |i| i + 1);
    let tail = &s[last..];
    s.last().is_some_and(|&b| sep(b)) || tail == b"." || tail == b".."
}

/// Reads all of `from` if it holds at most `max` bytes (`None`: it holds more; at most
/// `max + 1` bytes are read to know it), so a file named on the command line that turns out
/// to be `/dev/zero` or a huge log cannot fill the memory.
///
/// Errors: those of the read.
pub fn read_bounded(from: impl io::Read, max: u64) -> io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::new();
    io::Read::read_to_end(&mut from.take(max.saturating_add(1)), &mut bytes)?;
    Ok((bytes.len() as u64 <= max).then_some(bytes))
}

/// The longest file name most file systems take (Linux's NAME_MAX), in bytes.
pub const NAME_MAX: usize = 255;

/// Checks, before anything is sent, that a file the run will write (`flag` names it in the
/// message: "-D x", "--etag-save x") can be written: it is not a folder, its name is not
/// too long, its folder exists and is a folder, and a file can be created there now.
/// Through a symbolic link these hold of where the link leads (the file is written there,
/// as `-o`'s is): a dangling link into a folder that does not exist is refused here, not
/// found once the answer has arrived.
///
/// Errors: one line saying which of these fails and what is expected.
pub fn check_writable(path: &Path, flag: &str) -> Result<(), String> {
    if names_a_folder(path) {
        return Err(format!("{flag} names a folder: expected a file path"));
    }
    let resolved = follow_link(path).map_err(|e| {
        format!("{flag} is a link that cannot be followed ({e}): expected a file path")
    })?;
    // "-D link (a link to /x/y)": what was typed, and where it leads.
    let flag = &if resolved == path {
        flag.to_string()
    } else {
        format!("{flag} (a link to {})", resolved.display())
    };
    let path = resolved.as_path();
    if path.is_dir() {
        return Err(format!("{flag} is a directory: expected a file path"));
    }
    if std::fs::metadata(path).is_ok_and(|m| crate::platform::is_socket(&m.file_type())) {
        return Err(format!(
            "{flag} is a socket: expected a file path (or a FIFO or a device)"
        ));
    }
    // A FIFO or a device that exists is written in place, not beside a temporary file: its
    // folder need not be writable (`-D /dev/stderr` is /proc/self/fd/2, a pipe, say).
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return Ok(());
    }
    if path.file_name().is_some_and(|n| n.len() > NAME_MAX) {
        return Err(format!(
            "{flag}: the file name is longer than {NAME_MAX} bytes: expected a shorter one"
        ));
    }
    let dir = folder(path);
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(format!(
                "{flag}: {} is not a folder: expected a path in a folder",
                dir.display()
            ));
        }
        Err(_) => {
            return Err(format!(
                "{flag}: the folder {} does not exist: create it first",
                dir.display()
            ));
        }
    }
    probe_write(dir).map_err(|why| format!("{flag}: cannot write in {}: {why}", dir.display()))
}

/// The nearest folder that exists among `dir` and its parents (`.` for a relative path
/// none of whose folders exists).
///
/// Errors: the nearest that exists is not a folder (`NotADirectory`).
pub fn nearest_folder(dir: &Path) -> io::Result<PathBuf> {
    let found = dir
        .ancestors()
        .map(|a| {
            if a.as_os_str().is_empty() {
                Path::new(".")
            } else {
                a
            }
        })
        .find(|a| a.exists())
        .unwrap_or(Path::new("."));
    if found.is_dir() {
        Ok(found.to_path_buf())
    } else {
        Err(io::Error::new(
            io::ErrorKind::NotADirectory,
            format!("{} is not a folder", found.display()),
        ))
    }
}

/// Makes the missing folders of `dir`, outermost first, with mode 0750 (less the umask)
/// as curl's `--create-dirs` does; returns those it made, so that they can be removed.
/// When one cannot be made, those made so far are removed again.
///
/// Errors: a folder cannot be made.
pub fn make_folders(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut missing: Vec<PathBuf> = dir
        .ancestors()
        .take_while(|a| !a.as_os_str().is_empty() && !a.exists())
        .map(Path::to_path_buf)
        .collect();
    missing.reverse();
    let mut made = Vec::new();
    for d in missing {
        let builder = &mut std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(builder, 0o750);
        if let Err(e) = builder.create(&d) {
            remove_folders(&made);
            return Err(e);
        }
        made.push(d);
    }
    Ok(made)
}

/// Removes folders [`make_folders`] made, innermost first (only while they are empty).
pub fn remove_folders(made: &[PathBuf]) {
    for d in made.iter().rev() {
        let _ = std::fs::remove_dir(d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_folders_are_made_and_removed() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let deep = dir.path().join("a/b/c");
        assert_eq!(nearest_folder(&deep).expect("found"), dir.path());
        assert_eq!(
            nearest_folder(Path::new("no/such")).expect("found"),
            Path::new(".")
        );
        let made = make_folders(&deep).expect("made");
        assert_eq!(made.len(), 3);
        assert!(deep.is_dir());
        remove_folders(&made);
        assert!(!dir.path().join("a").exists());
        let file = dir.path().join("f");
        std::fs::write(&file, "x").expect("write");
        assert!(nearest_folder(&file.join("sub")).is_err());
    }

    #[test]
    fn the_folder_of_a_bare_name_is_the_current_one() {
        assert_eq!(folder(Path::new("a/b/c.txt")), Path::new("a/b"));
        assert_eq!(folder(Path::new("/c.txt")), Path::new("/"));
        assert_eq!(folder(Path::new("c.txt")), Path::new("."));
        assert_eq!(folder(Path::new("/")), Path::new("."));
        assert_eq!(folder(Path::new("")), Path::new("."));
    }

    #[test]
    #[cfg(unix)]
    fn a_link_leads_to_its_target_even_when_dangling() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let real = dir.path().join("real");
        std::fs::write(&real, "x").expect("write");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("real", &link).expect("symlink");
        let resolved = follow_link(&link).expect("follow");
        assert_eq!(resolved, real.canonicalize().expect("canonical"));
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink("sub/none", &dangling).expect("symlink");
        assert_eq!(
            follow_link(&dangling).expect("read"),
            dir.path().join("sub/none")
        );
        let plain = dir.path().join("missing");
        assert_eq!(follow_link(&plain).expect("as is"), plain);
        assert_eq!(follow_link(&real).expect("as is"), real);
    }

    #[test]
    fn writable_paths_are_checked_before_anything_is_sent() {
        let dir = tempfile::tempdir().expect("dir");
        let file = dir.path().join("f");
        std::fs::write(&file, "x").expect("write");
        let ok = dir.path().join("new");
        assert_eq!(check_writable(&ok, "-o new"), Ok(()));
        let under_file = file.join("x");
        let e = check_writable(&under_file, "-D f/x").unwrap_err();
        assert!(e.contains("is not a folder"), "{e}");
        let missing = dir.path().join("none").join("x");
        let e = check_writable(&missing, "-o none/x").unwrap_err();
        assert!(e.contains("does not exist"), "{e}");
        let e = check_writable(dir.path(), "-o d").unwrap_err();
        assert!(e.contains("is a directory"), "{e}");
        let long = dir.path().join("n".repeat(NAME_MAX + 1));
        let e = check_writable(&long, "-o n...").unwrap_err();
        assert!(e.contains("longer than 255"), "{e}");
        #[cfg(unix)]
        {
            // Through a link: where it leads is checked (dangling into no folder, to a folder).
            let dangling = dir.path().join("dangling");
            std::os::unix::fs::symlink(&missing, &dangling).expect("link");
            let e = check_writable(&dangling, "-D dangling").unwrap_err();
            assert!(
                e.contains("-D dangling (a link to ") && e.contains("does not exist"),
                "{e}"
            );
            let to_dir = dir.path().join("to_dir");
            std::os::unix::fs::symlink(dir.path(), &to_dir).expect("link");
            let e = check_writable(&to_dir, "-D to_dir").unwrap_err();
            assert!(e.contains("is a directory"), "{e}");
            let looped = dir.path().join("loop");
            std::os::unix::fs::symlink(&looped, &looped).expect("link");
            let e = check_writable(&looped, "-D loop").unwrap_err();
            assert!(e.contains("cannot be followed"), "{e}");
            assert!(follow_link(&looped).is_err());
            let to_new = dir.path().join("to_new");
            std::os::unix::fs::symlink(&ok, &to_new).expect("link");
            assert_eq!(check_writable(&to_new, "-D to_new"), Ok(()));
        }
    }

    #[test]
    fn a_path_that_ends_in_a_separator_names_a_folder() {
        for folder in ["d/", "d/.", "d/..", ".", "..", "/", "a/b/"] {
            assert!(names_a_folder(Path::new(folder)), "{folder}");
        }
        for file in ["d", "d/f", "d/.f", "d/f.", "..f", "a/b"] {
            assert!(!names_a_folder(Path::new(file)), "{file}");
        }
        // Windows' own separator, and a drive letter.
        for path in [r"d\", r"C:\d\", r"d\.", r"C:\d\..", r"C:\"] {
            assert_eq!(names_a_folder(Path::new(path)), cfg!(windows), "{path}");
        }
        for file in [r"C:\d\f", r"d\f.txt", "C:f"] {
            assert!(!names_a_folder(Path::new(file)), "{file}");
        }
    }

    #[test]
    fn a_bounded_read_says_when_there_is_more() {
        assert_eq!(
            read_bounded(&b"abc"[..], 3).expect("read"),
            Some(b"abc".to_vec())
        );
        assert_eq!(read_bounded(&b"abcd"[..], 3).expect("read"), None);
        assert_eq!(read_bounded(std::io::repeat(0), 10).expect("read"), None);
    }
}
