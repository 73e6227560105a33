//! The request body: read once before the first attempt, then replayed byte for byte on
//! every attempt, with the same Content-Length. Small bodies stay in memory; a large one is
//! spooled to an anonymous temporary file, so a 1 GiB upload does not need 1 GiB of RAM.
//!
//! A `-F` body's multipart boundary (RFC 2046 section 5.1.1) is made here, once every part
//! is read: 24 dashes and the first 32 hex digits of the SHA-256 of the whole body as read
//! with the boundary's placeholder in its delimiters (see [`Seal`]). curl draws it at
//! random; derived from the body, it makes the same command line with the same inputs the
//! same bytes on every run: the same job, with the same Idempotency-Key across runs
//! (`fleet::job`), and the same request to a server that compares a replay with the first
//! one (the Idempotency-Key draft's fingerprint). It stays a boundary no part can hold: a
//! part holding it would hold 128 bits of a digest of itself, which no one can make.

use crate::config::{BOUNDARY_PLACEHOLDER, BodySource, BodySpec};
use crate::process::within::{Missed, within};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};

/// Bodies up to this size (bytes) are kept in memory; larger ones go to a temporary file.
const IN_MEMORY_LIMIT: u64 = 1 << 20;

/// A request body that can be sent again and again.
#[derive(Debug)]
pub enum Payload {
    /// Held in memory.
    Memory(Vec<u8>),
    /// Spooled to an unnamed temporary file (removed by the OS when closed).
    Spooled { file: File, len: u64 },
}

/// Why the body could not be read: the path (or `-`) and the error. A usage error (exit 2).
#[derive(Debug)]
pub struct BodyError(pub String);

impl Payload {
    /// The body's length in bytes, sent as its Content-Length (RFC 9110 section 8.6).
    pub fn content_length(&self) -> u64 {
        match self {
            Payload::Memory(v) => v.len() as u64,
            Payload::Spooled { len, .. } => *len,
        }
    }

    /// Another payload of the same bytes, for another request: a copy of a small body, or
    /// the spool opened again (its own read position, so that requests sent at the same
    /// time read it apart), or copied into a new spool where it cannot be opened again.
    pub fn duplicate(&self) -> io::Result<Payload> {
        match self {
            Payload::Memory(v) => Ok(Payload::Memory(v.clone())),
            Payload::Spooled { file, len } => {
                let file = match reopen(file) {
                    Ok(f) => f,
                    Err(_) => {
                        let mut copy = tempfile::tempfile()?;
                        io::copy(&mut self.reader()?, &mut copy)?;
                        copy
                    }
                };
                Ok(Payload::Spooled { file, len: *len })
            }
        }
    }

    /// The multipart boundary of a `-F` body (see the module's head): the rest of its first
    /// line, the first delimiter, after its `--`; `Err` when the body does not begin with a
    /// delimiter or cannot be read.
    pub fn multipart_boundary(&self) -> io::Result<String> {
        let mut head = vec![0u8; 2 + BOUNDARY_PLACEHOLDER.len()];
        match self {
            Payload::Memory(v) => {
                let have = v.get(..head.len()).unwrap_or_default();
                head[..have.len()].copy_from_slice(have);
            }
            Payload::Spooled { file, .. } => crate::platform::read_exact_at(file, &mut head, 0)?,
        }
        match head.strip_prefix(b"--").map(std::str::from_utf8) {
            Some(Ok(b)) if b.bytes().all(|c| c == b'-' || c.is_ascii_hexdigit()) => Ok(b.into()),
            _ => Err(io::Error::other(
                "the multipart body does not begin with its delimiter",
            )),
        }
    }

    /// A reader over the whole body, from its first byte (call once per attempt). It owns
    /// what it reads: a copy of a small body (at most 1 MiB), or its own handle on the spool.
    pub fn reader(&self) -> io::Result<Box<dyn Read + Send + 'static>> {
        match self {
            Payload::Memory(v) => Ok(Box::new(io::Cursor::new(v.clone()))),
            Payload::Spooled { file, .. } => {
                let mut f = file.try_clone()?;
                f.seek(SeekFrom::Start(0))?;
                Ok(Box::new(f))
            }
        }
    }
}

