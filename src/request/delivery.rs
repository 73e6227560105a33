//! Delivering a response body: into a spool, then committed to stdout or `-o` when it is
//! complete; kept when a download breaks mid-body and can be resumed (see `resume`); the
//! final error body for `--fail-with-body` and `-I`.

use crate::exit::Outcome;
use crate::http::resume;
use crate::http::transport::{Exchange, Failure, Transport};
use crate::output::Spool;
use crate::policy::FailureKind;
use crate::request::attempt::{Loop, failure};
use std::time::{Duration, Instant};

/// The part of a body already received, and what identifies its representation.
pub struct Partial {
    pub(crate) spool: Spool,
    pub(crate) offset: u64,
    /// The whole body's length, from the first response's Content-Length.
    pub(crate) total: u64,
    pub(crate) validator: resume::Validator,
}

/// A resumed download: the kept part, and the range the 206 must fill exactly.
pub struct Resumed {
    pub(crate) partial: Partial,
    pub(crate) range: resume::Continuation,
}

impl Loop<'_> {
    /// Whether a broken download may be resumed: a GET (the request that got this answer:
    /// under `-L` it may follow a POST's 303) to a regular `-o` file, without `-i`.
    pub(crate) fn can_resume(&self, get: bool) -> bool {
        get && self.output.resumable()
    }

    /// Reads the body into a spool (a fresh one, or the kept part of a resumed download)
    /// and commits it when complete.
    /// `get`: the answer is to a GET, so a broken body may be kept and resumed.
    pub(crate) fn deliver(
        &self,
        ex: Exchange,
        continued: Option<Resumed>,
        get: bool,
    ) -> Result<(), Failure> {
        let limit = self.cfg.output.max_filesize;
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
        if let (Some(max), Some(len)) = (limit, announced)
            && len.saturating_add(offset) > max
        {
            return Err(failure(
                FailureKind::TooLarge,
                format!(
                    "the body ({} bytes) is larger than --max-filesize {max}",
                    len.saturating_add(offset)
                ),
            ));
        }
        let (mut spool, validator) = match continued {
            Some(r) => (r.partial.spool, Some(r.partial.validator)),
            None => {
                let spool = self.output.begin(&ex.head).map_err(|e| {
                    failure(
                        FailureKind::Local,
                        format!("cannot create a temporary file for the body: {e}"),
                    )
                })?;
                (spool, resume::validator(&ex.head))
            }
        };
        let room = limit.map(|m| m.saturating_sub(offset));
        let mut shown: Option<Instant> = None;
        let mut progress = |bytes: u64| {
            // Small bodies finish before anyone could read a progress line.
            if bytes >= 1 << 20 && shown.is_none_or(|t| t.elapsed() >= Duration::from_millis(250)) {
                shown = Some(Instant::now());
                self.reporter.progress(offset + bytes, total);
            }
        };
        let decode = self.transport.decodes(&ex.head);
        let read = Transport::read_body(ex.body, decode, &mut spool, room, &mut progress);
        self.reporter.clear_live();
        // A resumed body must be exactly its range, and the whole exactly its length: one
        // byte more or less and the file would be spliced.
        let read = match (read, range) {
            (Ok(n), Some(r)) if n != r.len() || spool.len() != r.last + 1 => {
                self.output.discard(spool);
                return Err(failure(
                    FailureKind::Truncated,
                    format!(
                        "the 206 carried {n} bytes for a range of {}; starting over",
                        r.len()
                    ),
                ));
            }
            (read, _) => read,
        };
        let n = match read {
            Ok(n) => n,
            Err(f) => return Err(self.keep_or_discard(spool, f, validator, total, get)),
        };
        let written = if spool.is_named() {
            // A file is put in place only before the deadline and before any signal.
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
                    return Err(failure(
                        FailureKind::Timeout,
                        "stopped (deadline or signal) before the file was put in place",
                    ));
                }
            }
        } else {
            self.output.commit(spool, self.deadline_left())
        };
        match written {
            // The reader of stdout went away: nothing more to say to it.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                Err(failure(FailureKind::Timeout, e.to_string()))
            }
            Err(e) => Err(failure(
                FailureKind::Local,
                format!("cannot write the output: {e}"),
            )),
            Ok(()) => {
                self.delivered.set(offset + n);
                Ok(())
            }
        }
    }

    /// A body that broke: its bytes kept to be resumed (a GET to a regular `-o` file whose
    /// first answer had a validator and a length), else thrown away. A break after bytes
    /// reached stdout (`--no-buffer`) cannot be retried.
    fn keep_or_discard(
        &self,
        spool: crate::output::Spool,
        mut f: Failure,
        validator: Option<resume::Validator>,
        total: Option<u64>,
        get: bool,
    ) -> Failure {
        let escaped = spool.escaped();
        let kept = spool.len();
        match (validator, total) {
            (Some(validator), Some(total))
                if self.can_resume(get) && f.kind.is_retryable() && kept > 0 && kept < total =>
            {
                f.detail = format!("{}; kept {kept} bytes to resume", f.detail);
                *self.partial.borrow_mut() = Some(Partial {
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
        f
    }

    /// `--fail-with-body`: the final error response's body is written too.
    pub(crate) fn deliver_error_body(&self, ex: Exchange, outcome: Outcome) -> Outcome {
        match self.deliver(ex, None, false) {
            Ok(()) => outcome,
            Err(f) => {
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
