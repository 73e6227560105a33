//! What a run came to ([`Ended`]: filled in by the attempt loop as each attempt ends,
//! completed here), and what a request writes once its attempts have ended, before the
//! session's summary: `-D` (the final head, unless it went out before the body),
//! `--etag-save`, the run's end told to its gate (which records it for the breaker and the
//! budget), and `-w` (its values taken from how the run ended, written on stdout, and after
//! `%{stderr}` on stderr with every secret masked).

use crate::exit::{Cause, Exit, Outcome};
use crate::gate::Gate;
use crate::http::timing::Timeline;
use crate::http::transport::{self, Head};
use crate::output;
use crate::policy::decision;
use crate::redact;
use crate::request::write_out;
use crate::request::{Lent, Request};
use std::path::Path;
use std::time::{Duration, Instant};

/// What a run came to: its outcome and why, for the summary and the exit status, and what
/// the files of its end read (`-D`, `-w`, `--state`). The attempt loop fills it in as each
/// attempt ends; the outcome, the count and why are set once the attempts are over, and
/// [`finish`] settles them once the run's own files are written.
pub struct Ended {
    /// The exit outcome.
    pub outcome: Outcome,
    /// Attempts made (the loop counts each as it is sent).
    pub attempts_made: u32,
    /// The last attempt's result, for the summary ("503 Service Unavailable"), or why
    /// nothing was sent.
    pub last: String,
    /// Why the run stopped, as the last attempt's line says it ("not retried: ..."); None
    /// on success, and when nothing said more than the outcome does (see [`Ended::reason`]).
    pub why: Option<String>,
    /// The head of the last response received (for `-D` and `%{url_effective}`).
    /// Shared with the attempt that delivers its body (no copy of its headers).
    pub head: Option<std::sync::Arc<Head>>,
    /// Body bytes delivered to the output (for `%{size_download}`).
    pub delivered: u64,
    /// When the last attempt's steps happened (for `-w`'s times and addresses).
    pub timeline: Timeline,
    /// TCP connections opened over the whole run.
    pub connects: u32,
    /// Redirects followed over the whole run.
    pub redirects: u32,
    /// The method of the last request sent (under `-L` a 303 makes it a GET).
    pub method: Option<String>,
    /// Request body bytes the last request sent, when it was answered (0 otherwise, and
    /// without a body), for `%{size_upload}`.
    pub uploaded: u64,
    /// The Referer the last request sent, for `%{referer}`.
    pub referer: Option<String>,
    /// `-D -` already wrote the final head to stdout, before its body.
    pub head_dumped: bool,
    /// The last attempt's error status (None: it got no such answer), and its Retry-After
    /// as read and clamped, for `--state`.
    pub status: Option<u16>,
    pub hint: Option<Duration>,
    /// What ended the last attempt, in curl's words (`--exit-codes curl`); the deadline
    /// while no attempt has ended.
    pub cause: Cause,
}

impl Ended {
    /// Before any attempt: nothing received, nothing sent; the outcome is set when the
    /// attempts are over (a run that ends before it sends anything starts from it too).
    pub fn before_any_attempt() -> Ended {
        Ended {
            outcome: Outcome::Success,
            attempts_made: 0,
            last: "no attempt made".into(),
            why: None,
            head: None,
            delivered: 0,
            timeline: Timeline::default(),
            connects: 0,
            redirects: 0,
            method: None,
            uploaded: 0,
            referer: None,
            head_dumped: false,
            status: None,
            hint: None,
            cause: Cause::Deadline,
        }
    }

    /// A run that ended with `outcome` before it sent anything (a signal during the splay
    /// or the store's answer, a refusal), for `why` when something says more than the
    /// outcome does.
    pub fn unsent(outcome: Outcome, why: Option<&str>) -> Ended {
        Ended {
            outcome,
            last: why.map_or_else(|| "no attempt made".into(), str::to_string),
            why: why.map(str::to_string),
            ..Ended::before_any_attempt()
        }
    }

    /// Why the run stopped, for the summary: what the last attempt's line said, else what
    /// the outcome means.
    pub fn reason(&self) -> String {
        self.why
            .clone()
            .unwrap_or_else(|| decision::stopping(self.outcome))
    }

    /// The run ends with `outcome`, for `why` (a file of its end that could not be
    /// written, the deadline that passed meanwhile).
    fn now(&mut self, outcome: Outcome, why: String) {
        self.outcome = outcome;
        self.why = Some(why);
    }

    /// How the run ends, for its exit status.
    pub fn exit(&self) -> Exit {
        Exit {
            outcome: self.outcome,
            cause: self.cause,
        }
    }
}