/// `file` opened again through /proc: a handle with a read position of its own (a cloned
/// handle shares its position with the original). Linux's: elsewhere (and on the portable
/// paths, see `platform`) `Unsupported`, and the caller copies the spool instead (macOS
/// has no /proc, and its `/dev/fd/N` is a clone that shares the position).
fn reopen(file: &File) -> io::Result<File> {
    #[cfg(target_os = "linux")]
    if crate::platform::linux_calls() {
        use std::os::fd::AsRawFd;
        return File::open(format!("/proc/self/fd/{}", file.as_raw_fd()));
    }
    let _ = file;
    Err(io::ErrorKind::Unsupported.into())
}

/// What is done to a part's bytes on their way to the sink.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Transform {
    /// Nothing: byte for byte.
    Raw,
    /// CR and LF dropped (curl's `-d @file`).
    StripNewlines,
    /// Percent-encoded as a form value (curl's `--data-urlencode @file`).
    FormEncode,
}

impl Transform {
    fn strip(strip_newlines: bool) -> Transform {
        if strip_newlines {
            Transform::StripNewlines
        } else {
            Transform::Raw
        }
    }
}

/// Copies `src` to the sink, transformed.
fn copy_part(src: &mut dyn Read, sink: &mut Loading, how: Transform) -> io::Result<()> {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match src.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        match how {
            Transform::Raw => sink.write_all(&buf[..n])?,
            Transform::StripNewlines => {
                let kept: Vec<u8> = buf[..n]
                    .iter()
                    .copied()
                    .filter(|b| !matches!(b, b'\r' | b'\n'))
                    .collect();
                sink.write_all(&kept)?;
            }
            Transform::FormEncode => {
                let mut encoded = Vec::with_capacity(n * 3);
                crate::config::form_encode(&buf[..n], &mut encoded);
                sink.write_all(&encoded)?;
            }
        }
    }
}

/// The body being loaded: in memory first, in a temporary file once it outgrows
/// `IN_MEMORY_LIMIT`.
struct Loading {
    memory: Vec<u8>,
    file: Option<File>,
    len: u64,
    /// The most the body may hold (bytes), checked on every write, so an endless source
    /// (`/dev/zero`, a pipe that never closes) stops at the limit, not at the disk's end.
    limit: Option<u64>,
    /// Why no temporary file could be made, when that is what failed: said as it is, not
    /// as a failure to read the part being copied.
    no_spool: Option<String>,
    /// A multipart body's boundary being made, when the body has delimiters.
    seal: Option<Seal>,
}

/// A multipart boundary being made: the SHA-256 of every byte written so far, and where
/// the placeholder of the boundary stands in the body (offsets in bytes), to be replaced
/// by the boundary once the body is read. Only the delimiters' placeholders are replaced:
/// a part that holds the placeholder's text is sent as it is.
struct Seal {
    digest: ring::digest::Context,
    at: Vec<u64>,
}

impl Seal {
    /// The boundary of the body digested: 24 dashes and 32 hex digits, as long as
    /// [`BOUNDARY_PLACEHOLDER`].
    fn boundary(self) -> String {
        let digest = self.digest.finish();
        let hex: String = digest.as_ref()[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        format!("{}{hex}", "-".repeat(24))
    }
}

/// Why a body over `IN_MEMORY_LIMIT` cannot be held: the temporary folder fails with `e`.
fn no_spool(e: &io::Error) -> String {
    format!(
        "cannot make a temporary file in {} ({e}): a request body over {} MiB is held there, to be sent again on a retry; set TMPDIR to a writable folder",
        std::env::temp_dir().display(),
        IN_MEMORY_LIMIT >> 20
    )
}

/// The error a write past [`Loading::limit`] fails with (its kind is `FileTooLarge`).
fn over_limit(limit: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!("over the limit of {limit} bytes"),
    )
}

