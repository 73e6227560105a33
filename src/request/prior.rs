//! What earlier runs left, read around the attempt loop: the I/O of the conditional flags. Before anything is sent, [`prepare`]
//! reads the files they name (the ETag of `--etag-compare`, the file whose time `-z`
//! names, the cookie files of `-b`, the size of the `-o` file that `-C -` resumes), each a
//! usage error when it cannot be read (but a `-z` file that does not exist sends no
//! condition, with a warning, as curl does); it gives the headers to send and what the answer is
//! judged against (`http::conditional`). During an attempt, [`copy_kept`] puts the bytes
//! the file already has into the spool that the 206 then completes, and [`set_remote_time`]
//! gives the spool `-R`'s time before it is renamed into place. After a successful run,
//! [`save_etag`] writes `--etag-save` by temporary file and rename.

use crate::config::conditional::{DATE_FORMS, TimeCond, TimeSource, condition_header};
use crate::config::{Config, Transfer};
use crate::files::{follow_link, temp_beside};
use crate::http::conditional::{self, Answer, Asked};
use crate::http::cookies;
use crate::http::transport::Head;
use crate::output::Spool;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The most of an `--etag-compare` file read: an ETag is a line.
const MAX_ETAG: u64 = 8 << 10;
/// The most of a `-b` cookie file read.
const MAX_COOKIES: u64 = 4 << 20;
/// The last second an HTTP-date can name (9999-12-31 23:59:59 UTC).
const LAST_DATE: u64 = 253_402_300_799;

/// What earlier runs left that the conditional flags make this one send and judge against, once
/// their files are read: the ETag, a file's time, cookies, the part of the `-o` file
/// already there.
#[derive(Debug, Default)]
pub struct Prior {
    /// Headers to send on every attempt: If-None-Match, If-(Un)Modified-Since, Cookie.
    pub headers: Vec<(String, String)>,
    /// What the answer is judged against.
    pub asked: Asked,
    /// `-C -`: the `-o` file the kept bytes are copied from (it has `asked.resume_from`).
    pub file: Option<PathBuf>,
    /// `-C -` with `--etag-compare`: the file's strong ETag, sent as `If-Range`.
    pub if_range: Option<String>,
    /// Warnings to show before the first attempt (a `-z` that names no file: no condition
    /// is sent, as curl warns and sends none).
    pub warnings: Vec<String>,
}

impl Prior {
    /// The `Range` that `-C -` asks for (none for a missing or empty file), with `If-Range`
    /// when the file's ETag is known (`--etag-compare`): a server whose copy changed since
    /// then sends it whole (200) instead of its tail.
    pub fn range(&self) -> Vec<(String, String)> {
        let Some(size) = self.asked.resume_from else {
            return Vec::new();
        };
        std::iter::once(("Range".to_string(), format!("bytes={size}-")))
            .chain(self.if_range.iter().map(|t| ("If-Range".into(), t.clone())))
            .collect()
    }

    /// What `head`, the final answer, means for the output.
    pub fn judge(&self, head: &Head) -> Answer {
        conditional::judge(head, &self.asked)
    }

    /// The status `-w` reports for `head`, the final answer (a 200 that showed the `-z`
    /// condition unmet is a 304, as in curl).
    pub fn reported_status(&self, head: &Head) -> u16 {
        conditional::reported_status(head, &self.asked)
    }

    /// After a successful run: `--etag-save` gets the ETag of `head`, the final answer,
    /// when its body was delivered (a 2xx); a 304, or an output left as it was, leaves the
    /// saved ETag as it was. `Err`: why it could not be written.
    pub fn save(&self, path: Option<&Path>, head: Option<&Head>) -> Result<(), String> {
        let (Some(path), Some(head)) = (path, head) else {
            return Ok(());
        };
        if !(200..300).contains(&head.status) || matches!(self.judge(head), Answer::Unchanged(_)) {
            return Ok(());
        }
        save_etag(path, head)
            .map_err(|e| format!("cannot write --etag-save {}: {e}", path.display()))
    }
}

