//! `-C -` across runs: a download that a run ends without (out of attempts, the deadline,
//! a signal) leaves the bytes it has beside the `-o` file, never in its place, for the next
//! run with `-C -` and the same `-o` to resume.
//!
//! For `-o DIR/NAME` the bytes are `DIR/.NAME.retry-http-partial` and what is known of them
//! is `DIR/.NAME.retry-http-partial.info`, a few lines of text:
//!
//! ```text
//! retry-http partial 1
//! url-sha256 <64 hex digits: SHA-256 of the URL, so no URL or credential is on disk>
//! validator <the strong ETag or the Last-Modified date of the first answer>
//! total <the whole body's length in bytes>
//! bytes <the bytes kept>
//! ```
//!
//! The next run takes them by renaming the bytes to a temporary name of its own (an atomic
//! claim: two runs never share them; the one that loses the race starts from the first
//! byte), then checks the record against its URL and the file. What does not match is
//! discarded with a warning; a leftover older than [`MAX_AGE`] (by its record's
//! modification time) is removed. The bytes are then resumed as a broken download is within
//! a run (`Range` and `If-Range`, RFC 9110 sections 14.2 and 13.1.5): every byte accounted
//! for, the validator identical, or the download starts over.
//!
//! The attempt loop calls [`claim`] before its first attempt and [`leave_or_discard`] when
//! it ends with a part kept.

use crate::config::Config;
use crate::files::owned::{self, Access};
use crate::files::temp_beside;
use crate::http::resume::Validator;
use crate::output::{Output, Spool};
use crate::report::Reporter;
use crate::request::delivery::Partial;
use crate::request::prior::Prior;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use tempfile::NamedTempFile;

/// A leftover older than this (24 hours) is removed, not resumed.
pub const MAX_AGE: Duration = Duration::from_secs(24 * 60 * 60);

/// The most of a record read (it is five short lines; an ETag is at most 8 KiB here).
const MAX_RECORD: u64 = 16 << 10;

/// The first line of a record.
const MAGIC: &str = "retry-http partial 1";

/// The bytes of an earlier run, claimed by this one.
#[derive(Debug)]
pub struct Leftover {
    /// The bytes, renamed to this run's own temporary name, positioned at their end.
    pub spool: NamedTempFile,
    /// How many there are.
    pub offset: u64,
    /// The whole body's length.
    pub total: u64,
    /// What identifies their representation.
    pub validator: Validator,
}

/// The leftover's bytes and its record, beside `file` (the `-o` path, links followed).
pub fn paths(file: &Path) -> (PathBuf, PathBuf) {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let data = file.with_file_name(format!(".{name}.retry-http-partial"));
    let info = file.with_file_name(format!(".{name}.retry-http-partial.info"));
    (data, info)
}

