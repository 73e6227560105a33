//! Delivering a response body: into a spool, then committed to stdout or `-o` when it is
//! complete; kept when a download breaks mid-body and can be resumed (see `resume`); the
//! final error body for `--fail-with-body` and `-I`.

use crate::config::Config;
use crate::exit::Outcome;
use crate::http::carrier::Carrier;
use crate::http::resume;
use crate::http::transport::{Exchange, Failure};
use crate::output::{Output, Spool};
use crate::policy::FailureKind;
use crate::process::deadline::Watchdog;
use crate::report::Reporter;
use std::time::{Duration, Instant};

/// The part of a body already received, and what identifies its representation.
pub struct Partial {
    pub(crate) spool: Spool,
    pub(crate) offset: u64,
    /// The whole body's length, from the first response's Content-Length.
    pub(crate) total: u64,
    pub(crate) validator: resume::Validator,
}

/// A body read whole into its spool, not yet committed.
pub struct Received {
    /// The spool.
    pub spool: Spool,
    /// The body's whole length in bytes.
    pub len: u64,
    /// Where the body begins in the spool (after a head written by `-i` or `-D -`).
    pub body_start: u64,
}

/// A resumed download: the kept part, and the range the 206 must fill exactly.
pub struct Resumed {
    pub(crate) partial: Partial,
    pub(crate) range: resume::Continuation,
}

/// A body that did not get to its destination: why, and the part kept to be resumed.
pub struct Broken {
    /// What went wrong.
    pub failure: Failure,
    /// The bytes received, kept for the next attempt to resume (a GET to a regular `-o`
    /// file whose first answer had a validator and a length).
    pub kept: Option<Partial>,
}

impl From<Failure> for Broken {
    fn from(failure: Failure) -> Self {
        Broken {
            failure,
            kept: None,
        }
    }
}

/// What delivering a body needs, borrowed from the run.
pub struct Delivery<'a> {
    /// The validated configuration (`--max-filesize`, the deadline).
    pub cfg: &'a Config,
    /// Where bodies go.
    pub output: &'a Output,
    /// Reads bodies (and decodes them under `--compressed`).
    pub transport: &'a dyn Carrier,
    /// Progress lines and warnings.
    pub reporter: &'a Reporter,
    /// A file is put in place only under its lock, before the deadline and any signal.
    pub watchdog: &'a Watchdog,
    /// When the process started (the deadline counts from here).
    pub start: Instant,
}