impl Write for Loading {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if let Some(limit) = self.limit
            && self.len.saturating_add(data.len() as u64) > limit
        {
            return Err(over_limit(limit));
        }
        if self.file.is_none() && self.len + data.len() as u64 > IN_MEMORY_LIMIT {
            let mut f = tempfile::tempfile().inspect_err(|e| self.no_spool = Some(no_spool(e)))?;
            // A large body is freed after the exit, not by it (see `release`).
            crate::process::release::register(&f);
            f.write_all(&self.memory)?;
            self.memory = Vec::new();
            self.file = Some(f);
        }
        match &mut self.file {
            Some(f) => f.write_all(data)?,
            None => self.memory.extend_from_slice(data),
        }
        if let Some(seal) = &mut self.seal {
            seal.digest.update(data);
        }
        self.len += data.len() as u64;
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.as_mut().map_or(Ok(()), |f| f.flush())
    }
}

/// Why the body could not be loaded in time.
#[derive(Debug)]
pub enum LoadError {
    /// A file is missing or unreadable (a usage error).
    Unreadable(BodyError),
    /// The deadline passed while the body was still being read (stdin that never ends).
    Deadline,
    /// The body grew past the limit it was loaded with; reading stopped there, in the part
    /// named (a file's path, `stdin`, or `the data given inline`).
    TooLarge(String),
}

/// [`load`], bounded by the time left before the deadline: a body from a pipe that never
/// closes must not keep the command past its deadline. The reader thread is left behind
/// when time runs out; the process ends right after.
///
/// `limit` (bytes), when given, is the most the loaded body may hold, after the parts'
/// transforms: it is checked on every write while reading, so a source that never ends
/// stops there ([`LoadError::TooLarge`]), having used at most `limit` bytes of memory
/// (a limit of 1 MiB or less never makes a temporary file).
pub fn load_within(
    spec: &BodySpec,
    left: Option<std::time::Duration>,
    limit: Option<u64>,
) -> Result<Payload, LoadError> {
    let spec = spec.clone();
    match within(left, move || load(&spec, limit)) {
        Ok(result) => result,
        Err(Missed::Late) => Err(LoadError::Deadline),
        Err(Missed::NoThread(e)) => Err(LoadError::Unreadable(BodyError(format!(
            "cannot read the request body: {e}"
        )))),
    }
}

/// Copies a file (not a directory) to the sink. The outer error is the file's (it cannot be
/// opened); the inner one a failure while reading it, with its path.
fn copy_file(
    path: &std::path::Path,
    sink: &mut Loading,
    how: Transform,
) -> Result<io::Result<()>, BodyError> {
    let mut f = File::open(path)
        .map_err(|e| BodyError(format!("cannot read body file {}: {e}", path.display())))?;
    if f.metadata().map(|m| m.is_dir()).unwrap_or(false) {
        return Err(BodyError(format!(
            "body file {} is a directory: expected a file",
            path.display()
        )));
    }
    Ok(copy_part(&mut f, sink, how)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display()))))
}

/// Copies one part of the body to `sink`: `Err` when a file cannot be opened (a usage
/// error), `Ok(Err)` for a failure while copying.
fn read_part(part: &BodySource, sink: &mut Loading) -> Result<io::Result<()>, LoadError> {
    Ok(match part {
        BodySource::Inline(bytes) => sink.write_all(bytes),
        BodySource::Boundary => {
            let at = sink.len + 2;
            if let Some(seal) = &mut sink.seal {
                seal.at.push(at);
            }
            sink.write_all(format!("--{BOUNDARY_PLACEHOLDER}").as_bytes())
        }
        BodySource::File {
            path,
            strip_newlines,
        } => copy_file(path, sink, Transform::strip(*strip_newlines))
            .map_err(LoadError::Unreadable)?,
        BodySource::Stdin { strip_newlines } => copy_part(
            &mut io::stdin().lock(),
            sink,
            Transform::strip(*strip_newlines),
        ),
        BodySource::Encoded { prefix, file } => match sink.write_all(prefix) {
            Err(e) => Err(e),
            Ok(()) => match file {
                Some(path) => {
                    copy_file(path, sink, Transform::FormEncode).map_err(LoadError::Unreadable)?
                }
                None => copy_part(&mut io::stdin().lock(), sink, Transform::FormEncode),
            },
        },
    })
}

