//! An attempt's log line and the summary's words for it: the line begun before the
//! request is sent, then filled in with how the attempt ended (its status or failure, the
//! hop that failed under `-L`, the Retry-After as sent, why an answer was not ready), in
//! the same step that says what happened in the decision's terms (`Happened`).

use crate::fleet::origins::Told;
use crate::http::transport::{Exchange, Failure, Head, Hop};
use crate::policy::FailureKind;
use crate::policy::decision::Happened;
use crate::policy::idempotency::key_answer;
use crate::policy::retry_after;
use crate::redact;
use crate::report::{AttemptLine, Decision};
use crate::request::attempt::Loop;
use crate::request::carry::{Carry, Pending, Sent};
use std::time::Instant;

/// "timeout (the attempt's time ran out)", with every secret the user gave masked (they are
/// marked where they enter: see `redact::mark`).
fn describe(f: &Failure) -> String {
    // "connection refused (Connection refused (os error 111))" says it twice.
    let repeats = f.detail.to_ascii_lowercase().starts_with(f.kind.name());
    if f.detail.is_empty() || repeats {
        f.kind.name().to_string()
    } else {
        format!("{} ({})", f.kind.name(), redact::marked(&f.detail))
    }
}

/// The last attempt's result as the summary says it: `last`, then the line's note (which
/// hop of a redirect chain failed, what a 409 to a keyed request means), as the attempt's
/// line says it: under `-s` the summary is the only line shown.
fn with_note(last: &str, line: &AttemptLine) -> String {
    // A later hop of a redirect chain: the request that failed is named, as the line names it.
    let at = if line.url != line.start_url && !last.contains(line.url.as_str()) {
        format!(" at {} {}", line.method, line.url)
    } else {
        String::new()
    };
    match &line.note {
        Some(note) if !last.contains(note.as_str()) => format!("{last}{at} ({note})"),
        _ => format!("{last}{at}"),
    }
}

fn add_note(line: &mut AttemptLine, note: String) {
    line.note = Some(match line.note.take() {
        Some(n) => format!("{n}, {note}"),
        None => note,
    });
}

/// "503 Service Unavailable", or the status alone when the reason is empty.
fn status_words(status: u16, reason: &str) -> String {
    format!("{status} {reason}").trim_end().to_string()
}

