//! The attempt loop: send, classify, wait = max(backoff, Retry-After) bounded by the
//! deadline, sleep or stop. It joins the policy (pure) to the transport (I/O) and hands
//! each attempt's line to the reporter as soon as the attempt ends.

use crate::body::Payload;
use crate::config::Config;
use crate::exit::Outcome;
use crate::interrupt::{Interrupt, Signal};
use crate::output::Output;
use crate::policy::{self, FailureKind, Fit};
use crate::redact;
use crate::report::{AttemptLine, Decision, Reporter, fmt_duration};
use crate::retry_after;
use crate::transport::{Exchange, Failure, Transport};
use rand::Rng;
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
    /// The last status received, if any.
    pub last_status: Option<u16>,
}

/// The result of one attempt, before the policy looks at it.
enum Tried {
    /// A success: the body is committed. Holds status and reason.
    Success(u16, String),
    /// A response of 400 or more (body unread).
    Failed(Exchange),
    /// No usable response.
    Broken(Failure),
}

/// What happens after an attempt.
enum Step {
    /// Stop with this outcome and reason.
    Stop(Outcome, String),
    /// Sleep, then try again.
    Wait(Duration, Decision),
}

fn signal_outcome(s: Signal) -> Outcome {
    match s {
        Signal::Int => Outcome::Interrupted,
        Signal::Term => Outcome::Terminated,
    }
}

fn failure(kind: FailureKind, detail: impl Into<String>) -> Failure {
    Failure {
        kind,
        detail: detail.into(),
    }
}