/// `-D`, `--etag-save`, the state, then `-w`. The deadline still holds over them (a `-D`
/// FIFO nobody reads, a reader of stdout that stopped: exit 5, see
/// [`decision::at_the_end`]); a file that cannot be written makes the outcome a local
/// failure (exit 1). Returns what the run came to, settled.
pub fn finish(request: &Request, lent: &Lent, gate: Option<&Gate>, mut ended: Ended) -> Ended {
    // How the attempts ended says whether the job's answer was final (a file at the end
    // that cannot be written does not make the server's answer any less final).
    let attempts_ended = ended.outcome;
    let outcome = decision::at_the_end(ended.outcome, lent.watchdog.expired());
    if outcome != ended.outcome {
        ended.now(outcome, decision::DEADLINE_DURING.into());
        ended.cause = Cause::Deadline;
    }
    write_files(request, lent, &mut ended);
    if let Some(gate) = gate {
        let last = ended.status.map(|status| (status, ended.hint));
        gate.close(
            (attempts_ended, ended.outcome),
            last,
            (request.has_key(), ended.attempts_made > 0),
        );
    }
    write_out_last(request, lent, ended)
}

/// `-w`, the last thing a run writes, even for a run refused before it sent anything (so
/// `%{state}` tells a script why): output the user asked for that cannot be written is a
/// local failure, as `-D` is.
pub fn write_out_last(request: &Request, lent: &Lent, mut ended: Ended) -> Ended {
    ended.why = Some(ended.reason());
    if let Some(format) = &request.write_out
        && let Err(e) = print_write_out(format, request, lent, &ended)
    {
        lent.reporter.error(&e);
        let outcome = decision::unwritten(ended.outcome, false);
        ended.now(outcome, e);
    }
    ended
}

/// `-D` and `--etag-save`, once the attempts are over: a file that cannot be written is a
/// local failure (exit 1), and why the run stopped then says which.
fn write_files(request: &Request, lent: &Lent, ended: &mut Ended) {
    let cfg = request.cfg;
    if let (Some(path), Some(head)) = (&cfg.output.dump_header, &ended.head)
        && !ended.head_dumped
        && let Err(e) = dump_header(&request.output, path, head)
        // `-D -` to a reader that went away ends quietly, as the body does.
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        let why = format!("cannot write -D {}: {e}", path.display());
        lent.reporter.error(&why);
        ended.now(decision::unwritten(ended.outcome, false), why);
    }
    if ended.outcome == Outcome::Success
        && let Err(e) = request
            .prior
            .save(cfg.conditional.etag_save.as_deref(), ended.head.as_deref())
    {
        lent.reporter.error(&e);
        ended.now(decision::unwritten(ended.outcome, false), e);
    }
}

/// `-D FILE`: the final response's status line and headers (`-`: stdout).
fn dump_header(out: &output::Output, path: &Path, head: &Head) -> std::io::Result<()> {
    let text = output::head_text(head);
    if path.as_os_str() == "-" {
        return out.print_bytes(&text);
    }
    if output::is_null(path) {
        return Ok(());
    }
    std::fs::write(path, text)
}

/// `-w`: `format` filled in and written on stdout (after `%{stderr}`, on stderr), quietly
/// if its reader went away; `Err` when it cannot be written otherwise. An unknown variable
/// is dropped with curl's warning.
fn print_write_out(
    format: &str,
    request: &Request,
    lent: &Lent,
    ended: &Ended,
) -> Result<(), String> {
    let reporter = lent.reporter;
    let mut vars = write_out_vars(request, ended);
    vars.time_total = lent.began.elapsed();
    vars.urlnum = lent.transfer;
    vars.idempotency_key = reporter.key_handle().get().cloned();
    vars.state = reporter.state();
    let rendered = write_out::render(format, &vars);
    for name in rendered.unknown {
        reporter.notice(&format!("unknown --write-out variable: '{name}'"));
    }
    // stdout is the user's own output, as the body is: what the server sent (a Set-Cookie,
    // a Location) is shown as asked, but no secret the user gave (see `redact::mark`).
    // stderr is a log, where no secret goes: what follows %{stderr} is rendered from masked
    // values.
    let masked = write_out::render(format, &masked_for_stderr(&vars)).parts;
    for ((stream, text), (_, shown)) in rendered.parts.into_iter().zip(masked) {
        match stream {
            write_out::Stream::Stdout => request.output.print_stdout(&redact::marked(&text))?,
            write_out::Stream::Stderr => reporter.write_out(&shown)?,
        }
    }
    Ok(())
}

