//! The only writer to stderr: one line per attempt as it ends, warnings, errors and the
//! closing summary, as text (optionally coloured) or as JSON lines. Secrets are masked
//! before anything gets here (see `redact`), and every line is passed through
//! `redact::marked` on its way out, so no secret marked where it entered is written. A
//! [`Reporter`] is built from a [`LogConfig`] (made from the flags by `config::log`).

use crate::exit::{Exit, Outcome};
use crate::policy::{Jitter, WaitReason};
use crate::units::fmt_duration;
use crate::units::millis;
use anstyle::{AnsiColor, Style};
use serde_json::{Value, json};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// What the loop decided after an attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// The attempt succeeded; the run ends.
    Done,
    /// Another attempt follows after `wait`.
    Retry {
        /// The wait actually planned (after trimming to the deadline).
        wait: Duration,
        /// What decided its length.
        reason: WaitReason,
        /// The server's hint as asked, before clamping (seconds from now).
        asked: Option<Duration>,
        /// The hint after clamping.
        hint: Option<Duration>,
        /// The random spread included in `wait`.
        spread: Duration,
        /// The jitter the backoff draws with (named in the line when it decided the wait).
        jitter: Jitter,
    },
    /// The run ends here, for this reason (a phrase starting with a verb or "not").
    Stop(String),
}

/// Format of the lines written to stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per attempt.
    Text,
    /// One JSON object per line (the schema is in docs/output.md).
    Json,
}

/// When to colour stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it).
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// How much the log says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verbosity {
    /// `-s`: only the final error line (and the warnings about what the user wrote).
    Quiet,
    /// One line per attempt, warnings and the summary.
    Normal,
    /// `-v`: also the headers sent and received (secrets masked) and the seed. With `-s`
    /// too (`-sv`), as in curl, this stays; `-s` then only hides the live lines.
    Verbose,
}

/// The stderr log's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogConfig {
    /// Text lines or JSON objects.
    pub format: LogFormat,
    /// How much is said.
    pub verbosity: Verbosity,
    /// Countdowns and the progress line may be drawn (not under `-s`); they are, when
    /// stderr is a terminal and the format is text.
    pub live: bool,
    /// Among the live lines, the download progress line (not with `--no-progress-meter`).
    pub progress: bool,
    /// `--color`.
    pub color: ColorChoice,
}

impl LogConfig {
    /// The tool's own messages outside a request (the demo, simulate, a usage error found
    /// before the flags are parsed): in `format`, said normally, never coloured.
    pub fn plain(format: LogFormat) -> LogConfig {
        LogConfig {
            format,
            verbosity: Verbosity::Normal,
            live: true,
            progress: true,
            color: ColorChoice::Never,
        }
    }
}

/// One attempt's line.
#[derive(Debug, Clone)]
pub struct AttemptLine {
    /// Which attempt (from 1).
    pub attempt: u32,
    /// Of how many.
    pub attempts: u32,
    /// The method.
    pub method: String,
    /// The URL of the request this line is about (the hop that failed, under `-L`), redacted.
    pub url: String,
    /// The URL the run started at, redacted (JSON `start_url`).
    pub start_url: String,
    /// Status and reason phrase, when a response arrived.
    pub status: Option<(u16, String)>,
    /// The failure, when none did.
    pub error: Option<String>,
    /// Milliseconds from the start of the run to the start of this attempt.
    pub start_ms: u128,
    /// How long the attempt took.
    pub elapsed: Duration,
    /// The raw Retry-After value(s), joined by ", ".
    pub retry_after: Option<String>,
    /// A remark on the attempt, such as "resumed at byte 1048576".
    pub note: Option<String>,
    /// Why the answer was not ready (`--until-*`), when it was not.
    pub not_ready: Option<String>,
    /// What comes next.
    pub decision: Decision,
}