/// The SHA-256 of `url`, in lower-case hex (FIPS 180-4).
pub fn url_digest(url: &str) -> String {
    ring::digest::digest(&ring::digest::SHA256, url.as_bytes())
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// What a record says.
#[derive(Debug, PartialEq, Eq)]
struct Record {
    digest: String,
    validator: String,
    total: u64,
    bytes: u64,
}

impl Record {
    fn text(&self) -> String {
        format!(
            "{MAGIC}\nurl-sha256 {}\nvalidator {}\ntotal {}\nbytes {}\n",
            self.digest, self.validator, self.total, self.bytes
        )
    }

    /// A record's text; `None` when it is not one (then the leftover is discarded).
    fn parse(text: &str) -> Option<Record> {
        let mut lines = text.lines();
        if lines.next()? != MAGIC {
            return None;
        }
        let mut field = |name: &str| {
            lines
                .next()
                .and_then(|l| l.strip_prefix(name))
                .and_then(|l| l.strip_prefix(' '))
                .map(str::to_string)
        };
        let digest = field("url-sha256")?;
        let validator = field("validator")?;
        let total = field("total")?.parse().ok()?;
        let bytes = field("bytes")?.parse().ok()?;
        let sane = digest.len() == 64
            && digest.bytes().all(|b| b.is_ascii_hexdigit())
            && !validator.is_empty()
            && bytes > 0
            && bytes < total;
        sane.then_some(Record {
            digest,
            validator,
            total,
            bytes,
        })
    }
}

/// Removes a leftover's two files (what is not there is no error).
fn remove(data: &Path, info: &Path) {
    let _ = std::fs::remove_file(data);
    let _ = std::fs::remove_file(info);
}

/// Takes the leftover beside `file` for `url`, if there is one that this run may resume.
/// `warn` gets a line for each leftover found but not used (another URL's, a changed or
/// unreadable one, one taken by another run, one older than a day), which is removed
/// unless another run holds it. `None`: nothing to resume (the download starts from the
/// first byte, or from FILE's size when it has one).
pub fn take(file: &Path, url: &str, warn: &mut dyn FnMut(String)) -> Option<Leftover> {
    let (data, info) = paths(file);
    let shown = data.display();
    let text = read_record(&data, &info, warn)?;
    let tmp = claim_bytes(file, &data, warn)?;
    let _ = std::fs::remove_file(&info);
    crate::process::interrupt::track_temp(tmp.path());
    let checked = check_claimed(&tmp, text.as_deref().map_err(String::as_str), url);
    match checked {
        Ok((f, record)) => Some(Leftover {
            spool: NamedTempFile::from_parts(f, tmp.into_temp_path()),
            offset: record.bytes,
            total: record.total,
            validator: Validator(record.validator),
        }),
        Err(why) => {
            warn(format!(
                "-C -: the leftover {shown} {why}: discarded, downloading from the first byte"
            ));
            crate::process::interrupt::untrack_temp(tmp.path());
            None
        }
    }
}

/// The text of the record beside the bytes `data` (`Err` inside: why it cannot be read), or
/// `None` when there is nothing to resume: no record (bytes without one are removed), or a
/// record older than [`MAX_AGE`] (both removed). Each removal is told to `warn`. The record
/// is read as every file of the run's own is (`files::owned`): not through a link, without
/// blocking, only a regular file of at most [`MAX_RECORD`] bytes.
fn read_record(
    data: &Path,
    info: &Path,
    warn: &mut dyn FnMut(String),
) -> Option<Result<String, String>> {
    let shown = data.display();
    let record_file = match owned::open(info, Access::Read) {
        Ok(Some(f)) => f,
        Ok(None) => {
            // Bytes without a record cannot be accounted for.
            if std::fs::symlink_metadata(data).is_ok() {
                warn(format!(
                    "-C -: {shown} has no record beside it: discarded, downloading from the first byte"
                ));
                let _ = std::fs::remove_file(data);
            }
            return None;
        }
        Err(e) => return Some(Err(format!("{} {e}", info.display()))),
    };
    let age = record_file
        .metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .unwrap_or_default();
    if age > MAX_AGE {
        warn(format!(
            "-C -: the leftover {shown} is older than a day: discarded, downloading from the first byte"
        ));
        remove(data, info);
        return None;
    }
    let text = match crate::files::read_bounded(record_file, MAX_RECORD) {
        Ok(Some(bytes)) => String::from_utf8(bytes).map_err(|_| "is not text".to_string()),
        Ok(None) => Err(format!("is larger than {} KiB", MAX_RECORD >> 10)),
        Err(e) => Err(format!("cannot be read ({e})")),
    };
    Some(text.map_err(|why| format!("{} {why}", info.display())))
}

/// Renames `data` over the temporary file `tmp`, which then holds its bytes.
#[cfg(unix)]
fn rename_into(data: &Path, tmp: NamedTempFile) -> io::Result<NamedTempFile> {
    std::fs::rename(data, tmp.path()).map(|()| tmp)
}

/// Windows refuses to rename over a file that is open: the temporary file is closed
/// first (its name kept, still removed when dropped), then opened again once it holds
/// `data`'s bytes.
#[cfg(windows)]
fn rename_into(data: &Path, tmp: NamedTempFile) -> io::Result<NamedTempFile> {
    let path = tmp.into_temp_path();
    std::fs::rename(data, &path)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)?;
    Ok(NamedTempFile::from_parts(file, path))
}