impl Loop<'_> {
    fn deadline_left(&self) -> Option<Duration> {
        self.cfg
            .retry
            .deadline
            .map(|d| d.saturating_sub(self.start.elapsed()))
    }

    fn deadline_passed(&self) -> bool {
        self.deadline_left().is_some_and(|l| l.is_zero())
    }

    /// Runs the attempts; `rng` drives every random draw.
    pub fn run(&self, rng: &mut dyn Rng) -> Ended {
        let retry = &self.cfg.retry;
        let mut previous = retry.backoff.base;
        let mut last = String::from("no attempt made");
        let mut last_status = None;
        for n in 1..=retry.attempts {
            if self.deadline_passed() {
                return Ended {
                    outcome: Outcome::Deadline,
                    attempts_made: n - 1,
                    last,
                    last_status,
                };
            }
            let budget = match (self.cfg.timeouts.attempt, self.deadline_left()) {
                (Some(t), Some(l)) => Some(t.min(l)),
                (t, l) => t.or(l),
            };
            let begun = Instant::now();
            let tried = self.try_once(budget);
            let mut line = AttemptLine {
                attempt: n,
                attempts: retry.attempts,
                method: self.cfg.request.method.clone(),
                url: redact::url(&self.cfg.request.url),
                status: None,
                error: None,
                start_ms: begun.duration_since(self.start).as_millis(),
                elapsed: begun.elapsed(),
                retry_after: None,
                decision: Decision::Done,
            };
            let mut pending = None;
            let step = if let Some(sig) = self.interrupt.fired() {
                line.error = Some("interrupted".into());
                last = "interrupted".into();
                Step::Stop(signal_outcome(sig), "stopping: interrupted".into())
            } else {
                match tried {
                    Tried::Success(status, reason) => {
                        line.status = Some((status, reason));
                        self.reporter.attempt(&line);
                        return Ended {
                            outcome: Outcome::Success,
                            attempts_made: n,
                            last,
                            last_status: Some(status),
                        };
                    }
                    Tried::Failed(ex) => {
                        let status = ex.head.status;
                        last_status = Some(status);
                        last = format!("{status} {}", ex.head.reason)
                            .trim_end()
                            .to_string();
                        line.status = Some((status, ex.head.reason.clone()));
                        let raw: Vec<&str> = ex.head.values("retry-after").collect();
                        line.retry_after = (!raw.is_empty()).then(|| raw.join(", "));
                        let step = self.judge_response(n, &ex, &mut previous, rng);
                        pending = Some(ex);
                        step
                    }
                    Tried::Broken(f) => {
                        last = f.kind.name().to_string();
                        line.error = Some(format!(
                            "{}: {}",
                            f.kind.name(),
                            redact::text(&f.detail, &self.secrets)
                        ));
                        self.judge_failure(n, &f, &mut previous, rng)
                    }
                }
            };
            match step {
                Step::Stop(outcome, why) => {
                    line.decision = Decision::Stop(why);
                    self.reporter.attempt(&line);
                    let outcome = match pending {
                        Some(ex) if self.cfg.output.fail_with_body => {
                            self.deliver_error_body(ex, outcome)
                        }
                        _ => outcome,
                    };
                    return Ended {
                        outcome,
                        attempts_made: n,
                        last,
                        last_status,
                    };
                }
                Step::Wait(wait, decision) => {
                    line.decision = decision;
                    self.reporter.attempt(&line);
                    drop(pending);
                    if let Some(sig) = self.interrupt.sleep(wait) {
                        return Ended {
                            outcome: signal_outcome(sig),
                            attempts_made: n,
                            last,
                            last_status,
                        };
                    }
                }
            }
        }
        Ended {
            outcome: Outcome::AttemptsExhausted,
            attempts_made: retry.attempts,
            last,
            last_status,
        }
    }

    /// One exchange; a success's body is delivered before this returns.
    fn try_once(&self, budget: Option<Duration>) -> Tried {
        let req = &self.cfg.request;
        let ex =
            match self
                .transport
                .send(&req.method, &req.url, &self.headers, self.payload, budget)
            {
                Ok(ex) => ex,
                Err(f) => return Tried::Broken(f),
            };
        self.log_response_headers(&ex.head);
        if ex.head.status >= 400 {
            return Tried::Failed(ex);
        }
        let (status, reason) = (ex.head.status, ex.head.reason.clone());
        match self.deliver(ex) {
            Ok(()) => Tried::Success(status, reason),
            Err(f) => Tried::Broken(f),
        }
    }

    /// Reads the body into a spool and commits it when complete.
    fn deliver(&self, ex: Exchange) -> Result<(), Failure> {
        let limit = self.cfg.output.max_filesize;
        let announced = ex
            .head
            .value("content-length")
            .and_then(|v| v.parse::<u64>().ok());
        if let (Some(max), Some(len)) = (limit, announced)
            && len > max
        {
            return Err(failure(
                FailureKind::TooLarge,
                format!("Content-Length {len} is larger than --max-filesize {max}"),
            ));
        }
        let mut spool = self.output.begin(&ex.head).map_err(|e| {
            failure(
                FailureKind::Local,
                format!("cannot create a temporary file for the body: {e}"),
            )
        })?;
        match Transport::read_body(ex.body, &mut spool, limit) {
            Ok(_) => match self.output.commit(spool) {
                // The reader of stdout went away: nothing more to say to it.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                Err(e) => Err(failure(
                    FailureKind::Local,
                    format!("cannot write the output: {e}"),
                )),
                Ok(()) => Ok(()),
            },
            Err(mut f) => {
                let escaped = spool.escaped();
                self.output.discard(spool);
                if escaped > 0 && f.kind.is_retryable() {
                    f.detail = format!(
                        "{} after {escaped} bytes were streamed (--no-buffer)",
                        f.detail
                    );
                    f.kind = FailureKind::Streamed;
                }
                Err(f)
            }
        }
    }

    /// `--fail-with-body`: the final error response's body is written too.
    fn deliver_error_body(&self, ex: Exchange, outcome: Outcome) -> Outcome {
        match self.deliver(ex) {
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

    fn judge_response(
        &self,
        n: u32,
        ex: &Exchange,
        previous: &mut Duration,
        rng: &mut dyn Rng,
    ) -> Step {
        let retry = &self.cfg.retry;
        let status = ex.head.status;
        let method = &self.cfg.request.method;
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
            policy::status_means_unprocessed(status),
        ) {
            return Step::Stop(
                Outcome::NonRetryableResponse,
                format!(
                    "not retried: {method} is not idempotent and a {status} does not prove it was not processed; \
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
        previous: &mut Duration,
        rng: &mut dyn Rng,
    ) -> Step {
        let retry = &self.cfg.retry;
        let method = &self.cfg.request.method;
        if f.kind == FailureKind::Local {
            return Step::Stop(Outcome::Local, "stopping: local failure".into());
        }
        if !f.kind.is_retryable() {
            return Step::Stop(
                Outcome::NonRetryableTransport,
                format!(
                    "not retried: a {} will not go away on a second try",
                    f.kind.name()
                ),
            );
        }
        if !policy::replay_allowed(
            method,
            self.has_key,
            retry.retry_unsafe,
            f.kind.proves_unprocessed(),
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

    fn log_response_headers(&self, head: &crate::transport::Head) {
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