/// The stderr writer.
pub struct Reporter {
    /// Countdowns and progress are drawn: stderr is a terminal, the log is text, not `-s`.
    live: bool,
    /// A live line is on screen and must be erased before the next log line.
    dirty: AtomicBool,
    /// The format, the verbosity, whether the progress line is drawn.
    log: LogConfig,
    /// `--color`, as the stream writer takes it.
    color: anstream::ColorChoice,
    /// The Idempotency-Key the run sends, once it is chosen: the summary names it, so a
    /// request that failed can be resubmitted by hand with the same key.
    key: Arc<OnceLock<String>>,
    /// What became of `--state` so far (a [`StateUse`] as its number), shared with the
    /// summaries written from other threads.
    state: Arc<AtomicU8>,
    /// In a batch, the transfer this reporter writes for: its number (1-based) and the
    /// batch's count, tagging every line (`[3/300]`, `"transfer": 3`).
    tag: Option<(usize, usize)>,
}

const PREFIX: &str = "retry-http:";

/// What became of `--state` in a run: `-w '%{state}'` and the JSON summary's `state` name
/// it. Ordered: a run that saw several keeps the last in this order (a store that failed
/// after it refused a retry is `unavailable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum StateUse {
    /// No `--state`, or the run ended before the store was asked (a usage error).
    #[default]
    None,
    /// The store answered every question the run asked it.
    Used,
    /// The store answered, and stopped the run: the circuit is open, the retry budget is
    /// spent, or another run's Retry-After holds past the deadline (exit 7).
    Refused,
    /// The store could not be used (cannot be opened, read, written or reached in
    /// `--state-timeout`): the run went on without it (`--state-on-error open`, warned even
    /// under `-s`) or stopped (`closed`, exit 7).
    Unavailable,
}

impl StateUse {
    /// Its name, as `%{state}` and the JSON summary give it.
    pub fn name(self) -> &'static str {
        match self {
            StateUse::None => "none",
            StateUse::Used => "used",
            StateUse::Refused => "refused",
            StateUse::Unavailable => "unavailable",
        }
    }

    fn from_number(n: u8) -> StateUse {
        match n {
            1 => StateUse::Used,
            2 => StateUse::Refused,
            3 => StateUse::Unavailable,
            _ => StateUse::None,
        }
    }
}

impl Reporter {
    /// The log format (text or JSON lines).
    pub fn format(&self) -> LogFormat {
        self.log.format
    }

    /// A reporter writing the log `log` describes.
    pub fn new(log: LogConfig) -> Self {
        let color = match log.color {
            ColorChoice::Auto => anstream::ColorChoice::Auto,
            ColorChoice::Always => anstream::ColorChoice::Always,
            ColorChoice::Never => anstream::ColorChoice::Never,
        };
        let live = std::io::IsTerminal::is_terminal(&std::io::stderr())
            && log.format == LogFormat::Text
            && log.live;
        Reporter {
            live,
            dirty: AtomicBool::new(false),
            log,
            color,
            key: Arc::default(),
            state: Arc::default(),
            tag: None,
        }
    }

    /// The reporter of transfer `number` (1-based) of a batch of `count`: the same log,
    /// every line tagged `[number/count]` (`"transfer": number` in JSON), no live line
    /// (countdowns of several transfers would overwrite each other), an Idempotency-Key of
    /// its own, and what became of `--state` shared with the batch's summary.
    pub fn tagged(&self, number: usize, count: usize) -> Reporter {
        Reporter {
            live: false,
            dirty: AtomicBool::new(false),
            log: self.log,
            color: self.color,
            key: Arc::default(),
            state: self.state.clone(),
            tag: Some((number, count)),
        }
    }

    /// Only the final error line is written (`-s` without `-v`).
    fn quiet(&self) -> bool {
        self.log.verbosity == Verbosity::Quiet
    }

    /// Records what became of `--state` (see [`StateUse`]; the latest in its order stays).
    pub fn note_state(&self, s: StateUse) {
        self.state.fetch_max(s as u8, Ordering::SeqCst);
    }

    /// What became of `--state` so far.
    pub fn state(&self) -> StateUse {
        StateUse::from_number(self.state.load(Ordering::SeqCst))
    }

    /// What became of `--state`, shared: what a summary written from another thread reads.
    pub fn state_handle(&self) -> Arc<AtomicU8> {
        self.state.clone()
    }

    /// [`StateUse`] read from a [`Reporter::state_handle`].
    pub fn state_of(handle: &AtomicU8) -> StateUse {
        StateUse::from_number(handle.load(Ordering::SeqCst))
    }

