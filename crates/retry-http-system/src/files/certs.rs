//! The system's store of trusted certificates, read within bounds: `SSL_CERT_FILE` and the
//! folders of `SSL_CERT_DIR` (separated by `:`) when either is set, else the first bundle
//! of the usual ones that exists (Debian's `/etc/ssl/certs/ca-certificates.crt`, Fedora's,
//! Alpine's...) and the usual folders (`/etc/ssl/certs`, `/etc/pki/tls/certs`), as OpenSSL
//! finds them.
//!
//! A folder's entries are taken in name order and followed when they are links (most of
//! `/etc/ssl/certs` is links into `/usr/share/ca-certificates`). Only a regular file is
//! read: it is looked at before it is opened and opened without blocking, so a FIFO, a
//! socket or a device is never read and never waited for. Each file is read only when it
//! holds at most [`MAX_FILE`] bytes (16 MiB, `--cacert`'s bound), and a folder's files
//! together at most [`MAX_FOLDER`] (64 MiB): a stray file of 600 MiB costs nothing, where
//! reading it whole cost 600 MiB of memory. A folder inside a folder is not looked into (as
//! OpenSSL does not), and a link to nothing is passed over, both silently; anything else
//! left unread is named in one warning line ([`warning_once`]), shown once per run. A file
//! reached twice (the bundle, and a link to it) is read once.
//!
//! On macOS the system's store is the keychain: with neither variable set, the certificates
//! it trusts for TLS (Apple's roots, and those an administrator or the user added, read
//! through the Security framework by rustls-native-certs) are the store, as Safari and
//! Apple's curl trust them; only when it gives none are the usual files read (Apple's
//! `/etc/ssl/cert.pem`). `SSL_CERT_FILE` and `SSL_CERT_DIR` are read as on Linux.
//!
//! On Windows the system's store is Windows' own: with neither variable set, the
//! certificates of the "ROOT" stores (the current user's and the machine's, read through
//! CryptoAPI by rustls-native-certs) are the store, as Schannel and Windows' curl.exe trust
//! them. `SSL_CERT_FILE` and `SSL_CERT_DIR` (folders separated by `;` there) are read as
//! elsewhere.
//!
//! The store is read once per run, by the first TLS connection that needs it (the HTTPS
//! side's, or `rediss://`'s), and kept for the others.

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// The largest certificate file read, in bytes (16 MiB, as `--cacert` and `SSL_CERT_FILE`).
pub const MAX_FILE: u64 = 16 << 20;

/// The most bytes read from the files of one folder, in bytes (64 MiB; Debian's whole
/// store is under 1 MiB).
pub const MAX_FOLDER: u64 = 64 << 20;

/// The most files a warning names; the rest are counted.
const NAMED: usize = 10;

/// The certificates found, and the files left unread (each "PATH (why)").
#[derive(Debug, Default)]
pub struct Store {
    pub certs: Vec<CertificateDer<'static>>,
    pub skipped: Vec<String>,
}

/// The system's store, read once per run (see the module's comment).
pub fn system() -> &'static Store {
    static STORE: OnceLock<Store> = OnceLock::new();
    STORE.get_or_init(|| read(&Sources::from_env()))
}

/// Whether the warning about the system's store has been given.
static WARNED: AtomicBool = AtomicBool::new(false);

/// The one warning line about the system's store, the first time it is asked for once the
/// store has been read and something was left unread; `None` otherwise.
pub fn warning_once() -> Option<String> {
    if !READ_DONE.load(Ordering::SeqCst) {
        return None;
    }
    let line = warning(system())?;
    (!WARNED.swap(true, Ordering::SeqCst)).then_some(line)
}

/// Set once the store has been read.
static READ_DONE: AtomicBool = AtomicBool::new(false);

/// The warning line for `store`'s skipped files (`None`: nothing was skipped).
pub fn warning(store: &Store) -> Option<String> {
    let n = store.skipped.len();
    if n == 0 {
        return None;
    }
    let mut named = store.skipped[..n.min(NAMED)].join(", ");
    if n > NAMED {
        named.push_str(&format!(" and {} more", n - NAMED));
    }
    Some(format!(
        "the system's certificate store: {n} file(s) not read (only regular files of at most 16 MiB, 64 MiB a folder): {named}"
    ))
}

/// Where the store is read from.
struct Sources {
    file: Option<PathBuf>,
    dirs: Vec<PathBuf>,
    /// The keychain first (macOS, with neither variable set).
    keychain: bool,
}