impl Delivery<'_> {
    /// Whether a broken download may be resumed: a GET (the request that got this answer:
    /// under `-L` it may follow a POST's 303) to a regular `-o` file, without `-i`.
    /// Under `-C -` a download that began from the first byte is kept too (and left for the
    /// next run when this one ends without it); a continuation of the `-o` file's own
    /// bytes has no validator, so it is not kept (the next attempt asks from the file's
    /// size again).
    fn can_resume(&self, get: bool) -> bool {
        get && self.output.resumable()
    }

    fn deadline_left(&self) -> Option<Duration> {
        self.cfg
            .retry
            .deadline
            .map(|d| d.saturating_sub(self.start.elapsed()))
    }

    /// Reads the body into a spool (a fresh one, or the kept part of a resumed download)
    /// and commits it when complete; returns the body's whole length in bytes (the kept
    /// part included). `get`: the answer is to a GET, so a broken body may be kept and
    /// resumed.
    pub fn deliver(
        &self,
        ex: Exchange,
        continued: Option<Resumed>,
        get: bool,
    ) -> Result<u64, Broken> {
        let received = self.receive(ex, continued, get)?;
        self.put_in_place(received.spool, received.len)
    }

    /// Reads the body into a spool, whole and checked, but does not commit it: what
    /// `deliver` does before the body is put in place, for a readiness condition to read it
    /// first (then `commit` or `discard`).
    pub fn receive(
        &self,
        ex: Exchange,
        continued: Option<Resumed>,
        get: bool,
    ) -> Result<Received, Broken> {
        let offset = continued.as_ref().map_or(0, |r| r.partial.offset);
        let range = continued.as_ref().map(|r| r.range);
        let announced = ex
            .head
            .value("content-length")
            .and_then(|v| v.parse::<u64>().ok());
        // The whole body's length: the first response's, kept with the partial download.
        let total = match &continued {
            Some(r) => Some(r.partial.total),
            None => announced,
        };
        self.check_size(announced, offset)?;
        let remote_time = self.remote_time(&ex.head);
        let (mut spool, validator) = match continued {
            Some(r) => (r.partial.spool, Some(r.partial.validator)),
            None => {
                let spool = self.output.begin(&ex.head).map_err(|e| {
                    Failure::new(
                        FailureKind::Local,
                        format!("cannot create a temporary file for the body: {e}"),
                    )
                })?;
                (spool, resume::validator(&ex.head))
            }
        };
        // A kept part (only for a regular -o file, without -i) holds no head; a fresh spool
        // may begin with one (-i, -D -).
        let body_start = if offset == 0 { spool.len() } else { 0 };
        let read = self.read_into(ex, &mut spool, offset, total);
        let n = match read {
            Ok(n) => n,
            Err(f) => return Err(self.keep_or_discard(spool, f, validator, total, get)),
        };
        if let Some(r) = range
            && let Err(f) = self.check_range(n, r, &spool)
        {
            self.output.discard(spool);
            return Err(Broken::from(f));
        }
        if let Some(t) = remote_time
            && let Err(e) = crate::request::prior::set_remote_time(&spool, t)
        {
            self.reporter
                .warn(&format!("-R: cannot set the file's modification time: {e}"));
        }
        Ok(Received {
            spool,
            len: offset + n,
            body_start,
        })
    }

    /// Commits a body `receive` read: see `put_in_place`.
    pub fn commit(&self, received: Received) -> Result<u64, Broken> {
        self.put_in_place(received.spool, received.len)
    }

    /// `-R`: the time to give the file, from a single Last-Modified that is an HTTP-date;
    /// without one the file keeps the time it was written, and the log says so.
    fn remote_time(&self, head: &crate::http::transport::Head) -> Option<std::time::SystemTime> {
        if !self.cfg.conditional.remote_time {
            return None;
        }
        let t = crate::http::conditional::last_modified(head);
        if t.is_none() {
            self.reporter.warn(
                "-R: the response has no single Last-Modified that is an HTTP-date; the file keeps the time it was written",
            );
        }
        t
    }

    /// A resumed body must be exactly its range, and the whole exactly its length: one
    /// byte more or less and the file would be spliced. Under `-C -`, more than the range
    /// is a server that cannot resume, which asking again will not change; fewer bytes is
    /// a body cut short (retried, from the start of the range).
    fn check_range(&self, n: u64, r: resume::Continuation, spool: &Spool) -> Result<(), Failure> {
        if self.cfg.conditional.resume && n > r.byte_count() {
            return Err(Failure::new(
                FailureKind::NotResumable,
                format!(
                    "the 206 carried {n} bytes for a range of {}; the file is left as it was",
                    r.byte_count()
                ),
            ));
        }
        if n != r.byte_count() || spool.len() != r.last + 1 {
            return Err(Failure::new(
                FailureKind::Truncated,
                format!(
                    "the 206 carried {n} bytes for a range of {}; starting over",
                    r.byte_count()
                ),
            ));
        }
        Ok(())
    }

    /// `--max-filesize` against the announced length, before a byte is read.
    fn check_size(&self, announced: Option<u64>, offset: u64) -> Result<(), Failure> {
        match (self.cfg.output.max_filesize, announced) {
            (Some(max), Some(len)) if len.saturating_add(offset) > max => Err(Failure::new(
                FailureKind::TooLarge,
                format!(
                    "the body ({} bytes) is larger than --max-filesize {max}",
                    len.saturating_add(offset)
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Reads the body into `spool` (after `offset` kept bytes), showing progress on a
    /// terminal for large bodies; returns the bytes read.
    fn read_into(
        &self,
        ex: Exchange,
        spool: &mut Spool,
        offset: u64,
        total: Option<u64>,
    ) -> Result<u64, Failure> {
        let room = self
            .cfg
            .output
            .max_filesize
            .map(|m| m.saturating_sub(offset));
        let mut shown: Option<Instant> = None;
        let mut progress = |bytes: u64| {
            // Small bodies finish before anyone could read a progress line.
            if bytes >= 1 << 20 && shown.is_none_or(|t| t.elapsed() >= Duration::from_millis(250)) {
                shown = Some(Instant::now());
                self.reporter.progress(offset + bytes, total);
            }
        };
        let decode = self.transport.decodes(&ex.head);
        let speed = self.cfg.request.network.speed;
        let read = self
            .transport
            .read_body(ex, (decode, speed), spool, room, &mut progress);
        self.reporter.clear_live();
        read
    }

    /// Commits a complete body: a file is renamed into place (under the watchdog's lock,
    /// so never after the deadline or a signal), stdout is written within the deadline.
    /// Returns `len`, the bytes delivered, or 0 when the reader of stdout went away.
    fn put_in_place(&self, spool: Spool, len: u64) -> Result<u64, Broken> {
        let written = if spool.is_named() {
            let mut slot = Some(spool);
            let renamed = self
                .watchdog
                .commit(|| slot.take().map(|s| self.output.commit(s, None)));
            match renamed.flatten() {
                Some(result) => result,
                None => {
                    if let Some(s) = slot.take() {
                        self.output.discard(s);
                    }
                    return Err(Broken::from(Failure::new(
                        FailureKind::Timeout,
                        "stopped (deadline or signal) before the file was put in place",
                    )));
                }
            }
        } else {
            self.output.commit(spool, self.deadline_left())
        };
        match written {
            Ok(()) => Ok(len),
            // The reader of stdout went away: nothing more to say to it.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(0),
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                Err(Failure::new(FailureKind::Timeout, e.to_string()).into())
            }
            Err(e) => Err(Failure::new(
                FailureKind::Local,
                format!("cannot write the output: {e}"),
            )
            .into()),
        }
    }

    /// A body that broke: its bytes kept to be resumed (a GET to a regular `-o` file whose
    /// first answer had a validator and a length), else thrown away. A break after bytes
    /// reached stdout (`--no-buffer`) cannot be retried.
    fn keep_or_discard(
        &self,
        spool: Spool,
        mut f: Failure,
        validator: Option<resume::Validator>,
        total: Option<u64>,
        get: bool,
    ) -> Broken {
        let escaped = spool.escaped();
        let kept = spool.len();
        let mut partial = None;
        match (validator, total) {
            (Some(validator), Some(total))
                if self.can_resume(get)
                    && !validator.0.is_empty()
                    && f.kind.is_retryable()
                    && kept > 0
                    && kept < total =>
            {
                f.detail = format!("{}; kept {kept} bytes to resume", f.detail);
                partial = Some(Partial {
                    spool,
                    offset: kept,
                    total,
                    validator,
                });
            }
            _ => self.output.discard(spool),
        }
        if escaped > 0 && f.kind.is_retryable() {
            f.detail = format!(
                "{} after {escaped} bytes were streamed (--no-buffer)",
                f.detail
            );
            f.kind = FailureKind::Streamed;
        }
        Broken {
            failure: f,
            kept: partial,
        }
    }

    /// `--fail-with-body`: the final error response's body is written too.
    pub fn deliver_error_body(&self, ex: Exchange, outcome: Outcome) -> Outcome {
        match self.deliver(ex, None, false) {
            Ok(_) => outcome,
            Err(Broken { failure: f, .. }) => {
                self.reporter
                    .warn(&format!("could not write the error body: {}", f.detail));
                if f.kind == FailureKind::Local {
                    Outcome::Local
                } else {
                    outcome
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::scripted::{Script, answer, config, cut, exchange, quiet};
    use std::path::Path;

    /// A body of ten bytes with a validator and byte ranges, cut after four.
    fn cut_at_four() -> Exchange {
        let head = [
            ("content-length", "10"),
            ("etag", "\"v1\""),
            ("accept-ranges", "bytes"),
        ];
        exchange(cut(answer(200, &head, b"0123456789"), 4))
    }

    /// Runs `check` with a delivery to `-o FILE` in a scratch folder, and FILE's path.
    fn to_a_file(check: impl FnOnce(&Delivery, &Path)) {
        let dir = tempfile::tempdir().expect("a folder");
        let file = dir.path().join("out");
        let cfg = config(&["-o", &file.to_string_lossy(), "http://h/"]);
        let output =
            Output::prepare(&cfg.output, cfg.batch.first().output.as_deref()).expect("an output");
        let (reporter, watchdog, script) = (quiet(), Watchdog::none(), Script::new(vec![]));
        let delivery = Delivery {
            cfg: &cfg,
            output: &output,
            transport: &script,
            reporter: &reporter,
            watchdog: &watchdog,
            start: Instant::now(),
        };
        check(&delivery, &file);
    }

    #[test]
    fn a_get_cut_mid_body_keeps_its_bytes_and_the_next_answer_completes_them() {
        to_a_file(|delivery, file| {
            let Err(broken) = delivery.deliver(cut_at_four(), None, true) else {
                panic!("a body cut short")
            };
            let kept = broken.kept.expect("the bytes kept");
            assert_eq!((kept.offset, kept.total), (4, 10));
            assert!(!file.exists(), "nothing in place yet");
            let rest = [
                ("content-length", "6"),
                ("content-range", "bytes 4-9/10"),
                ("etag", "\"v1\""),
            ];
            let rest = exchange(answer(206, &rest, b"456789"));
            let range = resume::continues(&rest.head, 4, 10, &kept.validator).expect("continued");
            let resumed = Resumed {
                partial: kept,
                range,
            };
            assert_eq!(delivery.deliver(rest, Some(resumed), true).ok(), Some(10));
            let written = std::fs::read(file).ok();
            assert_eq!(written.as_deref(), Some(&b"0123456789"[..]));
        });
    }

    #[test]
    fn a_body_cut_short_is_not_kept_for_a_request_other_than_get() {
        to_a_file(|delivery, file| {
            let Err(broken) = delivery.deliver(cut_at_four(), None, false) else {
                panic!("a body cut short")
            };
            assert!(broken.kept.is_none());
            assert!(broken.failure.kind.is_retryable(), "{:?}", broken.failure);
            assert!(!file.exists(), "nothing written");
        });
    }
}