    /// Records the Idempotency-Key the run sends, for the summary (the first one stays).
    pub fn name_key(&self, key: &str) {
        let _ = self.key.set(key.to_string());
    }

    /// The Idempotency-Key recorded, shared: what a summary written from another thread
    /// (the deadline's, a signal's) reads.
    pub fn key_handle(&self) -> Arc<OnceLock<String>> {
        self.key.clone()
    }

    /// Whether countdowns and progress are shown (stderr is a terminal, text log, not `-s`).
    pub fn live(&self) -> bool {
        self.live
    }

    /// Draws a line that the next one replaces (a countdown, progress); terminals only.
    pub fn live_line(&self, text: &str) {
        if self.live {
            let mut err = std::io::stderr().lock();
            let text = crate::redact::marked(text);
            let _ = write!(err, "\r\x1b[K{PREFIX} {text}");
            let _ = err.flush();
            self.dirty.store(true, Ordering::Relaxed);
        }
    }

    /// `-w` text after `%{stderr}`, written as it is (it is the user's format, not a log
    /// line: `-s` does not hide it, as in curl). A closed stderr is no error; any other
    /// failure is, with what it was.
    pub fn write_out(&self, text: &str) -> Result<(), String> {
        self.clear_live();
        let text = crate::redact::marked(text);
        let mut err = std::io::stderr().lock();
        match err.write_all(text.as_bytes()).and_then(|_| err.flush()) {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                Err(format!("cannot write to stderr: {e}"))
            }
            _ => Ok(()),
        }
    }

    /// Erases the live line, if one is drawn.
    pub fn clear_live(&self) {
        if self.dirty.swap(false, Ordering::Relaxed) {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
        }
    }

    /// Download progress, on a terminal: bytes so far of the total when known.
    pub fn progress(&self, bytes: u64, total: Option<u64>) {
        if !self.log.progress {
            return;
        }
        let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
        let text = match total {
            Some(t) if t > 0 => format!(
                "downloading {:.1} MiB of {:.1} MiB ({:.0}%)",
                mib(bytes),
                mib(t),
                bytes as f64 * 100.0 / t as f64
            ),
            _ => format!("downloading {:.1} MiB", mib(bytes)),
        };
        self.live_line(&text);
    }

    /// Whether `-v` was given.
    pub fn verbose(&self) -> bool {
        self.log.verbosity == Verbosity::Verbose
    }

    fn write_line(&self, line: &str) {
        self.clear_live();
        // A secret marked where it entered is masked whatever the writer did with it; then
        // a file name or server text holding CR or LF must not forge a second log line.
        let line = crate::redact::marked(line);
        let mut line = line.replace('\r', "\\r").replace('\n', "\\n");
        if let Some((i, n)) = self.tag
            && let Some(rest) = line.strip_prefix(PREFIX)
        {
            line = format!("{PREFIX} [{i}/{n}]{rest}");
        }
        // Colours only where stderr takes them; then the whole line in one write, so the
        // lines of runs that share one log (`xargs -P ... 2>>log`) never interleave.
        let choice = anstream::AutoStream::new(std::io::stderr(), self.color).current_choice();
        if choice == anstream::ColorChoice::Never {
            line = anstream::adapter::strip_str(&line).to_string();
        }
        line.push('\n');
        // A closed stderr is no reason to fail the request.
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }

    fn json(&self, mut v: Value) {
        if let (Some((i, _)), Some(object)) = (self.tag, v.as_object_mut()) {
            object.insert("transfer".into(), i.into());
        }
        self.write_line(&v.to_string());
    }

    fn paint(&self, style: Style, text: &str) -> String {
        format!("{style}{text}{style:#}")
    }

    /// Logs one attempt (not with `-s`).
    pub fn attempt(&self, a: &AttemptLine) {
        if self.quiet() {
            return;
        }
        if self.log.format == LogFormat::Json {
            self.json(attempt_json(a));
            return;
        }
        // A failure after an answer (a redirect cut by --max-redirs) is named by the failure.
        let result = match (&a.status, &a.error) {
            (_, Some(e)) => self.paint(Style::new().fg_color(Some(AnsiColor::Red.into())), e),
            (Some((code, reason)), None) => {
                let color = if *code < 400 {
                    AnsiColor::Green
                } else {
                    AnsiColor::Red
                };
                self.paint(
                    Style::new().fg_color(Some(color.into())),
                    format!("{code} {reason}").trim_end(),
                )
            }
            (None, None) => "?".into(),
        };
        let mut decision = match &a.decision {
            Decision::Done => String::new(),
            Decision::Retry { .. } => format!("; {}", retry_phrase(a)),
            Decision::Stop(why) => format!("; {why}"),
        };
        if let Some(why) = &a.not_ready {
            decision = format!("; not ready: {why}{decision}");
        }
        let of = if a.attempts == crate::policy::decision::UNLIMITED {
            String::new()
        } else {
            format!("/{}", a.attempts)
        };
        let note = a
            .note
            .as_ref()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default();
        self.write_line(&format!(
            "{PREFIX} attempt {}{of} {} {} -> {} in {}{}{}",
            a.attempt,
            a.method,
            a.url,
            result,
            fmt_duration(a.elapsed),
            note,
            decision
        ));
    }

    /// A warning (not with `-s`).
    pub fn warn(&self, msg: &str) {
        if !self.quiet() {
            self.notice(msg);
        }
    }

    /// A warning shown under `-s` too: a mistake in what the user wrote (curl's own
    /// warning about an unknown `-w` variable is not silenced either).
    pub fn notice(&self, msg: &str) {
        match self.log.format {
            LogFormat::Json => self.json(json!({"type": "warning", "message": msg})),
            LogFormat::Text => {
                let label = self.paint(
                    Style::new().fg_color(Some(AnsiColor::Yellow.into())),
                    "warning:",
                );
                self.write_line(&format!("{PREFIX} {label} {msg}"));
            }
        }
    }

    /// Informational line (not with `-s`), such as the idempotency key chosen.
    pub fn info(&self, msg: &str) {
        if self.quiet() {
            return;
        }
        match self.log.format {
            LogFormat::Json => self.json(json!({"type": "info", "message": msg})),
            LogFormat::Text => self.write_line(&format!("{PREFIX} {msg}")),
        }
    }

    /// A line of a kind of its own (not with `-s`): `text` in the text log, `object` in the
    /// JSON log (which names its `type`).
    pub fn event(&self, text: &str, object: Value) {
        if self.quiet() {
            return;
        }
        match self.log.format {
            LogFormat::Json => self.json(object),
            LogFormat::Text => self.write_line(&format!("{PREFIX} {text}")),
        }
    }

    /// A verbose-only line (headers, seed).
    pub fn detail(&self, msg: &str) {
        if self.verbose() {
            self.info(msg);
        }
    }

    /// An error line: always shown, `-s` included.
    pub fn error(&self, msg: &str) {
        match self.log.format {
            LogFormat::Json => self.json(json!({"type": "error", "message": msg})),
            LogFormat::Text => {
                let label = self.paint(
                    Style::new().fg_color(Some(AnsiColor::Red.into())).bold(),
                    "error:",
                );
                self.write_line(&format!("{PREFIX} {label} {msg}"));
            }
        }
    }

    /// The closing summary: in text, a final line on failure only (none for a usage error,
    /// whose error line says it all), with the reason for a refusal or a deadline; in JSON, always, with `reason`: why the run stopped
    /// (`null` on success, whatever is passed).
    pub fn summary(
        &self,
        ending: impl Into<Exit>,
        attempts_made: u32,
        elapsed: Duration,
        seed: u64,
        last: &str,
        reason: Option<&str>,
    ) {
        let exit: Exit = ending.into();
        let outcome = exit.outcome;
        let reason = reason.filter(|_| outcome != Outcome::Success);
        let key = self.key.get().map(String::as_str);
        match self.log.format {
            LogFormat::Json => {
                let mut v = summary_json(outcome, attempts_made, elapsed, seed, reason);
                v["idempotency_key"] = key.into();
                v["state"] = self.state().name().into();
                self.json(v)
            }
            LogFormat::Text if !matches!(outcome, Outcome::Success | Outcome::Usage) => {
                // A refusal says why, unless `last` already does (refused before the first
                // attempt); so does a deadline, which may stop a run before it is reached
                // (the next wait would end past it), and a failure not retried, whose
                // reason holds the way out (--idempotency-key, --retry-on): under -s this
                // is the only line.
                let explained = matches!(
                    outcome,
                    Outcome::Refused
                        | Outcome::Deadline
                        | Outcome::NonRetryableResponse
                        | Outcome::NonRetryableTransport
                        | Outcome::NotReady
                );
                let why = reason.filter(|_| explained);
                self.error(&summary_words(
                    exit,
                    (attempts_made, elapsed),
                    last,
                    why,
                    key,
                ));
            }
            LogFormat::Text => {}
        }
    }
}