impl Sources {
    /// `SSL_CERT_FILE` and `SSL_CERT_DIR` when either is set (not empty), else the keychain
    /// on macOS and the usual places that exist on this system (openssl-probe's list).
    fn from_env() -> Sources {
        let file = std::env::var_os("SSL_CERT_FILE")
            .filter(|f| !f.is_empty())
            .map(PathBuf::from);
        let dirs: Vec<PathBuf> = std::env::var_os("SSL_CERT_DIR")
            .map(|d| std::env::split_paths(&d).collect())
            .unwrap_or_default();
        let dirs: Vec<PathBuf> = dirs
            .into_iter()
            .filter(|d| !d.as_os_str().is_empty())
            .collect();
        if file.is_some() || !dirs.is_empty() {
            return Sources {
                file,
                dirs,
                keychain: false,
            };
        }
        let probed = openssl_probe::probe();
        Sources {
            file: probed.cert_file,
            dirs: probed.cert_dir,
            keychain: cfg!(any(target_os = "macos", windows)),
        }
    }
}

/// A store being read: what was found, what was skipped, the files already read.
#[derive(Default)]
struct Reading {
    store: Store,
    seen: HashSet<Identity>,
}

/// Reads the store from `sources` (see the module's comment).
fn read(sources: &Sources) -> Store {
    let mut r = Reading::default();
    if sources.keychain && r.keychain() {
        return r.done();
    }
    if let Some(file) = &sources.file {
        let mut budget = MAX_FILE;
        r.file(file, &mut budget);
    }
    for dir in &sources.dirs {
        r.folder(dir);
    }
    r.done()
}

impl Reading {
    /// The store read: sorted, each certificate once.
    fn done(mut self) -> Store {
        self.store
            .certs
            .sort_unstable_by(|a, b| a.as_ref().cmp(b.as_ref()));
        self.store.certs.dedup();
        READ_DONE.store(true, Ordering::SeqCst);
        self.store
    }

    /// macOS: adds the certificates the keychain trusts for TLS; Windows: those of the
    /// system's certificate stores (the current user's and the machine's "ROOT" stores,
    /// read through CryptoAPI); whether it gave any. (A certificate it cannot give, or a
    /// store that cannot be read, is passed over: the files are read when it gives none.)
    #[cfg(any(target_os = "macos", windows))]
    fn keychain(&mut self) -> bool {
        let found = rustls_native_certs::load_native_certs();
        self.store.certs.extend(found.certs);
        !self.store.certs.is_empty()
    }

    /// Elsewhere there is no keychain: the files are the store.
    #[cfg(not(any(target_os = "macos", windows)))]
    fn keychain(&mut self) -> bool {
        false
    }

    /// The files of the folder `dir`, in name order, within [`MAX_FOLDER`] bytes together.
    /// A folder that cannot be listed is passed over, as a missing one.
    fn folder(&mut self, dir: &Path) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        paths.sort();
        let mut budget = MAX_FOLDER;
        for path in paths {
            self.file(&path, &mut budget);
        }
    }

    /// Reads the certificates of `path` (a link followed) when it is a regular file of at
    /// most [`MAX_FILE`] bytes and `budget` bytes are left; the bytes read are taken from
    /// `budget`. What is not read is noted in `skipped`, but for a folder or a link to
    /// nothing (see the module's comment) and a file already read.
    fn file(&mut self, path: &Path, budget: &mut u64) {
        match self.bytes(path, budget) {
            Ok(Some(pem)) => self.store.certs.extend(
                CertificateDer::pem_slice_iter(&pem)
                    .filter_map(Result::ok)
                    .map(|c| c.into_owned()),
            ),
            Ok(None) => {}
            Err(why) => self
                .store
                .skipped
                .push(format!("{} ({why})", path.display())),
        }
    }

    /// The bytes of `path` if they are to be read (see [`Reading::file`]); `Ok(None)`:
    /// passed over silently; `Err`: why it is not read.
    fn bytes(&mut self, path: &Path, budget: &mut u64) -> Result<Option<Vec<u8>>, String> {
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot be read: {e}")),
        };
        if meta.is_dir() {
            return Ok(None);
        }
        // Looked at before the open (a device is not opened), and again after it.
        let file = regular(&meta)
            .and_then(|()| {
                let mut options = std::fs::OpenOptions::new();
                #[cfg(unix)]
                std::os::unix::fs::OpenOptionsExt::custom_flags(
                    &mut options,
                    libc::O_NONBLOCK | libc::O_NOCTTY,
                );
                options
                    .read(true)
                    .open(path)
                    .map_err(|e| format!("cannot be read: {e}"))
            })
            .and_then(|f| f.metadata().map(|m| (f, m)).map_err(|e| e.to_string()))
            .and_then(|(f, m)| regular(&m).map(|()| (f, m)))?;
        let (file, meta) = file;
        if !self.seen.insert(identity(path, &meta)) {
            return Ok(None);
        }
        if meta.len() > MAX_FILE {
            return Err("larger than 16 MiB".into());
        }
        if meta.len() > *budget {
            return Err("past the 64 MiB read from its folder".into());
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize + 1);
        std::io::Read::read_to_end(&mut std::io::Read::take(file, meta.len() + 1), &mut bytes)
            .map_err(|e| format!("cannot be read: {e}"))?;
        if bytes.len() as u64 > meta.len() {
            return Err("grew while it was read".into());
        }
        *budget -= bytes.len() as u64;
        Ok(Some(bytes))
    }
}