impl Loading {
    /// An empty body, at most `limit` bytes; `delimited`: a multipart body, whose boundary
    /// is made as it is read (see [`Seal`]).
    fn new(limit: Option<u64>, delimited: bool) -> Loading {
        Loading {
            memory: Vec::new(),
            file: None,
            len: 0,
            limit,
            no_spool: None,
            seal: delimited.then(|| Seal {
                digest: ring::digest::Context::new(&ring::digest::SHA256),
                at: Vec::new(),
            }),
        }
    }

    /// The body read, its boundary in place (see [`seal`]).
    fn finish(mut self) -> Result<Payload, LoadError> {
        if let Err(e) = seal(&mut self) {
            let why = format!("cannot spool the request body: {e}");
            return Err(LoadError::Unreadable(BodyError(why)));
        }
        Ok(match self.file {
            Some(file) => Payload::Spooled {
                file,
                len: self.len,
            },
            None => Payload::Memory(self.memory),
        })
    }
}

/// Puts the boundary made from the body in place of its placeholders (see [`Seal`]), in
/// memory or in the spool; nothing for a body without delimiters.
fn seal(sink: &mut Loading) -> io::Result<()> {
    let Some(seal) = sink.seal.take() else {
        return Ok(());
    };
    let at = seal.at.clone();
    let boundary = seal.boundary();
    for offset in at {
        match &sink.file {
            Some(f) => crate::platform::write_all_at(f, boundary.as_bytes(), offset)?,
            None => {
                let start = usize::try_from(offset).map_err(io::Error::other)?;
                let end = start + boundary.len();
                let place = sink
                    .memory
                    .get_mut(start..end)
                    .ok_or_else(|| io::Error::other("a multipart delimiter past the body's end"))?;
                place.copy_from_slice(boundary.as_bytes());
            }
        }
    }
    Ok(())
}