impl Reporter {
    /// The rate a paced origin settled at, said at the end of a batch before its summary
    /// (not with `-s`): "pacing ORIGIN: settled at 38.2 requests/s"; in JSON
    /// `{"type": "pacing", "origin": ..., "settled_per_s": 38.2, "message": ...}`.
    pub fn settled(&self, origin: &str, rate: f64) {
        let line = format!(
            "pacing {origin}: settled at {}",
            crate::policy::pacer::fmt_rate(rate)
        );
        let object = json!({
            "type": "pacing",
            "origin": origin,
            "settled_per_s": rounded(rate),
            "message": line,
        });
        self.event(&line, object);
    }
}

/// A change of an origin's pacing rate in the JSON log: `{"type": "pacing", "origin":
/// ..., "from_per_s": 46.0 (null: not paced), "to_per_s": 32.2 (null: no longer paced),
/// "reason": "throttled" | "recovered", "status": 429, "retry_after_ms": 1000,
/// "accepted_per_s": 46.0, "message": the text line}`.
pub fn pacing_json(origin: &str, change: &crate::policy::pacer::Change) -> Value {
    use crate::policy::pacer::Reason;
    let mut v = json!({
        "type": "pacing",
        "origin": origin,
        "from_per_s": change.from.map(rounded),
        "to_per_s": change.to.map(rounded),
        "message": change.line(origin),
    });
    match &change.why {
        Reason::Throttled {
            status,
            retry_after,
            accepted,
        } => {
            v["reason"] = "throttled".into();
            v["status"] = (*status).into();
            v["retry_after_ms"] = retry_after.map(millis).into();
            v["accepted_per_s"] = rounded(*accepted).into();
        }
        Reason::Recovered => v["reason"] = "recovered".into(),
    }
    v
}