/// Reads what the conditional flags name for transfer `t` (its `-o` file to resume, the
/// cookies for its URL; `Err`: a usage error, one line).
pub fn prepare(cfg: &Config, t: &Transfer) -> Result<Prior, String> {
    let c = &cfg.conditional;
    let mut out = Prior {
        asked: Asked {
            include: cfg.output.include,
            ..Asked::default()
        },
        ..Prior::default()
    };
    let mut etag = None;
    if let Some(path) = &c.etag_compare
        && let Some(tag) = read_etag(path, c.etag_save.is_some())?
    {
        out.headers.push(("If-None-Match".into(), tag.clone()));
        etag = Some(tag);
    }
    if let Some(t) = &c.time_cond {
        time_condition(t, &mut out)?;
    }
    let hand_written = |name: &str| {
        cfg.request
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
            || cfg.request.removed.iter().any(|n| n == name)
    };
    if !hand_written("cookie")
        && let Some(value) = cookie_header(cfg, &t.url)?
    {
        out.headers.push(("Cookie".into(), value));
    }
    if c.resume {
        let typed = t.output.as_deref().unwrap_or(Path::new(""));
        let file = follow_link(typed).unwrap_or_else(|_| typed.to_path_buf());
        out.asked.resume_from = kept_size(&file, typed)?;
        out.file = Some(file);
        // Only a strong ETag may be an If-Range (RFC 9110 section 13.1.5); a date could be,
        // but the file's own time is no server's Last-Modified.
        if out.asked.resume_from.is_some()
            && let Some(tag) = etag.filter(|t| one_strong_etag(t))
        {
            out.if_range = Some(tag);
            out.asked.if_range = true;
        }
    }
    Ok(out)
}

/// Whether `t` is one strong entity tag, `"..."` (RFC 9110 section 8.8.3), as If-Range
/// takes it: not weak (`W/"..."`), not `*`, not a list.
fn one_strong_etag(t: &str) -> bool {
    t.len() >= 2 && t.starts_with('"') && t.ends_with('"') && !t[1..t.len() - 1].contains('"')
}

/// `-z`: the header that sends the condition and the time the answer is judged against;
/// a text that is neither a date nor an existing file sends none, with a warning, as curl
/// does (the first run of `-z FILE -o FILE`, before FILE exists).
fn time_condition(t: &TimeCond, out: &mut Prior) -> Result<(), String> {
    let time = match &t.source {
        TimeSource::Date(d) => *d,
        TimeSource::File(p) => match modified(p)? {
            Some(time) => time,
            None => {
                out.warnings.push(format!(
                    "-z {:?} is neither a date nor an existing file: sending no time condition, as curl does (expected {DATE_FORMS})",
                    p.display().to_string()
                ));
                return Ok(());
            }
        },
    };
    let name = match condition_header(t.unmodified) {
        "if-unmodified-since" => "If-Unmodified-Since",
        _ => "If-Modified-Since",
    };
    out.headers
        .push((name.into(), httpdate::fmt_http_date(time)));
    out.asked.since = Some((time, t.unmodified));
    Ok(())
}

/// What a file the conditional flags name holds.
enum Held {
    /// No such file.
    Missing,
    /// More than the bytes allowed.
    TooLarge,
    /// Its bytes.
    Bytes(Vec<u8>),
}

/// Opens a file the conditional flags name and reads it, if it holds at most `max` bytes.
fn read_at_most(path: &Path, max: u64) -> io::Result<Held> {
    let f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Held::Missing),
        Err(e) => return Err(e),
    };
    Ok(crate::files::read_bounded(f, max)?.map_or(Held::TooLarge, Held::Bytes))
}

/// `--etag-compare FILE`: its first line (`None`: empty, or missing when `--etag-save` will
/// create it).
fn read_etag(path: &Path, saving: bool) -> Result<Option<String>, String> {
    let shown = path.display();
    let bytes = match read_at_most(path, MAX_ETAG) {
        Ok(Held::Bytes(b)) => b,
        Ok(Held::Missing) if saving => return Ok(None),
        Ok(Held::Missing) => {
            return Err(format!(
                "--etag-compare {shown}: no such file; give --etag-save {shown} too, so the first run creates it"
            ));
        }
        Ok(Held::TooLarge) => {
            return Err(format!(
                "--etag-compare {shown} is larger than 8 KiB: expected one line, an ETag"
            ));
        }
        Err(e) => return Err(format!("--etag-compare {shown}: cannot read it: {e}")),
    };
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("--etag-compare {shown} is not UTF-8 text: expected an ETag"))?;
    let tag = text.lines().next().unwrap_or("").trim();
    if crate::cli::values::unsendable(tag, false).is_some() {
        return Err(format!(
            "--etag-compare {shown} holds a control character: expected an ETag such as \"v1\""
        ));
    }
    Ok((!tag.is_empty()).then(|| tag.to_string()))
}

