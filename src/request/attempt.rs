//! The attempt loop: send, classify, wait = max(backoff, Retry-After) bounded by the
//! deadline, sleep or stop. It joins the policy (pure) to the transport (I/O) and hands
//! each attempt's line to the reporter as soon as the attempt ends. Getting a body to its
//! destination (and resuming it) is `delivery`'s.

use crate::config::Config;
use crate::exit::Outcome;
use crate::http::body::Payload;
use crate::http::redact;
use crate::http::resume;
use crate::http::transport::{Exchange, Failure, Hop, Transport};
use crate::output::Output;
use crate::policy::retry_after;
use crate::policy::{self, FailureKind, Fit, WaitReason};
use crate::process::deadline::Watchdog;
use crate::process::interrupt::{Interrupt, Signal};
use crate::report::{AttemptLine, Decision, Reporter, fmt_duration};
use crate::request::delivery::{Partial, Resumed};
use rand::Rng;
use std::cell::RefCell;
use std::time::{Duration, Instant, SystemTime};

/// Everything one run of attempts needs, borrowed.
pub struct Loop<'a> {
    /// The validated configuration.
    pub cfg: &'a Config,
    /// Sends requests.
    pub transport: &'a Transport,
    /// Receives the final body.
    pub output: &'a Output,
    /// The request body, read once.
    pub payload: Option<&'a Payload>,
    /// Writes stderr.
    pub reporter: &'a Reporter,
    /// Set by SIGINT/SIGTERM.
    pub interrupt: &'a Interrupt,
    /// Request headers, Idempotency-Key included.
    pub headers: Vec<(String, String)>,
    /// Whether an Idempotency-Key is sent.
    pub has_key: bool,
    /// When the process started (the deadline counts from here).
    pub start: Instant,
    /// Values to mask in error messages.
    pub secrets: Vec<String>,
    /// A download broken mid-body, kept to be resumed by the next attempt.
    pub partial: RefCell<Option<Partial>>,
    /// The head of the last response received (for `-D` and `%{url_effective}`).
    pub last_head: RefCell<Option<crate::http::transport::Head>>,
    /// Body bytes of the response delivered to the output (for `%{size_download}`).
    pub delivered: std::cell::Cell<u64>,
    /// Asked before each retry (the shared retry budget); an error refuses it (exit 7).
    pub retry_gate: Option<&'a dyn Fn() -> Result<(), String>>,
    /// Where the next attempt starts: the hop that failed, once an earlier hop may have
    /// been processed (None: the request as given).
    pub from: RefCell<Option<Hop>>,
    /// Keeps the deadline (see `deadline`).
    pub watchdog: &'a Watchdog,
}

/// Which requests an attempt sent: the one it started with, and the one it ended on.
struct Sent {
    first: Hop,
    last: Hop,
    /// An earlier hop sent a non-idempotent request that got an answer other than 307/308.
    committed: bool,
}

/// How the loop ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ended {
    /// The exit outcome.
    pub outcome: Outcome,
    /// Attempts made.
    pub attempts_made: u32,
    /// The last attempt's result, for the summary ("503 Service Unavailable").
    pub last: String,
    /// Why the loop stopped, as the last attempt's line says it ("not retried: ..."); None
    /// on success, and when it stopped between attempts (deadline, signal).
    pub why: Option<String>,
}

/// The result of one attempt, before the policy looks at it.
enum Tried {
    /// A success: the body is committed. Holds status, reason, and the byte it resumed at.
    Success(u16, String, Option<u64>),
    /// A response of 400 or more (body unread).
    Failed(Exchange),
    /// No usable response.
    Broken(Failure),
    /// A redirect that was not followed (body unread), and why.
    Declined(Exchange, String),
}

/// What the loop carries from one attempt to the next.
struct Track {
    /// The last backoff drawn (decorrelated jitter grows from it).
    previous: Duration,
    /// The last attempt's result, for the summary.
    last: String,
}

impl Track {
    fn ended(&self, outcome: Outcome, attempts_made: u32) -> Ended {
        Ended {
            outcome,
            attempts_made,
            last: self.last.clone(),
            why: None,
        }
    }
}

/// What happens after an attempt.
enum Step {
    /// The attempt succeeded.
    Done,
    /// Stop with this outcome and reason.
    Stop(Outcome, String),
    /// Sleep, then try again.
    Wait(Duration, Decision),
}

fn signal_outcome(s: Signal) -> Outcome {
    s.outcome()
}