/// A rate to two decimals, for the JSON log.
fn rounded(rate: f64) -> f64 {
    (rate * 100.0).round() / 100.0
}

/// How the transfers of a batch ended, for its summary line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Transfers in the batch.
    pub transfers: usize,
    /// Transfers that succeeded.
    pub succeeded: usize,
    /// Transfers that ended otherwise.
    pub failed: usize,
    /// Transfers never started (`--fail-early`, the deadline, a signal), or still under way
    /// when the run was ended from another thread.
    pub not_started: usize,
}

impl Reporter {
    /// The batch's closing line: the transfers counted by outcome, and the batch's exit
    /// code (see `session::schedule::Tally::outcome`). In text, an error line when the
    /// batch failed (shown under `-s`), else an informational one; in JSON, always, as
    /// `"type": "batch_summary"`.
    pub fn batch_summary(
        &self,
        counts: Counts,
        (outcome, exit): (Outcome, Exit),
        elapsed: Duration,
        reason: Option<&str>,
    ) {
        let line = batch_summary_line(self.log.format, counts, (outcome, exit), elapsed, reason);
        match (self.log.format, outcome) {
            (LogFormat::Text, Outcome::Success) if self.quiet() => {}
            _ => self.write_line(&line),
        }
    }
}

/// The batch's summary line, as [`Reporter::batch_summary`] writes it (and the watchdog
/// or the signal handler, when they end a batch): `outcome` is the batch's (its first
/// failure's), `exit` how the process exits (see `session::schedule::Tally::exit`).
pub fn batch_summary_line(
    format: LogFormat,
    c: Counts,
    (outcome, exit): (Outcome, Exit),
    elapsed: Duration,
    reason: Option<&str>,
) -> String {
    let reason = reason.filter(|_| outcome != Outcome::Success);
    let line = match format {
        LogFormat::Json => json!({
            "type": "batch_summary",
            "transfers": c.transfers,
            "succeeded": c.succeeded,
            "failed": c.failed,
            "not_started": c.not_started,
            "outcome": outcome.name(),
            "exit_code": outcome.code(),
            "elapsed_ms": millis(elapsed),
            "reason": reason,
        })
        .to_string(),
        LogFormat::Text => {
            let failed = match c.failed {
                0 => "0 failed".to_string(),
                n => format!("{n} failed (exit {})", outcome.code()),
            };
            let plural = if c.transfers == 1 { "" } else { "s" };
            let head = format!(
                "{} transfer{plural}: {} succeeded, {failed}, {} not started, in {}",
                c.transfers,
                c.succeeded,
                c.not_started,
                fmt_duration(elapsed)
            );
            match (outcome, reason) {
                (Outcome::Success, _) => format!("{PREFIX} {head}"),
                (_, Some(why)) => format!(
                    "{PREFIX} error: {head}; {why}; {}",
                    crate::exit::shown(outcome.code(), exit)
                ),
                (_, None) => format!(
                    "{PREFIX} error: {head}; {}",
                    crate::exit::shown(outcome.code(), exit)
                ),
            }
        }
    };
    crate::redact::marked(&line)
}