/// Reads every part of the body once, at most `limit` bytes of it when given. stdin is
/// read only when a part names it.
fn load(spec: &BodySpec, limit: Option<u64>) -> Result<Payload, LoadError> {
    let mut sink = Loading::new(limit, spec.parts.contains(&BodySource::Boundary));
    let failed = |sink: &mut Loading, e: io::Error, what: &str, source: &str| {
        if let Some(why) = sink.no_spool.take() {
            return LoadError::Unreadable(BodyError(why));
        }
        match e.kind() {
            io::ErrorKind::FileTooLarge if limit.is_some() => {
                LoadError::TooLarge(source.to_string())
            }
            _ => LoadError::Unreadable(BodyError(format!("{what}: {e}"))),
        }
    };
    for (i, part) in spec.parts.iter().enumerate() {
        let source = match part {
            BodySource::File { path, .. }
            | BodySource::Encoded {
                file: Some(path), ..
            } => path.display().to_string(),
            BodySource::Stdin { .. } | BodySource::Encoded { file: None, .. } => "stdin".into(),
            BodySource::Inline(_) | BodySource::Boundary => "the data given inline".into(),
        };
        if i > 0
            && let Err(e) = sink.write_all(&spec.separator)
        {
            return Err(failed(
                &mut sink,
                e,
                "cannot spool the request body",
                &source,
            ));
        }
        let result = read_part(part, &mut sink)?;
        if let Err(e) = result {
            return Err(failed(
                &mut sink,
                e,
                "cannot read the request body",
                &source,
            ));
        }
    }
    sink.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(p: &Payload) -> Vec<u8> {
        let mut v = Vec::new();
        p.reader().unwrap().read_to_end(&mut v).unwrap();
        v
    }

    #[test]
    fn inline_parts_join_with_separator() {
        let spec = BodySpec {
            parts: vec![
                BodySource::Inline(b"a=1".to_vec()),
                BodySource::Inline(b"b=2".to_vec()),
            ],
            separator: b"&".to_vec(),
        };
        let p = load(&spec, None).unwrap();
        assert_eq!(read_all(&p), b"a=1&b=2");
        assert_eq!(read_all(&p), b"a=1&b=2", "replay gives the same bytes");
    }

    #[test]
    fn large_file_is_spooled_and_replayed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.bin");
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let spec = BodySpec {
            parts: vec![BodySource::File {
                path,
                strip_newlines: false,
            }],
            separator: vec![],
        };
        let p = load(&spec, None).unwrap();
        assert!(matches!(p, Payload::Spooled { .. }));
        assert_eq!(p.content_length(), data.len() as u64);
        assert_eq!(read_all(&p), data);
        assert_eq!(read_all(&p), data);
    }

    #[test]
    fn strip_newlines_like_curl_data() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"a\r\nb\nc").unwrap();
        let spec = BodySpec {
            parts: vec![BodySource::File {
                path,
                strip_newlines: true,
            }],
            separator: vec![],
        };
        assert_eq!(read_all(&load(&spec, None).unwrap()), b"abc");
    }

    #[test]
    fn a_limit_stops_an_endless_source_while_it_is_read() {
        for (strip_newlines, part) in [(false, "raw"), (true, "-d @file")] {
            let spec = BodySpec {
                parts: vec![BodySource::File {
                    path: "/dev/zero".into(),
                    strip_newlines,
                }],
                separator: vec![],
            };
            let got = load_within(
                &spec,
                Some(std::time::Duration::from_secs(60)),
                Some(1 << 20),
            );
            assert!(
                matches!(got, Err(LoadError::TooLarge(_))),
                "{part}: {got:?}"
            );
        }
        let encoded = BodySpec {
            parts: vec![BodySource::Encoded {
                prefix: b"a=".to_vec(),
                file: Some("/dev/zero".into()),
            }],
            separator: vec![],
        };
        assert!(matches!(
            load(&encoded, Some(10)),
            Err(LoadError::TooLarge(_))
        ));
        // At the limit exactly, the body is whole.
        let inline = BodySpec {
            parts: vec![BodySource::Inline(vec![b'x'; 10])],
            separator: vec![],
        };
        assert_eq!(read_all(&load(&inline, Some(10)).unwrap()), vec![b'x'; 10]);
        assert!(matches!(
            load(&inline, Some(9)),
            Err(LoadError::TooLarge(_))
        ));
    }

    /// A multipart body's delimiters get a boundary made from the body: the same for the
    /// same parts, another for other parts, in memory and in the spool alike; the
    /// placeholder's text in a part is sent as it is; the boundary is read back from the
    /// body.
    #[test]
    fn the_boundary_is_made_from_the_body_and_put_in_its_delimiters() {
        let spec = |middle: Vec<u8>| BodySpec {
            parts: vec![
                BodySource::Boundary,
                BodySource::Inline(b"\r\nhead\r\n\r\n".to_vec()),
                BodySource::Inline(middle),
                BodySource::Inline(b"\r\n".to_vec()),
                BodySource::Boundary,
                BodySource::Inline(b"--\r\n".to_vec()),
            ],
            separator: Vec::new(),
        };
        let text = format!("a part holding --{BOUNDARY_PLACEHOLDER}").into_bytes();
        let large = vec![b'x'; (IN_MEMORY_LIMIT + 10) as usize];
        for middle in [text, large] {
            let p = load(&spec(middle.clone()), None).unwrap();
            let boundary = p.multipart_boundary().unwrap();
            assert_eq!(boundary.len(), BOUNDARY_PLACEHOLDER.len());
            let body = read_all(&p);
            let mut want = format!("--{boundary}\r\nhead\r\n\r\n").into_bytes();
            want.extend_from_slice(&middle);
            want.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
            assert!(
                body == want,
                "the delimiters, and only they, hold the boundary"
            );
            assert_eq!(p.content_length(), want.len() as u64);
            let again = load(&spec(middle.clone()), None).unwrap();
            assert_eq!(again.multipart_boundary().unwrap(), boundary);
            let mut other = middle.clone();
            other[0] ^= 1;
            let other = load(&spec(other), None).unwrap();
            assert_ne!(other.multipart_boundary().unwrap(), boundary);
        }
        assert!(
            Payload::Memory(b"a=1".to_vec())
                .multipart_boundary()
                .is_err()
        );
    }

    #[test]
    fn missing_file_is_an_error() {
        let spec = BodySpec {
            parts: vec![BodySource::File {
                path: "/nonexistent/x".into(),
                strip_newlines: false,
            }],
            separator: vec![],
        };
        assert!(load(&spec, None).is_err());
    }
}