/// `-z FILE`: the file's modification time; `None` when no such file exists (the text is
/// neither a date nor a file: curl then sends no condition). A file that exists but whose
/// time cannot be read (a folder on its path that cannot be searched) is an error.
fn modified(path: &Path) -> Result<Option<SystemTime>, String> {
    let shown = path.display();
    let m = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(None);
        }
        Err(e) => {
            return Err(format!(
                "-z {shown}: cannot read its modification time: {e}"
            ));
        }
    };
    let t = m
        .modified()
        .map_err(|e| format!("-z {shown}: cannot read its modification time: {e}"))?;
    // An HTTP-date names 1970 to 9999.
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Ok(Some(
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs.min(LAST_DATE)),
    ))
}

/// `-b`: the cookies of the files that match `url`, then the strings, as one value.
fn cookie_header(cfg: &Config, url: &url::Url) -> Result<Option<String>, String> {
    let mut parts = Vec::new();
    for path in &cfg.conditional.cookie_files {
        let shown = path.display();
        let bytes = match read_at_most(path, MAX_COOKIES) {
            Ok(Held::TooLarge) => {
                return Err(format!(
                    "-b {shown} is larger than 4 MiB: expected a cookie file"
                ));
            }
            Ok(Held::Bytes(b)) => b,
            // A link to nowhere names a path: said with it, as for any other input file.
            Ok(Held::Missing) if std::fs::symlink_metadata(path).is_ok() => {
                return Err(format!(
                    "-b {shown}: cannot read it: a link to a file that does not exist"
                ));
            }
            // Not quoted: a value without '=' that names no file may be a cookie's value.
            Ok(Held::Missing) => {
                return Err(
                    "-b: no such file (a -b value without '=' names a cookie file; a cookie is NAME=VALUE; the name given is not quoted, as it may be a cookie)".into()
                );
            }
            Err(e) => return Err(format!("-b {shown}: cannot read it: {e}")),
        };
        let jar = cookies::parse(&String::from_utf8_lossy(&bytes));
        parts.extend(cookies::header(&jar, url, SystemTime::now()));
    }
    parts.extend(cfg.conditional.cookie_strings.iter().cloned());
    let value = parts.join("; ");
    // A cookie file's values are secrets from here on, as -b's strings are.
    crate::redact::mark(crate::redact::Secret::Header("Cookie", &value));
    Ok((!parts.is_empty()).then_some(value))
}

/// `-C -`: the bytes the `-o` file holds (`None`: missing or empty, so the download starts
/// from the first byte); it must be a regular file that can be read.
fn kept_size(file: &Path, typed: &Path) -> Result<Option<u64>, String> {
    let shown = typed.display();
    match std::fs::metadata(file) {
        Ok(m) if !m.is_file() => Err(format!(
            "-C - resumes a regular file: the output file {shown} is not one"
        )),
        Ok(m) if m.len() == 0 => Ok(None),
        Ok(m) => std::fs::File::open(file)
            .map(|_| Some(m.len()))
            .map_err(|e| format!("-C -: cannot read the output file {shown} to resume it: {e}")),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("-C -: cannot read the output file {shown}: {e}")),
    }
}

/// Copies the first `size` bytes of `file` into the spool, which the 206 then completes.
/// Between two files on Linux the copy stays in the kernel (copy_file_range, which shares
/// the blocks on file systems that can: XFS, Btrfs), so a large file is not read through
/// this process.
pub fn copy_kept(spool: &mut Spool, file: &Path, size: u64) -> io::Result<()> {
    let Spool::Named(tmp) = spool else {
        return Err(io::Error::other("-C - resumes a regular -o file only"));
    };
    let mut src = std::fs::File::open(file)?.take(size);
    let copied = io::copy(&mut src, tmp.as_file_mut())?;
    if copied != size {
        return Err(io::Error::other(format!(
            "the -o file shrank from {size} to {copied} bytes during the run"
        )));
    }
    Ok(())
}