/// Claims the bytes `data` beside `file` by renaming them to a temporary name of this
/// run's own: the run that renames them first has them to itself. `None` (told to `warn`):
/// another run took them first, or they cannot be renamed.
fn claim_bytes(file: &Path, data: &Path, warn: &mut dyn FnMut(String)) -> Option<NamedTempFile> {
    let shown = data.display();
    let claimed = temp_beside(file, &format!(".{}.", leaf(file)), ".part")
        .and_then(|tmp| rename_into(data, tmp));
    match claimed {
        Ok(tmp) => Some(tmp),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            warn(format!(
                "-C -: the leftover {shown} is being resumed by another run: not shared, downloading from the first byte"
            ));
            None
        }
        Err(e) => {
            warn(format!(
                "-C -: cannot take the leftover {shown} ({e}): downloading from the first byte"
            ));
            None
        }
    }
}

/// Checks the claimed bytes `tmp` against their record's `text` (`Err`: why the record
/// cannot be read) and `url`: the bytes reopened at their end, and the record; `Err`: why
/// they are not resumed. The bytes are reopened as every file of the run's own is
/// (`files::owned`): what was renamed from their place is used only when it is a regular
/// file, never through a link (a link there would have the download written into its
/// target).
fn check_claimed(
    tmp: &NamedTempFile,
    text: Result<&str, &str>,
    url: &str,
) -> Result<(std::fs::File, Record), String> {
    let text = text.map_err(|why| format!("has a record that cannot be used: {why}"))?;
    let Some(record) = Record::parse(text) else {
        return Err("has a record that cannot be read".into());
    };
    if record.digest != url_digest(url) {
        return Err("was left by a download of another URL".into());
    }
    // Reopened: the temporary file's own handle is to the empty file the rename replaced.
    let (f, len) = owned::open(tmp.path(), Access::ReadWrite)
        .and_then(|f| f.ok_or_else(|| io::Error::other("is gone")))
        .and_then(|mut f| f.seek(SeekFrom::End(0)).map(|len| (f, len)))
        .map_err(|e| format!("cannot be used: it {e}"))?;
    if len != record.bytes {
        return Err(format!(
            "holds {len} bytes where its record says {}",
            record.bytes
        ));
    }
    Ok((f, record))
}

/// `-C -`: the bytes an earlier run left for the -o file, claimed by this run, as the kept
/// part of a broken download (preferred over the file's own size). None without `-C -`.
pub(super) fn claim(
    cfg: &Config,
    url: &url::Url,
    prior: &Prior,
    reporter: &Reporter,
) -> Option<Partial> {
    let file = prior.file.as_deref().filter(|_| cfg.conditional.resume)?;
    let mut warn = |w: String| reporter.warn(&w);
    let l = take(file, url.as_str(), &mut warn)?;
    reporter.info(&format!(
        "-C -: resuming the {} of {} bytes an earlier run left",
        l.offset, l.total
    ));
    Some(Partial {
        spool: Spool::Named(l.spool),
        offset: l.offset,
        total: l.total,
        validator: l.validator,
    })
}