/// "timeout (the attempt's time ran out)", with any secret masked.
fn describe(f: &Failure, secrets: &[String]) -> String {
    // "connection refused (Connection refused (os error 111))" says it twice.
    let repeats = f.detail.to_ascii_lowercase().starts_with(f.kind.name());
    if f.detail.is_empty() || repeats {
        f.kind.name().to_string()
    } else {
        format!("{} ({})", f.kind.name(), redact::text(&f.detail, secrets))
    }
}

fn add_note(line: &mut AttemptLine, note: String) {
    line.note = Some(match line.note.take() {
        Some(n) => format!("{n}, {note}"),
        None => note,
    });
}

pub(crate) fn failure(kind: FailureKind, detail: impl Into<String>) -> Failure {
    Failure {
        kind,
        detail: detail.into(),
    }
}

impl Loop<'_> {
    pub(crate) fn deadline_left(&self) -> Option<Duration> {
        self.cfg
            .retry
            .deadline
            .map(|d| d.saturating_sub(self.start.elapsed()))
    }

    pub(crate) fn deadline_passed(&self) -> bool {
        self.watchdog.expired() || self.deadline_left().is_some_and(|l| l.is_zero())
    }

    /// Runs the attempts; `rng` drives every random draw.
    pub fn run(&self, rng: &mut dyn Rng) -> Ended {
        let retry = &self.cfg.retry;
        let mut track = Track {
            previous: retry.backoff.base,
            last: "no attempt made".into(),
        };
        for n in 1..=retry.attempts {
            if self.deadline_passed() {
                return track.ended(Outcome::Deadline, n - 1);
            }
            let begun = Instant::now();
            self.watchdog.note(n, "no answer yet");
            let (tried, sent) = self.try_once(self.budget());
            let mut line = self.line(n, begun, &sent);
            let (step, pending) = self.judge(n, tried, &sent, &mut line, &mut track, rng);
            self.watchdog.note(n, &track.last);
            match step {
                Step::Done => {
                    self.reporter.attempt(&line);
                    return track.ended(Outcome::Success, n);
                }
                Step::Stop(outcome, why) => {
                    let stopped = why.clone();
                    line.decision = Decision::Stop(why);
                    self.reporter.attempt(&line);
                    // -I shows the head of whatever answered, as curl does; there is no body.
                    let head_only = self.cfg.request.method == "HEAD" && self.cfg.output.include;
                    let outcome = match pending {
                        Some(ex) if self.cfg.output.fail_with_body || head_only => {
                            self.deliver_error_body(ex, outcome)
                        }
                        _ => outcome,
                    };
                    return Ended {
                        why: Some(stopped),
                        ..track.ended(outcome, n)
                    };
                }
                Step::Wait(wait, decision) => {
                    let why = match &decision {
                        Decision::Retry { reason, .. } if *reason != WaitReason::Backoff => {
                            format!("Retry-After from {}", track.last)
                        }
                        _ => format!("backoff after {}", track.last),
                    };
                    line.decision = decision;
                    self.reporter.attempt(&line);
                    drop(pending);
                    // Once an earlier hop may have been processed, only the hop that failed
                    // is sent again (the judge allowed it): never the request before it.
                    *self.from.borrow_mut() = sent.committed.then_some(sent.last);
                    if let Some(sig) = self.sleep_visibly(wait, &why) {
                        return track.ended(signal_outcome(sig), n);
                    }
                }
            }
        }
        track.ended(Outcome::AttemptsExhausted, retry.attempts)
    }

    /// This attempt's time: the per-attempt timeout, cut to what is left of the deadline.
    fn budget(&self) -> Option<Duration> {
        match (self.cfg.timeouts.attempt, self.deadline_left()) {
            (Some(t), Some(l)) => Some(t.min(l)),
            (t, l) => t.or(l),
        }
    }

    /// The log line of attempt `n`, begun at `begun`, before its result is filled in. It
    /// names the attempt's first request; a failure renames it after the hop that failed.
    fn line(&self, n: u32, begun: Instant, sent: &Sent) -> AttemptLine {
        AttemptLine {
            attempt: n,
            attempts: self.cfg.retry.attempts,
            method: sent.first.method.clone(),
            url: redact::url(&sent.first.url),
            start_url: redact::url(&self.cfg.request.url),
            status: None,
            error: None,
            start_ms: begun.duration_since(self.start).as_millis(),
            elapsed: begun.elapsed(),
            retry_after: None,
            note: None,
            decision: Decision::Done,
        }
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

    /// Fills the attempt's result into its line and decides what comes next. A failed
    /// response is handed back, for `--fail-with-body`.
    fn judge(
        &self,
        n: u32,
        tried: Tried,
        sent: &Sent,
        line: &mut AttemptLine,
        track: &mut Track,
        rng: &mut dyn Rng,
    ) -> (Step, Option<Exchange>) {
        // A success was put in place before the signal was seen: it stands, and says so.
        if let Some(sig) = self
            .interrupt
            .fired()
            .filter(|_| !matches!(tried, Tried::Success(..)))
        {
            line.error = Some("interrupted".into());
            track.last = "interrupted".into();
            return (
                Step::Stop(signal_outcome(sig), "stopping: interrupted".into()),
                None,
            );
        }
        match tried {
            Tried::Success(status, reason, resumed) => {
                track.last = format!("{status} {reason}").trim_end().to_string();
                line.status = Some((status, reason));
                line.note = resumed.map(|at| format!("resumed at byte {at}"));
                self.note_redirect(line, sent);
                (Step::Done, None)
            }
            Tried::Failed(ex) => {
                self.note_answer(&ex, sent, line, track);
                let raw: Vec<&str> = ex.head.values("retry-after").collect();
                line.retry_after = (!raw.is_empty()).then(|| raw.join(", "));
                let step = self.judge_response(n, &ex, sent, &mut track.previous, rng);
                (step, Some(ex))
            }
            Tried::Declined(ex, why) => {
                self.note_answer(&ex, sent, line, track);
                (Step::Stop(Outcome::NonRetryableResponse, why), Some(ex))
            }
            Tried::Broken(f) => {
                track.last = f.kind.name().to_string();
                line.error = Some(describe(&f, &self.secrets));
                if self.watchdog.expired() && f.kind != FailureKind::Local {
                    // The watchdog cut the exchange: whatever the socket said, that is why.
                    line.error = Some("cut at the deadline".into());
                    track.last = "cut at the deadline".into();
                }
                self.name_failed_hop(line, sent);
                (
                    self.judge_failure(n, &f, sent, &mut track.previous, rng),
                    None,
                )
            }
        }
    }

    /// A response that is not a success: its status into the line and the summary, and
    /// the request it answered named.
    fn note_answer(&self, ex: &Exchange, sent: &Sent, line: &mut AttemptLine, track: &mut Track) {
        let status = ex.head.status;
        track.last = format!("{status} {}", ex.head.reason)
            .trim_end()
            .to_string();
        line.status = Some((status, ex.head.reason.clone()));
        self.name_failed_hop(line, sent);
    }

    /// Sleeps, showing a countdown on a terminal when the wait is long enough to wonder about.
    fn sleep_visibly(&self, wait: Duration, why: &str) -> Option<Signal> {
        if !self.reporter.live() || wait <= Duration::from_secs(2) {
            return self.interrupt.sleep(wait);
        }
        let end = Instant::now() + wait;
        let result = loop {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break None;
            }
            // Whole seconds, rounded up; tick when the shown number changes.
            let secs = left.as_secs_f64().ceil() as u64;
            self.reporter
                .live_line(&format!("waiting {secs}s: {why}, Ctrl-C to stop"));
            let tick = left.saturating_sub(Duration::from_secs(secs.saturating_sub(1)));
            if let Some(sig) = self.interrupt.sleep(tick) {
                break Some(sig);
            }
        };
        self.reporter.clear_live();
        result
    }

    /// The request an attempt starts with: the one given, or the hop that failed last time.
    fn first_hop(&self) -> Hop {
        self.from.borrow().clone().unwrap_or_else(|| Hop {
            method: self.cfg.request.method.clone(),
            url: self.cfg.request.url.clone(),
            headers: self.headers.clone(),
            with_body: self.payload.is_some(),
        })
    }

    /// One exchange; a success's body is delivered before this returns.
    fn try_once(&self, budget: Option<Duration>) -> (Tried, Sent) {
        let partial = self.partial.borrow_mut().take();
        let first = self.first_hop();
        let mut hop = first.clone();
        let asked: Vec<(String, String)> = partial
            .iter()
            .flat_map(|p| resume::request_headers(p.offset, &p.validator))
            .collect();
        hop.headers.extend(asked.iter().cloned());
        let replay_ok = self.has_key || self.cfg.retry.retry_unsafe;
        let chain = self.transport.send(&hop, self.payload, budget, replay_ok);
        // The range asked for belongs to this attempt: the hop a later attempt starts at
        // asks for what will be kept then.
        let mut last = chain.last;
        last.headers.retain(|h| !asked.contains(h));
        // An attempt that starts at a hop after a processed one is past that point too.
        let restarted = self.from.borrow().is_some();
        let sent = Sent {
            first,
            last,
            committed: chain.committed || restarted,
        };
        let ex = match chain.result {
            Ok(ex) if chain.declined.is_some() => {
                *self.partial.borrow_mut() = partial;
                let why = chain.declined.unwrap_or_default();
                return (Tried::Declined(ex, why), sent);
            }
            Ok(ex) => ex,
            Err(f) => {
                // No response at all: the kept bytes are still good for the next attempt.
                *self.partial.borrow_mut() = partial;
                return (Tried::Broken(f), sent);
            }
        };
        (self.take_response(ex, partial, &sent.last.method), sent)
    }

    /// A response arrived: judge its head against a kept partial download, and deliver a
    /// success's body.
    fn take_response(&self, ex: Exchange, partial: Option<Partial>, method: &str) -> Tried {
        self.log_response_headers(&ex.head);
        *self.last_head.borrow_mut() = Some(ex.head.clone());
        if ex.head.status >= 400 {
            // An error says nothing about the representation: the kept bytes stay kept.
            *self.partial.borrow_mut() = partial;
            return Tried::Failed(ex);
        }
        let range = partial
            .as_ref()
            .and_then(|p| resume::continues(&ex.head, p.offset, p.total, &p.validator));
        let (continued, stale) = match (partial, range) {
            (Some(partial), Some(range)) => (Some(Resumed { partial, range }), None),
            (other, _) => (None, other),
        };
        if let Some(p) = stale {
            // A 200 (or anything else) means the representation changed: start over.
            self.output.discard(p.spool);
        }
        if ex.head.status < 200 {
            // 1xx is never a final answer to a request that asked for no upgrade.
            return Tried::Broken(failure(
                FailureKind::Protocol,
                format!(
                    "a {} answer to a request that asked for no upgrade",
                    ex.head.status
                ),
            ));
        }
        if ex.head.status == 206 && continued.is_none() {
            // A part of something: never a whole body. The kept bytes are gone, so the next
            // attempt asks for everything.
            return Tried::Broken(failure(
                FailureKind::Truncated,
                "a 206 Partial Content that does not continue the download; starting over",
            ));
        }
        let (status, reason) = (ex.head.status, ex.head.reason.clone());
        self.watchdog
            .note_last(&format!("{status} {reason}, its body not yet delivered"));
        let resumed = continued.as_ref().map(|r| r.partial.offset);
        match self.deliver(ex, continued, method == "GET") {
            Ok(()) => Tried::Success(status, reason, resumed),
            Err(f) => Tried::Broken(f),
        }
    }

    fn judge_response(
        &self,
        n: u32,
        ex: &Exchange,
        sent: &Sent,
        previous: &mut Duration,
        rng: &mut dyn Rng,
    ) -> Step {
        let retry = &self.cfg.retry;
        let status = ex.head.status;
        let method = &sent.last.method;
        if !retry.retry_on.contains(status) {
            return Step::Stop(
                Outcome::NonRetryableResponse,
                format!(
                    "not retried: {status} is not in --retry-on ({})",
                    retry.retry_on.to_spec()
                ),
            );
        }
        if !policy::replay_allowed(
            method,
            self.has_key,
            retry.retry_unsafe,
            !sent.committed && policy::status_means_unprocessed(status),
        ) {
            let why = if sent.committed {
                format!(
                    "an earlier hop answered {} other than 307/308",
                    sent.first.method
                )
            } else {
                format!("a {status} does not prove it was not processed")
            };
            return Step::Stop(
                Outcome::NonRetryableResponse,
                format!(
                    "not retried: {method} is not idempotent and {why}; \
                     send an --idempotency-key (or --retry-unsafe) to allow replay"
                ),
            );
        }
        if self.deadline_passed() {
            return Step::Stop(
                Outcome::Deadline,
                "stopping: the deadline passed during this attempt".into(),
            );
        }
        let reading = retry_after::read_all(
            ex.head.values("retry-after"),
            SystemTime::now(),
            retry.max_retry_after,
        );
        for bad in &reading.invalid {
            self.reporter.warn(&bad.to_string());
        }
        self.schedule(n, Some(reading), previous, rng)
    }

    fn judge_failure(
        &self,
        n: u32,
        f: &Failure,
        sent: &Sent,
        previous: &mut Duration,
        rng: &mut dyn Rng,
    ) -> Step {
        let retry = &self.cfg.retry;
        let method = &sent.last.method;
        if f.kind == FailureKind::Local {
            return Step::Stop(Outcome::Local, "stopping: local failure".into());
        }
        if self.deadline_passed() {
            // At the deadline the exchange in flight is cut, whatever it was doing.
            return Step::Stop(
                Outcome::Deadline,
                "stopping: the deadline passed during this attempt".into(),
            );
        }
        if f.kind == FailureKind::Streamed {
            return Step::Stop(
                Outcome::NonRetryableTransport,
                "not retried: part of the body already reached stdout (--no-buffer)".into(),
            );
        }
        if !f.kind.is_retryable() {
            return Step::Stop(
                Outcome::NonRetryableTransport,
                format!(
                    "not retried: {} (a second try would fail the same way)",
                    f.kind.name()
                ),
            );
        }
        let timed_out = matches!(
            f.kind,
            FailureKind::Timeout | FailureKind::ConnectTimeout | FailureKind::Stall
        );
        if timed_out && self.deadline_passed() {
            // The attempt's time was cut to the deadline: the deadline ended it.
            return Step::Stop(
                Outcome::Deadline,
                "stopping: the deadline passed during this attempt".into(),
            );
        }
        if !policy::replay_allowed(
            method,
            self.has_key,
            retry.retry_unsafe,
            !sent.committed && f.kind.proves_unprocessed(),
        ) {
            return Step::Stop(
                Outcome::NonRetryableTransport,
                format!(
                    "not retried: {method} is not idempotent and the request may have been processed ({}); \
                     send an --idempotency-key (or --retry-unsafe) to allow replay",
                    f.kind.name()
                ),
            );
        }
        if self.deadline_passed() {
            return Step::Stop(
                Outcome::Deadline,
                "stopping: the deadline passed during this attempt".into(),
            );
        }
        self.schedule(n, None, previous, rng)
    }

    /// Plans the wait before attempt n + 1, or stops.
    fn schedule(
        &self,
        n: u32,
        hint: Option<retry_after::Reading>,
        previous: &mut Duration,
        rng: &mut dyn Rng,
    ) -> Step {
        let retry = &self.cfg.retry;
        if n >= retry.attempts {
            return Step::Stop(
                Outcome::AttemptsExhausted,
                "giving up: no attempts left".into(),
            );
        }
        let drawn = retry.backoff.draw(n - 1, *previous, rng);
        *previous = drawn.total();
        let clamped_hint = hint.as_ref().and_then(|r| r.hint);
        let planned = policy::plan_wait(
            &retry.backoff,
            drawn,
            clamped_hint,
            retry.retry_after_spread,
            rng,
        );
        let left = self.deadline_left();
        match policy::fit_to_deadline(planned.draw, left) {
            Fit::Stop => Step::Stop(
                Outcome::Deadline,
                format!(
                    "stopping: the next wait ({}) would end past the deadline ({} left)",
                    fmt_duration(planned.draw.floor),
                    fmt_duration(left.unwrap_or_default())
                ),
            ),
            // The budget is asked last, so it is charged only for retries that will be sent.
            Fit::Sleep(_) if let Some(Err(why)) = self.retry_gate.map(|gate| gate()) => {
                Step::Stop(Outcome::Refused, format!("not retried: {why}"))
            }
            Fit::Sleep(wait) => Step::Wait(
                wait,
                Decision::Retry {
                    wait,
                    reason: planned.reason,
                    asked: hint.as_ref().and_then(|r| r.asked),
                    hint: clamped_hint.map(|h| h.wait),
                    spread: wait.saturating_sub(planned.draw.floor),
                    jitter: retry.backoff.jitter.label(),
                },
            ),
        }
    }

    fn log_response_headers(&self, head: &crate::http::transport::Head) {
        if !self.reporter.verbose() {
            return;
        }
        self.reporter.detail(&format!(
            "< {} {} {}",
            head.version, head.status, head.reason
        ));
        for (name, value) in &head.headers {
            self.reporter
                .detail(&format!("< {name}: {}", redact::header_value(name, value)));
        }
    }
}