/// What makes a file the same as one read before: its device and inode on Unix.
#[cfg(unix)]
type Identity = (u64, u64);

/// The identity of the file at `path`, whose metadata is `meta`.
#[cfg(unix)]
fn identity(_: &Path, meta: &std::fs::Metadata) -> Identity {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

/// On Windows, where std gives no stable file index: the canonical path.
#[cfg(not(unix))]
type Identity = PathBuf;

/// The identity of the file at `path` (Windows: its canonical path).
#[cfg(not(unix))]
fn identity(path: &Path, _: &std::fs::Metadata) -> Identity {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// `Err` naming what `meta` is when it is not a regular file.
fn regular(meta: &std::fs::Metadata) -> Result<(), String> {
    if meta.is_file() {
        Ok(())
    } else {
        Err(format!(
            "{}, not a regular file",
            super::owned::kind(meta.file_type())
        ))
    }
}

/// The tests make links, FIFOs and modes: Unix only.
#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn pem() -> String {
        let c = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("cert");
        c.cert.pem()
    }

    #[test]
    fn only_regular_files_within_the_bounds_are_read() {
        let dir = tempfile::tempdir().expect("dir");
        let d = dir.path();
        let good = pem();
        std::fs::write(d.join("a.pem"), &good).expect("write");
        std::os::unix::fs::symlink(d.join("a.pem"), d.join("b.0")).expect("link");
        std::os::unix::fs::symlink(d.join("none"), d.join("c.0")).expect("link");
        std::fs::create_dir(d.join("java")).expect("folder");
        let big = std::fs::File::create(d.join("big.pem")).expect("create");
        big.set_len(MAX_FILE + 1).expect("sparse");
        let c = std::ffi::CString::new(d.join("fifo").as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path, a plain mode.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let sources = Sources {
            file: None,
            dirs: vec![d.to_path_buf()],
            keychain: false,
        };
        let store = read(&sources);
        assert_eq!(store.certs.len(), 1);
        assert_eq!(store.skipped.len(), 2, "{:?}", store.skipped);
        assert!(store.skipped[0].ends_with("big.pem (larger than 16 MiB)"));
        assert!(store.skipped[1].ends_with("fifo (a FIFO, not a regular file)"));
        let line = warning(&store).expect("a warning");
        assert!(line.contains("2 file(s) not read"), "{line}");
    }

    #[test]
    fn a_folder_is_read_within_its_budget() {
        let dir = tempfile::tempdir().expect("dir");
        let d = dir.path();
        let good = pem();
        // Five files of 15 MiB each: the fifth would pass 64 MiB.
        for i in 0..5 {
            let path = d.join(format!("{i}.pem"));
            std::fs::write(&path, &good).expect("write");
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .expect("open");
            f.set_len(15 << 20).expect("sparse");
        }
        let sources = Sources {
            file: None,
            dirs: vec![d.to_path_buf()],
            keychain: false,
        };
        let store = read(&sources);
        assert_eq!(store.certs.len(), 1, "one certificate, read four times");
        assert_eq!(store.skipped.len(), 1, "{:?}", store.skipped);
        assert!(store.skipped[0].ends_with("4.pem (past the 64 MiB read from its folder)"));
    }
}