/// `-w`'s values from how the run ended (`time_total` and the key are the caller's).
fn write_out_vars(request: &Request, ended: &Ended) -> write_out::Vars {
    let cfg = request.cfg;
    let outcome = ended.outcome;
    let head = ended.head.as_deref();
    write_out::Vars {
        http_code: head.map(|h| request.prior.reported_status(h)),
        num_retries: ended.attempts_made.saturating_sub(1),
        url_effective: head.map_or_else(|| request.url.to_string(), |h| h.url.to_string()),
        url: request.url.to_string(),
        exitcode: outcome.code(),
        size_download: ended.delivered,
        method: ended
            .method
            .clone()
            .unwrap_or_else(|| cfg.request.method.clone()),
        headers: head.map(|h| h.headers.clone()).unwrap_or_default(),
        http_version: head.map(|h| h.version.clone()),
        times: times(&ended.timeline),
        num_connects: ended.connects,
        num_redirects: ended.redirects,
        remote: ended.timeline.peer,
        errormsg: (outcome != Outcome::Success).then(|| error_message(ended)),
        filename_effective: request
            .transfer
            .output
            .as_ref()
            .filter(|p| p.as_os_str() != "-")
            .map(|p| p.display().to_string()),
        redirect_url: head.and_then(redirect_url),
        size_upload: ended.uploaded,
        referer: ended.referer.clone(),
        size_header: head.map_or(0, |h| output::head_text(h).len() as u64),
        ..write_out::Vars::default()
    }
}

/// `%{errormsg}` of a run that failed: why it stopped, and the last attempt's result when
/// that says more.
fn error_message(ended: &Ended) -> String {
    let reason = ended.reason();
    match ended.last.as_str() {
        last if last == reason || ended.attempts_made == 0 => reason,
        last => format!("{reason} (last: {last})"),
    }
}

/// Where `head` would have redirected: a 3xx's Location made absolute against the URL
/// that answered (curl's `%{redirect_url}` for a redirect it did not follow).
fn redirect_url(head: &transport::Head) -> Option<String> {
    if !(300..400).contains(&head.status) {
        return None;
    }
    let location = head.value("location")?.trim();
    head.url.join(location).ok().map(|u| u.to_string())
}

/// `-w`'s values as stderr may show them: URLs with their passwords and secret parameters
/// masked, header values masked by their names (see `redact`).
fn masked_for_stderr(vars: &write_out::Vars) -> write_out::Vars {
    write_out::Vars {
        url: redact::url_text(&vars.url),
        url_effective: redact::url_text(&vars.url_effective),
        redirect_url: vars.redirect_url.as_deref().map(redact::url_text),
        referer: vars.referer.as_deref().map(redact::url_text),
        headers: vars
            .headers
            .iter()
            .map(|(n, v)| (n.clone(), redact::header_value(n, v)))
            .collect(),
        ..vars.clone()
    }
}

/// The last attempt's moments for `-w`, each from the attempt's start (zero for a step
/// that did not happen); the steps are its last hop's.
fn times(t: &Timeline) -> write_out::Times {
    let since = |at: Option<Instant>| match (t.begun, at) {
        (Some(b), Some(a)) => a.saturating_duration_since(b),
        _ => Duration::ZERO,
    };
    write_out::Times {
        namelookup: since(t.looked_up),
        connect: since(t.connected),
        appconnect: since(t.secured),
        pretransfer: since(t.ready),
        starttransfer: since(t.head),
        redirect: if t.redirects > 0 {
            since(t.hop_begun)
        } else {
            Duration::ZERO
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_url_is_a_redirect_s_location_made_absolute() {
        let head = |status, location: Option<&str>| transport::Head {
            status,
            reason: String::new(),
            version: "HTTP/1.1".into(),
            headers: location
                .map(|l| vec![("location".to_string(), l.to_string())])
                .unwrap_or_default(),
            url: url::Url::parse("http://h:8/a/b?q").unwrap(),
            wire: None,
        };
        assert_eq!(
            redirect_url(&head(302, Some("/next?a=1"))).as_deref(),
            Some("http://h:8/next?a=1")
        );
        assert_eq!(
            redirect_url(&head(301, Some("c"))).as_deref(),
            Some("http://h:8/a/c")
        );
        assert_eq!(
            redirect_url(&head(308, Some("https://o.test/x"))).as_deref(),
            Some("https://o.test/x")
        );
        assert_eq!(redirect_url(&head(200, Some("/x"))), None);
        assert_eq!(redirect_url(&head(302, None)), None);
    }
}