/// The text summary after "error: ": the outcome, the attempts made and the time taken,
/// the last answer, `why` the run stopped (when it adds to `last`), the Idempotency-Key
/// sent, the exit code. A run that sent nothing has no attempt to count and no last
/// answer: `why` (or `last`) says what stopped it, "nothing sent" said once.
fn summary_words(
    exit: Exit,
    (attempts_made, elapsed): (u32, Duration),
    last: &str,
    why: Option<&str>,
    key: Option<&str>,
) -> String {
    let what = exit.outcome.summary_phrase();
    let shown = crate::exit::shown(exit.outcome.code(), exit);
    if attempts_made == 0 {
        return format!(
            "{what} in {}, nothing sent{}{}; {}",
            fmt_duration(elapsed),
            after_nothing_sent(why.unwrap_or(last)),
            key_phrase(key),
            shown
        );
    }
    let why = match why {
        Some(r) if r != last => format!("; {r}"),
        _ => String::new(),
    };
    let plural = if attempts_made == 1 { "" } else { "s" };
    format!(
        "{what} after {attempts_made} attempt{plural} in {} (last: {last}{why}){}; {}",
        fmt_duration(elapsed),
        key_phrase(key),
        shown
    )
}

/// What a run that sent nothing says after "nothing sent": ": WHY" from `why` ("nothing
/// sent: the circuit is open ..." or another reason), without saying "nothing sent" twice;
/// nothing when `why` adds nothing.
fn after_nothing_sent(why: &str) -> String {
    let rest = why
        .strip_prefix("nothing sent")
        .map_or(why, |r| r.trim_start_matches([':', ';', ',', ' ']));
    if rest.is_empty() {
        String::new()
    } else {
        format!(": {rest}")
    }
}

/// "; Idempotency-Key: K" for a summary line, when a key was sent: resubmitting by hand
/// with it cannot be processed twice.
fn key_phrase(key: Option<&str>) -> String {
    key.map(|k| format!("; Idempotency-Key: {k}"))
        .unwrap_or_default()
}

/// The JSON summary object; `reason` is `null` when there is none.
fn summary_json(
    outcome: Outcome,
    attempts_made: u32,
    elapsed: Duration,
    seed: u64,
    reason: Option<&str>,
) -> Value {
    json!({
        "type": "summary",
        "outcome": outcome.name(),
        "exit_code": outcome.code(),
        "attempts_made": attempts_made,
        "elapsed_ms": millis(elapsed),
        "seed": seed,
        "reason": reason,
    })
}