/// The run ends with a part of the body kept: under `-C -` it is left beside the -o
/// file for the next run (see [`keep`]), else thrown away.
pub(super) fn leave_or_discard(
    p: Partial,
    (cfg, url): (&Config, &url::Url),
    prior: &Prior,
    output: &Output,
    reporter: &Reporter,
) {
    let file = prior.file.as_deref().filter(|_| cfg.conditional.resume);
    let (file, tmp) = match (file, p.spool) {
        (Some(file), Spool::Named(tmp)) => (file, tmp),
        (_, spool) => return output.discard(spool),
    };
    let temp = tmp.path().to_path_buf();
    let url = url.as_str();
    match keep(file, url, tmp, p.offset, p.total, &p.validator) {
        Ok(data) => reporter.info(&format!(
            "-C -: kept {} of {} bytes in {} for the next run with -C -",
            p.offset,
            p.total,
            data.display()
        )),
        Err(e) => reporter.warn(&format!(
            "-C -: cannot keep the {} bytes received for the next run: {e}",
            p.offset
        )),
    }
    crate::process::interrupt::untrack_temp(&temp);
}

fn leaf(file: &Path) -> String {
    file.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Leaves `spool`, the first `offset` of `total` bytes of `url`'s body identified by
/// `validator`, beside `file` for the next run: the bytes renamed into their place, then
/// the record (written whole by a temporary file and rename), so that a record always has
/// its bytes (bytes without a record are discarded by the next run). Nothing is synced to
/// the disk: this runs in the moments a signal or the deadline leaves before the process
/// ends, and a record that does not match its bytes is discarded. `Err`: they could not be
/// kept (both files are then removed).
pub fn keep(
    file: &Path,
    url: &str,
    spool: NamedTempFile,
    offset: u64,
    total: u64,
    validator: &Validator,
) -> io::Result<PathBuf> {
    let (data, info) = paths(file);
    let record = Record {
        digest: url_digest(url),
        validator: validator.0.clone(),
        total,
        bytes: offset,
    };
    let written = (|| {
        let mut tmp = temp_beside(&info, &format!(".{}.", leaf(&info)), ".part")?;
        tmp.write_all(record.text().as_bytes())?;
        crate::files::persist(spool, &data).map_err(|e| e.error)?;
        crate::files::persist(tmp, &info).map_err(|e| e.error)?;
        Ok(())
    })();
    if written.is_err() {
        remove(&data, &info);
    }
    written.map(|()| data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_and_nothing_else_is_one() {
        let r = Record {
            digest: url_digest("https://u:p@example.com/f"),
            validator: "\"v1\"".into(),
            total: 10,
            bytes: 4,
        };
        assert_eq!(Record::parse(&r.text()), Some(r));
        assert_eq!(Record::parse(""), None);
        assert_eq!(Record::parse("retry-http partial 1\nurl-sha256 x\n"), None);
        let whole = "retry-http partial 1\nurl-sha256 {d}\nvalidator \"v\"\ntotal 4\nbytes 4\n"
            .replace("{d}", &url_digest("u"));
        assert_eq!(Record::parse(&whole), None, "nothing left to resume");
    }

    #[test]
    fn the_digest_is_sha256_in_hex() {
        assert_eq!(
            url_digest("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn kept_bytes_are_taken_once_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.bin");
        let mut spool = temp_beside(&file, ".f.bin.", ".part").unwrap();
        spool.write_all(b"0123").unwrap();
        let v = Validator("\"v1\"".into());
        keep(&file, "http://h/f", spool, 4, 10, &v).unwrap();
        let mut warned = Vec::new();
        let other = take(&file, "http://h/g", &mut |w| warned.push(w));
        assert!(
            other.is_none() && warned[0].contains("another URL"),
            "{warned:?}"
        );
        let spool = temp_beside(&file, ".f.bin.", ".part").unwrap();
        std::fs::write(spool.path(), b"0123").unwrap();
        let reopened = NamedTempFile::from_parts(
            std::fs::OpenOptions::new()
                .append(true)
                .open(spool.path())
                .unwrap(),
            spool.into_temp_path(),
        );
        keep(&file, "http://h/f", reopened, 4, 10, &v).unwrap();
        let l = take(&file, "http://h/f", &mut |w| panic!("{w}")).expect("taken");
        assert_eq!((l.offset, l.total, l.validator), (4, 10, v));
        assert!(take(&file, "http://h/f", &mut |w| panic!("{w}")).is_none());
    }
}