impl Loop<'_> {
    /// The log line of attempt `n`, begun at `begun`, before its result is filled in. It
    /// names the attempt's first request, `first`, and the attempts the run may make
    /// (`attempts`); a failure renames it after the hop that failed.
    pub(super) fn line(&self, n: u32, begun: Instant, first: &Hop, attempts: u32) -> AttemptLine {
        // Masked once when the attempt starts at the run's URL (as all but a redirected
        // one do): a batch masks a URL per transfer, not two.
        let start_url = redact::url(self.url);
        let url = if first.url == *self.url {
            start_url.clone()
        } else {
            redact::url(&first.url)
        };
        AttemptLine {
            attempt: n,
            attempts,
            method: first.method.clone(),
            url,
            start_url,
            status: None,
            error: None,
            start_ms: begun.duration_since(self.start).as_millis(),
            elapsed: self.clock.now().saturating_duration_since(begun),
            retry_after: None,
            note: None,
            not_ready: None,
            decision: Decision::Done,
        }
    }

    /// A signal seen once the attempt is over: unless it succeeded (a success was put in
    /// place before the signal was seen: it stands, and says so), the attempt is
    /// interrupted, its line says only that, and its answer's body is dropped. Otherwise the
    /// summary's words for the attempt take its line's note (see `with_note`).
    pub(super) fn unless_interrupted(
        &self,
        happened: Happened,
        sent: &Sent,
        line: &mut AttemptLine,
        carry: &mut Carry,
    ) -> Happened {
        let Some(sig) = self
            .interrupt
            .fired()
            .filter(|_| happened != Happened::Success)
        else {
            carry.seen.last = with_note(&carry.seen.last, line);
            return happened;
        };
        *line = AttemptLine {
            start_ms: line.start_ms,
            elapsed: line.elapsed,
            error: Some("interrupted".into()),
            ..self.line(line.attempt, self.clock.now(), &sent.first, line.attempts)
        };
        carry.interrupted();
        Happened::Signal(sig.outcome())
    }

    /// A success (its body in place, or the output left as it was): its status into the
    /// line and the summary, with `note` ("resumed at byte N", why it was unchanged).
    pub(super) fn succeeded(
        &self,
        head: &Head,
        note: Option<String>,
        delivered: u64,
        (sent, line, carry): (&Sent, &mut AttemptLine, &mut Carry),
    ) -> Happened {
        carry.seen.last = status_words(head.status, &head.reason);
        carry.seen.delivered = delivered;
        line.status = Some((head.status, head.reason.clone()));
        line.note = note;
        self.note_redirect(line, sent);
        Happened::Success
    }

    /// An error answer (400 or more, or a status `--retry-on` lists): its status and
    /// Retry-After into the line (and, for a 409 to a request with an Idempotency-Key, what
    /// it means); its body kept for the verdict.
    pub(super) fn answered_error(
        &self,
        ex: Exchange,
        (sent, line, carry): (&Sent, &mut AttemptLine, &mut Carry),
    ) -> Happened {
        self.note_answer(&ex.head, sent, line, carry);
        self.read_retry_after(&ex.head, line, carry);
        let status = ex.head.status;
        // A 409 to a request with a key is waited out, not a failure, and a 400 is retried
        // when --retry-on names it: the line says why.
        let listed = self.cfg.retry.retry_on.contains(status);
        if let Some(note) = key_answer(status, self.has_key).and_then(|a| a.retry_note(listed)) {
            add_note(line, note);
        }
        carry.pending = Some(Pending::Unread(Box::new(ex)));
        Happened::Status(status)
    }

    /// An answer that failed an `--until-*` condition (`why`): its status, why, and its
    /// Retry-After into the line (its body is kept by the caller).
    pub(super) fn not_ready(
        &self,
        head: &Head,
        why: String,
        (sent, line, carry): (&Sent, &mut AttemptLine, &mut Carry),
    ) -> Happened {
        let status = status_words(head.status, &head.reason);
        carry.seen.last = format!("{status}, not ready: {why}");
        line.status = Some((head.status, head.reason.clone()));
        self.note_redirect(line, sent);
        line.not_ready = Some(why.clone());
        self.read_retry_after(head, line, carry);
        Happened::NotReady(why)
    }

    /// A redirect that was not followed (`why`): its status into the line, its body kept
    /// for the verdict. It is the run's final answer: `-w` and `-D` report it (its code,
    /// its Location as `%{redirect_url}`), as curl reports a redirect it did not follow.
    pub(super) fn declined(
        &self,
        ex: Exchange,
        why: String,
        (sent, line, carry): (&Sent, &mut AttemptLine, &mut Carry),
    ) -> Happened {
        self.log_response_headers(&ex.head);
        carry.seen.head = Some(ex.head.clone());
        self.note_answer(&ex.head, sent, line, carry);
        carry.told = Some(Told::read(
            self.origin(&ex.head.url),
            ex.head.status,
            &ex.head.headers,
            self.clock.date(),
        ));
        carry.pending = Some(Pending::Unread(Box::new(ex)));
        Happened::Declined(why)
    }

    /// No usable response: what went wrong into the line and the summary, and the request
    /// that failed named.
    pub(super) fn failed(
        &self,
        f: &Failure,
        (sent, line, carry): (&Sent, &mut AttemptLine, &mut Carry),
    ) -> Happened {
        let described = describe(f);
        // The summary (under -s the only line shown) names the failure as the attempt's line
        // does: "connect timeout (the host name's lookup did not finish ...)", not the kind
        // alone, retryable or not.
        carry.seen.last = described.clone();
        line.error = Some(described);
        if self.watchdog.expired() && f.kind != FailureKind::Local {
            // The watchdog cut the exchange: whatever the socket said, that is why.
            line.error = Some("cut at the deadline".into());
            carry.seen.last = "cut at the deadline".into();
        }
        self.name_failed_hop(line, sent);
        Happened::Failure(f.kind)
    }

    /// A response that is not a success: its status into the line and the summary, and
    /// the request it answered named.
    fn note_answer(&self, head: &Head, sent: &Sent, line: &mut AttemptLine, carry: &mut Carry) {
        carry.seen.last = status_words(head.status, &head.reason);
        line.status = Some((head.status, head.reason.clone()));
        self.name_failed_hop(line, sent);
    }

    /// The answer's Retry-After values: as sent into the line, read and clamped to
    /// `--max-retry-after` for the decision.
    fn read_retry_after(&self, head: &Head, line: &mut AttemptLine, carry: &mut Carry) {
        let raw: Vec<&str> = head.values("retry-after").collect();
        line.retry_after = (!raw.is_empty()).then(|| raw.join(", "));
        let max = self.cfg.retry.max_retry_after;
        carry.reading = Some(retry_after::read_all(raw, self.clock.date(), max));
    }

    /// Under `-L`, says where the answer came from when redirects were followed.
    fn note_redirect(&self, line: &mut AttemptLine, sent: &Sent) {
        if sent.last.url != sent.first.url {
            let via = format!("from {}", redact::url(&sent.last.url));
            add_note(line, via);
        }
    }

    /// A failure names the request that failed; under `-L` that may be a later hop.
    fn name_failed_hop(&self, line: &mut AttemptLine, sent: &Sent) {
        if (&sent.last.method, &sent.last.url) != (&sent.first.method, &sent.first.url) {
            line.method = sent.last.method.clone();
            line.url = redact::url(&sent.last.url);
            add_note(
                line,
                format!(
                    "redirected from {} {}",
                    sent.first.method,
                    redact::url(&sent.first.url)
                ),
            );
        }
    }

    /// `-v`: the answer's head, as received (secrets masked).
    pub(super) fn log_response_headers(&self, head: &Head) {
        if !self.reporter.verbose() {
            return;
        }
        self.reporter.detail(&format!("< {}", head.status_line()));
        for (name, value) in &head.headers {
            self.reporter
                .detail(&format!("< {name}: {}", redact::header_value(name, value)));
        }
    }
}