/// "retry in 1.42s (Retry-After: 1, +0.42s spread)" and its variants.
fn retry_phrase(a: &AttemptLine) -> String {
    let Decision::Retry {
        wait,
        reason,
        asked,
        hint,
        spread,
        jitter,
    } = &a.decision
    else {
        return String::new();
    };
    let mut why = match reason {
        WaitReason::Backoff if *jitter == Jitter::None => "backoff, no jitter".to_string(),
        WaitReason::Backoff => format!("backoff, {} jitter", jitter.label()),
        WaitReason::RetryAfter => {
            format!("Retry-After: {}", a.retry_after.as_deref().unwrap_or("?"))
        }
        WaitReason::Clamped => format!(
            "Retry-After: {} = {}, clamped to --max-retry-after {}",
            a.retry_after.as_deref().unwrap_or("?"),
            fmt_duration(asked.unwrap_or_default()),
            fmt_duration(hint.unwrap_or_default())
        ),
        WaitReason::Shared => "a Retry-After shared by the runs of --state".to_string(),
        WaitReason::Deadline => {
            "the backoff would end past the deadline: drawn within the time left before it"
                .to_string()
        }
    };
    if *reason != WaitReason::Backoff && !spread.is_zero() {
        why.push_str(&format!(", +{} spread", fmt_duration(*spread)));
    }
    format!("retry in {} ({why})", fmt_duration(*wait))
}

/// The JSON object of one attempt; every key is always present (null when not relevant).
fn attempt_json(a: &AttemptLine) -> Value {
    let (wait_ms, wait_reason) = match &a.decision {
        Decision::Retry { wait, reason, .. } => (json!(millis(*wait)), json!(reason.name())),
        _ => (Value::Null, json!("none")),
    };
    let stop = match &a.decision {
        Decision::Stop(why) => json!(why),
        _ => Value::Null,
    };
    json!({
        "type": "attempt",
        "attempt": a.attempt,
        "attempts": (a.attempts != crate::policy::decision::UNLIMITED).then_some(a.attempts),
        "method": a.method,
        "url": a.url,
        "start_url": a.start_url,
        "status": a.status.as_ref().map(|s| s.0),
        "error": a.error,
        "start_ms": a.start_ms as u64,
        "elapsed_ms": millis(a.elapsed),
        "wait_ms": wait_ms,
        "wait_us": match &a.decision { Decision::Retry { wait, .. } => json!(crate::units::micros(*wait)), _ => Value::Null },
        "wait_reason": wait_reason,
        "retry_after": a.retry_after,
        "stop": stop,
        "note": a.note,
        "not_ready": a.not_ready,
    })
}

/// The summary line of a run that is ended from another thread (the deadline's watchdog,
/// or the signal handler when the run does not end by itself): the line
/// [`Reporter::summary`] would write, returned for a write of its own.
pub fn forced_summary(
    format: LogFormat,
    outcome: Outcome,
    counts: (u32, Duration, u64),
    last: &str,
    reason: &str,
    key_state: (Option<&str>, StateUse),
) -> String {
    let line = forced_line(format, outcome, counts, last, reason, key_state);
    crate::redact::marked(&line)
}