/// `-R`: gives the spool of a regular `-o` file the answer's Last-Modified as its
/// modification time `t`, before it is renamed into place (other spools: nothing).
pub fn set_remote_time(spool: &Spool, t: SystemTime) -> io::Result<()> {
    match spool {
        Spool::Named(tmp) => tmp.as_file().set_modified(t),
        _ => Ok(()),
    }
}

/// `--etag-save FILE`: the answer's ETag and a newline (an empty file when it has none, as
/// curl writes it), by temporary file and rename.
pub fn save_etag(path: &Path, head: &Head) -> io::Result<()> {
    let dest = follow_link(path).unwrap_or_else(|_| path.to_path_buf());
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut tmp = temp_beside(&dest, &format!(".{name}."), ".part")?;
    // Only a tag --etag-compare will send back is kept: one over 8 KiB, or with a control
    // character, would make every later run a usage error; the file says "none known".
    let sendable = |t: &&str| {
        !t.is_empty()
            && (t.len() as u64) < MAX_ETAG
            && crate::cli::values::unsendable(t, false).is_none()
    };
    if let Some(tag) = head.value("etag").map(str::trim).filter(sendable) {
        writeln!(tmp, "{tag}")?;
    }
    tmp.as_file().sync_all()?;
    crate::files::persist(tmp, &dest).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(headers: &[(&str, &str)]) -> Head {
        Head::for_test(200, headers)
    }

    #[test]
    fn an_etag_that_could_not_be_sent_back_is_not_saved() {
        let dir = tempfile::tempdir().expect("dir");
        let p = dir.path().join("e");
        let long = format!("\"{}\"", "x".repeat(9000));
        save_etag(&p, &head(&[("etag", &long)])).expect("saved");
        assert_eq!(std::fs::read(&p).expect("read"), b"");
        assert_eq!(
            read_etag(&p, true),
            Ok(None),
            "the next run sends no condition"
        );
    }

    #[test]
    fn only_one_strong_etag_is_an_if_range() {
        for t in ["\"v1\"", "\"\""] {
            assert!(one_strong_etag(t), "{t}");
        }
        for t in ["W/\"v1\"", "*", "\"a\", \"b\"", "v1", "\""] {
            assert!(!one_strong_etag(t), "{t}");
        }
    }

    #[test]
    fn an_etag_file_is_its_first_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("e");
        std::fs::write(&p, "\"v1\"\r\nrest\n").unwrap();
        assert_eq!(read_etag(&p, false), Ok(Some("\"v1\"".into())));
        std::fs::write(&p, "").unwrap();
        assert_eq!(read_etag(&p, false), Ok(None));
        std::fs::write(&p, "\"a\u{7}\"").unwrap();
        assert!(read_etag(&p, false).is_err());
        std::fs::write(&p, vec![b'x'; 9000]).unwrap();
        assert!(read_etag(&p, false).unwrap_err().contains("8 KiB"));
        let missing = dir.path().join("missing");
        assert_eq!(read_etag(&missing, true), Ok(None));
        assert!(
            read_etag(&missing, false)
                .unwrap_err()
                .contains("--etag-save")
        );
    }

    #[test]
    fn the_saved_etag_replaces_the_file_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("e");
        std::fs::write(&p, "\"old\"\n").unwrap();
        save_etag(&p, &head(&[("etag", "\"v2\"")])).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "\"v2\"\n");
        save_etag(&p, &head(&[])).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temp file left"
        );
    }

    #[test]
    fn a_file_to_resume_must_be_regular() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        assert_eq!(kept_size(&p, &p), Ok(None));
        std::fs::write(&p, "").unwrap();
        assert_eq!(kept_size(&p, &p), Ok(None));
        std::fs::write(&p, "01234").unwrap();
        assert_eq!(kept_size(&p, &p), Ok(Some(5)));
        assert!(kept_size(dir.path(), dir.path()).is_err());
    }
}