/// [`forced_summary`] unmasked, for a line whose words are all the program's own (no URL,
/// no header, no answer): masking makes the matcher of the secrets marked so far first,
/// seconds for a long list of URLs with tokens, which a run ended at its deadline or by a
/// signal does not have.
pub fn forced_line(
    format: LogFormat,
    outcome: Outcome,
    (attempts_made, elapsed, seed): (u32, Duration, u64),
    last: &str,
    reason: &str,
    (key, state): (Option<&str>, StateUse),
) -> String {
    match format {
        LogFormat::Json => {
            let mut v = summary_json(outcome, attempts_made, elapsed, seed, Some(reason));
            v["idempotency_key"] = key.into();
            v["state"] = state.name().into();
            v.to_string()
        }
        LogFormat::Text => format!(
            "{PREFIX} error: {}",
            summary_words(outcome.into(), (attempts_made, elapsed), last, None, key)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(decision: Decision) -> AttemptLine {
        AttemptLine {
            attempt: 2,
            attempts: 6,
            method: "GET".into(),
            url: "http://h/".into(),
            start_url: "http://h/".into(),
            status: Some((503, "Service Unavailable".into())),
            error: None,
            start_ms: 10,
            elapsed: Duration::from_millis(41),
            retry_after: Some("1".into()),
            note: None,
            not_ready: None,
            decision,
        }
    }

    #[test]
    fn retry_after_phrase() {
        let a = line(Decision::Retry {
            wait: Duration::from_millis(1420),
            reason: WaitReason::RetryAfter,
            asked: Some(Duration::from_secs(1)),
            hint: Some(Duration::from_secs(1)),
            spread: Duration::from_millis(420),
            jitter: Jitter::Full,
        });
        assert_eq!(
            retry_phrase(&a),
            "retry in 1.42s (Retry-After: 1, +420ms spread)"
        );
    }

    #[test]
    fn summary_keys_and_reason() {
        let v = summary_json(Outcome::Success, 1, Duration::from_millis(5), 7, None);
        for k in [
            "type",
            "outcome",
            "exit_code",
            "attempts_made",
            "elapsed_ms",
            "seed",
            "reason",
        ] {
            assert!(v.get(k).is_some(), "{k}");
        }
        assert_eq!(v["reason"], Value::Null);
        let v = summary_json(Outcome::Refused, 0, Duration::ZERO, 0, Some("circuit open"));
        assert_eq!(v["reason"], "circuit open");
    }

    /// The state a run reports is the latest in `StateUse`'s order: a store that failed
    /// after answering is `unavailable`, whatever came before.
    #[test]
    fn the_state_keeps_the_latest_in_its_order() {
        let r = Reporter::new(LogConfig::plain(LogFormat::Json));
        assert_eq!(r.state().name(), "none");
        r.note_state(StateUse::Used);
        assert_eq!(r.state().name(), "used");
        r.note_state(StateUse::Refused);
        r.note_state(StateUse::Used);
        assert_eq!(r.state().name(), "refused");
        r.note_state(StateUse::Unavailable);
        r.note_state(StateUse::Refused);
        assert_eq!(Reporter::state_of(&r.state_handle()).name(), "unavailable");
    }

    #[test]
    fn a_run_that_sent_nothing_says_so_once() {
        for last in [
            "nothing sent",
            "nothing sent: the request body was still being read",
            "nothing sent: the circuit is open for h",
        ] {
            let line = forced_summary(
                LogFormat::Text,
                Outcome::Deadline,
                (0, Duration::from_millis(3), 0),
                last,
                last,
                (None, StateUse::None),
            );
            assert_eq!(line.matches("nothing sent").count(), 1, "{line}");
            assert!(!line.contains("attempt"), "{line}");
            assert!(line.ends_with("; exit 5"), "{line}");
        }
        assert_eq!(after_nothing_sent("nothing sent"), "");
        assert_eq!(after_nothing_sent("nothing sent: why"), ": why");
        assert_eq!(after_nothing_sent("the store failed"), ": the store failed");
    }

    /// The summary's words name the attempts, the last answer and a reason that adds to
    /// it; the forced summary (deadline, signal) writes the same words.
    #[test]
    fn the_summary_names_the_last_answer_and_a_new_reason_once() {
        let d = Duration::from_millis(1420);
        let words = summary_words(
            Outcome::Deadline.into(),
            (3, d),
            "503",
            Some("deadline"),
            None,
        );
        assert_eq!(
            words,
            "deadline reached after 3 attempts in 1.42s (last: 503; deadline); exit 5"
        );
        let same = summary_words(
            Outcome::Deadline.into(),
            (1, d),
            "503",
            Some("503"),
            Some("k"),
        );
        assert!(same.contains("after 1 attempt in"), "{same}");
        assert!(same.contains("(last: 503); Idempotency-Key: k;"), "{same}");
        let forced = forced_summary(
            LogFormat::Text,
            Outcome::Deadline,
            (3, d, 0),
            "503",
            "deadline",
            (None, StateUse::None),
        );
        let plain = summary_words(Outcome::Deadline.into(), (3, d), "503", None, None);
        assert_eq!(forced, format!("retry-http: error: {plain}"));
    }

    #[test]
    fn json_keys_always_present() {
        let v = attempt_json(&line(Decision::Done));
        for k in [
            "attempt",
            "attempts",
            "method",
            "url",
            "status",
            "error",
            "start_ms",
            "elapsed_ms",
            "wait_ms",
            "wait_reason",
            "retry_after",
        ] {
            assert!(v.get(k).is_some(), "{k}");
        }
        assert_eq!(v["wait_reason"], "none");
    }
}
