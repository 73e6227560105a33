//! The attempt loop: send, classify, ask the policy's decision, then sleep or stop. It joins
//! the policy (pure) to the transport (I/O), owns what carries from one attempt to the next
//! (a partial download, the hop to restart at, the last backoff drawn), hands each
//! attempt's line to the reporter as soon as the attempt ends, and returns everything the
//! end of the run needs. Getting a body to its destination (and resuming it) is
//! `delivery`'s; what to do after an attempt is `policy::decision`'s.

use crate::config::Config;
use crate::exit::Outcome;
use crate::fleet::admission::{Between, Gate, Pass};
use crate::http::body::Payload;
use crate::http::conditional::Answer;
use crate::http::resume;
use crate::http::timing::Timeline;
use crate::http::transport::{Exchange, Failure, Head, Hop, Transport};
use crate::output::{Output, Spool};
use crate::policy::decision::{self, Attempt, Happened, Rules, Verdict};
use crate::policy::readiness::{self, ByStatus};
use crate::policy::retry_after::{self, Reading};
use crate::policy::{FailureKind, WaitReason, backoff};
use crate::process::deadline::Watchdog;
use crate::process::interrupt::Interrupt;
use crate::redact;
use crate::report::{AttemptLine, Decision, Reporter};
use crate::request::cron::{self, Prior};
use crate::request::delivery::{Broken, Delivery, Partial, Received, Resumed};
use crate::request::leftover;
use rand::Rng;
use std::time::{Duration, Instant, SystemTime};

/// What one run of attempts works with, borrowed; the loop's own state is in [`Carry`].
pub struct Loop<'a> {
    /// The validated configuration.
    pub cfg: &'a Config,
    /// The URL sent (the configured one, with `-G`'s data from files or stdin).
    pub url: &'a url::Url,
    /// Sends requests.
    pub transport: &'a Transport,
    /// Receives the final body.
    pub output: &'a Output,
    /// The request body, read once.
    pub payload: Option<&'a Payload>,
    /// Writes stderr.
    pub reporter: &'a Reporter,
    /// Set by the signals that stop a run.
    pub interrupt: &'a Interrupt,
    /// Keeps the deadline (see `deadline`).
    pub watchdog: &'a Watchdog,
    /// Request headers, Idempotency-Key included.
    pub headers: Vec<(String, String)>,
    /// Whether an Idempotency-Key is sent.
    pub has_key: bool,
    /// When the process started (the deadline counts from here).
    pub start: Instant,
    /// `--state`: the shared state (the circuit breaker, the retry budget, a shared
    /// Retry-After), asked before each retry and again as it is sent; a refusal ends the run
    /// with exit 7.
    pub shared: Option<&'a dyn Between>,
    /// A Retry-After that another run shared through `--state`, still holding for this long
    /// before the first attempt.
    pub hold: Option<Duration>,
    /// What the cron flags asked (`-C -`'s range, the conditions), to judge the answer.
    pub cron: &'a Prior,
}

/// Which requests an attempt sent: the one it started with, and the one it ended on.
struct Sent {
    first: Hop,
    last: Hop,
    /// An earlier hop sent a non-idempotent request that got an answer other than 307/308.
    committed: bool,
}

/// How the loop ended, and what the end of the run needs from it.
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
    /// The head of the last response received (for `-D` and `%{url_effective}`).
    pub head: Option<Head>,
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
}

/// The result of one attempt, before the decision looks at it.
enum Tried {
    /// A success: the body is committed. Status, reason, the byte it resumed at, and the
    /// bytes delivered.
    Success(u16, String, Option<u64>, u64),
    /// A success that leaves the output as it was (a 304; under `-C -`, a file already
    /// whole): status, reason, and why.
    Unchanged(u16, String, String),
    /// A response of 400 or more (body unread).
    Failed(Exchange),
    /// No usable response.
    Broken(Failure),
    /// A redirect that was not followed (body unread), and why.
    Declined(Exchange, String),
    /// An answer that failed an `--until-*` condition: its head, why, and its body (unread,
    /// or read into a spool when a body condition read it).
    NotReady(Head, String, Pending),
}

/// The body of an answer that was not ready, kept until the decision says whether it is
/// the last answer (`--fail-with-body` then writes it).
enum Pending {
    /// Not read yet (boxed: an exchange holds its head's bytes as received).
    Unread(Box<Exchange>),
    /// Read whole into its spool.
    Read(Received),
}

/// What the loop carries from one attempt to the next.
struct Carry {
    /// A download broken mid-body, kept to be resumed by the next attempt.
    partial: Option<Partial>,
    /// Where the next attempt starts: the hop that failed, once an earlier hop may have
    /// been processed (None: the request as given).
    from: Option<Hop>,
    /// The last backoff drawn (decorrelated jitter grows from it).
    previous: Duration,
    /// The last attempt's result, for the summary.
    last: String,
    /// The head of the last response received.
    head: Option<Head>,
    /// Body bytes delivered to the output.
    delivered: u64,
    /// The last attempt's timeline.
    timeline: Timeline,
    /// Connections and redirects of the attempts so far.
    connects: u32,
    redirects: u32,
    /// The method of the last request sent.
    method: Option<String>,
    /// Its body bytes, when it was answered; its Referer.
    uploaded: u64,
    referer: Option<String>,
    /// The last attempt's error status and Retry-After.
    status: Option<u16>,
    hint: Option<Duration>,
    /// The last attempt's answer was not ready.
    not_ready: bool,
    /// The longest attempt so far (a last attempt before the deadline is left this long).
    longest: Duration,
    /// The wait before the attempt now made was fitted before the deadline: it is the last
    /// such attempt (see `decision`, row 13).
    fitted: bool,
}

/// What follows an attempt, for the loop.
enum Next {
    /// The run ends with this outcome; why, as the attempt's line said it.
    Stop(Outcome, Option<String>),
    /// Sleep this long (the countdown says why), then try again.
    Sleep(Duration, String),
}

/// What an attempt's result means to the decision, with the error answer kept for
/// `--fail-with-body` and the Retry-After read from it.
struct Judged {
    happened: Happened,
    pending: Option<Exchange>,
    reading: Option<Reading>,
    /// A not-ready body already read into its spool.
    spooled: Option<Received>,
}

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

fn add_note(line: &mut AttemptLine, note: String) {
    line.note = Some(match line.note.take() {
        Some(n) => format!("{n}, {note}"),
        None => note,
    });
}

impl Loop<'_> {
    fn deadline_left(&self) -> Option<Duration> {
        self.cfg
            .retry
            .deadline
            .map(|d| d.saturating_sub(self.start.elapsed()))
    }

    fn deadline_passed(&self) -> bool {
        self.watchdog.expired() || self.deadline_left().is_some_and(|l| l.is_zero())
    }

    /// The run's rules, as the decision reads them.
    fn rules(&self) -> Rules<'_> {
        let retry = &self.cfg.retry;
        // The half-open circuit's probe has a single attempt, until an answer proves the
        // target up.
        let probing = self.shared.is_some_and(|s| s.probing());
        Rules {
            attempts: if probing { 1 } else { retry.attempts },
            retry_on: &retry.retry_on,
            backoff: retry.backoff,
            retry_after_spread: retry.retry_after_spread,
            has_key: self.has_key,
            retry_unsafe: retry.retry_unsafe,
        }
    }

    fn delivery(&self) -> Delivery<'_> {
        Delivery {
            cfg: self.cfg,
            output: self.output,
            transport: self.transport,
            reporter: self.reporter,
            watchdog: self.watchdog,
            start: self.start,
        }
    }

    /// Runs the attempts; `rng` drives every random draw.
    pub fn run(&self, rng: &mut dyn Rng) -> Ended {
        let mut carry = Carry {
            partial: None,
            from: None,
            previous: self.cfg.retry.backoff.base,
            last: "no attempt made".into(),
            head: None,
            delivered: 0,
            timeline: Timeline::default(),
            connects: 0,
            redirects: 0,
            method: None,
            uploaded: 0,
            referer: None,
            status: None,
            hint: None,
            not_ready: false,
            longest: Duration::ZERO,
            fitted: false,
        };
        carry.partial = self.take_leftover();
        let mut made = 0;
        if let Some(stop) = self.wait_for_hold(rng) {
            return self.ended(stop, 0, carry);
        }
        let (outcome, why) = loop {
            if self.deadline_passed() {
                break (Outcome::Deadline, None);
            }
            made += 1;
            match self.attempt(made, &mut carry, rng) {
                Next::Stop(outcome, why) => break (outcome, why),
                Next::Sleep(wait, why) => {
                    if let Some(sig) = self.sleep_visibly(wait, &why) {
                        break (sig.outcome(), None);
                    }
                    if let Some(stop) = self.clear_to_send(carry.not_ready, rng) {
                        break stop;
                    }
                }
            }
        };
        self.ended((outcome, why), made, carry)
    }

    /// Before the first attempt, the wait for a Retry-After another run shared; `Some` when
    /// the run must end instead (interrupted, or the deadline came nearer meanwhile).
    fn wait_for_hold(&self, rng: &mut dyn Rng) -> Option<(Outcome, Option<String>)> {
        self.honour_hold(self.hold?, "before the first attempt", rng)
    }

    /// After a retry's wait, just before it is sent: the state charges it to the budget
    /// now (unless it polls an answer that was not ready), so that a retry that is not sent
    /// is never charged. A Retry-After that another run was told meanwhile is waited for
    /// first (or stops the run with 5 when it holds past the deadline), as one of the run's
    /// own would be; the deadline or a signal may end the run before anything is charged.
    /// `Some` when the run ends instead, and why.
    fn clear_to_send(&self, polling: bool, rng: &mut dyn Rng) -> Option<(Outcome, Option<String>)> {
        let shared = self.shared?;
        loop {
            if self.deadline_passed() {
                return Some((Outcome::Deadline, None));
            }
            match shared.send_retry(!polling) {
                Pass::Go => return None,
                Pass::Held(held) => {
                    if let Some(stop) = self.honour_hold(held, "more", rng) {
                        return Some(stop);
                    }
                }
                Pass::Spent(why) => {
                    return Some((Outcome::Refused, Some(format!("not retried: {why}"))));
                }
            }
        }
    }

    /// Waits out a shared Retry-After that still holds for `held` (plus this run's spread),
    /// saying so (`when`: "before the first attempt", "more"); `Some` when the run must end
    /// instead: the wait cannot end before the deadline (5), or a signal came.
    fn honour_hold(
        &self,
        held: Duration,
        when: &str,
        rng: &mut dyn Rng,
    ) -> Option<(Outcome, Option<String>)> {
        let spread = self.cfg.retry.retry_after_spread;
        let Some(wait) = decision::wait_for_hold(held, spread, self.deadline_left(), rng) else {
            return Some((
                Outcome::Deadline,
                Some("stopping: a Retry-After shared by the runs holds past the deadline".into()),
            ));
        };
        self.reporter.info(&format!(
            "waiting {} {when}: another run sharing --state was told Retry-After",
            crate::units::fmt_duration(wait)
        ));
        let sig = self.sleep_visibly(wait, "Retry-After shared by the runs")?;
        Some((sig.outcome(), None))
    }

    /// What the loop hands back once it is over.
    fn ended(
        &self,
        (outcome, why): (Outcome, Option<String>),
        made: u32,
        mut carry: Carry,
    ) -> Ended {
        // A partial download kept for a next attempt that will not come is thrown away, or
        // under `-C -` left for the next run.
        if let Some(p) = carry.partial.take() {
            self.leave_or_discard(p);
        }
        // The deadline came between attempts, after an answer that was not ready.
        let outcome = if outcome == Outcome::Deadline && carry.not_ready {
            Outcome::NotReady
        } else {
            outcome
        };
        Ended {
            outcome,
            attempts_made: made,
            last: carry.last,
            why,
            head: carry.head,
            delivered: carry.delivered,
            timeline: carry.timeline,
            connects: carry.connects,
            redirects: carry.redirects,
            method: carry.method,
            uploaded: carry.uploaded,
            referer: carry.referer,
            head_dumped: self.output.head_dumped(),
            status: carry.status,
            hint: carry.hint,
        }
    }

    /// `-C -`: the bytes an earlier run left for the -o file, claimed by this run, as the
    /// kept part of a broken download (preferred over the file's own size).
    fn take_leftover(&self) -> Option<Partial> {
        let file = self
            .cron
            .file
            .as_deref()
            .filter(|_| self.cfg.conditional.resume)?;
        let mut warn = |w: String| self.reporter.warn(&w);
        let l = leftover::take(file, self.url.as_str(), &mut warn)?;
        self.reporter.info(&format!(
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
    /// file for the next run (see `leftover`), else thrown away.
    fn leave_or_discard(&self, p: Partial) {
        let file = self
            .cron
            .file
            .as_deref()
            .filter(|_| self.cfg.conditional.resume);
        let (file, tmp) = match (file, p.spool) {
            (Some(file), Spool::Named(tmp)) => (file, tmp),
            (_, spool) => return self.output.discard(spool),
        };
        let temp = tmp.path().to_path_buf();
        let url = self.url.as_str();
        match leftover::keep(file, url, tmp, p.offset, p.total, &p.validator) {
            Ok(data) => self.reporter.info(&format!(
                "-C -: kept {} of {} bytes in {} for the next run with -C -",
                p.offset,
                p.total,
                data.display()
            )),
            Err(e) => self.reporter.warn(&format!(
                "-C -: cannot keep the {} bytes received for the next run: {e}",
                p.offset
            )),
        }
        crate::process::interrupt::untrack_temp(&temp);
    }

    /// Attempt `n`: send, log its line, and carry out the decision about it.
    fn attempt(&self, n: u32, carry: &mut Carry, rng: &mut dyn Rng) -> Next {
        let begun = Instant::now();
        self.watchdog.note(n, "no answer yet");
        let (tried, sent) = self.try_once(carry);
        carry.method = Some(sent.last.method.clone());
        let mut line = self.line(n, begun, &sent);
        let judged = self.record(tried, &sent, &mut line, carry);
        carry.longest = carry.longest.max(begun.elapsed());
        self.watchdog.note(n, &carry.last);
        let facts = Attempt {
            happened: judged.happened,
            number: n,
            method: &sent.last.method,
            first_method: &sent.first.method,
            committed: sent.committed,
            deadline_passed: self.deadline_passed(),
            left: self.deadline_left(),
            hint: judged.reading.as_ref().and_then(|r| r.hint),
            previous: carry.previous,
            longest: carry.longest,
            fitted: carry.fitted,
            after_not_ready: carry.not_ready,
        };
        carry.status = match facts.happened {
            Happened::Status(s) => Some(s),
            _ => None,
        };
        carry.not_ready = matches!(facts.happened, Happened::NotReady(_));
        // Should the deadline cut the next attempt and the watchdog have to end the run, it
        // ends as the decision would (row 7 as 8 after a not-ready answer).
        self.watchdog.at_deadline(if carry.not_ready {
            Outcome::NotReady
        } else {
            Outcome::Deadline
        });
        // The service is up: the breaker hears it before the decision, which then lets a
        // half-open circuit's probe go on polling (said after the attempt's line).
        let closed = match self.shared {
            Some(shared) if carry.not_ready => shared.answered(),
            _ => None,
        };
        carry.hint = facts.hint.map(|h| h.wait);
        let verdict = self.decide(&facts, judged.reading.as_ref(), rng);
        let spooled = judged.spooled;
        let body = (judged.pending, judged.reading, spooled);
        let next = self.carry_out(verdict, line, body, sent, carry);
        if let Some(news) = closed {
            self.reporter.info(&news);
        }
        next
    }

    /// Carries out the decision about an attempt whose line is `line`: logs the line, and
    /// writes or discards the answer's body as the verdict says.
    fn carry_out(
        &self,
        verdict: Verdict,
        mut line: AttemptLine,
        (pending, reading, spooled): (Option<Exchange>, Option<Reading>, Option<Received>),
        sent: Sent,
        carry: &mut Carry,
    ) -> Next {
        match verdict {
            Verdict::Done => {
                self.reporter.attempt(&line);
                Next::Stop(Outcome::Success, None)
            }
            Verdict::Stop { outcome, reason } => {
                line.decision = Decision::Stop(reason.clone());
                self.reporter.attempt(&line);
                // -I shows the head of whatever answered, as curl does; there is no body.
                let head_only = self.cfg.request.method == "HEAD" && self.cfg.output.include;
                let fail_with_body = self.cfg.output.fail_with_body;
                let outcome = match (pending, spooled) {
                    (Some(ex), _) if fail_with_body || head_only => {
                        self.delivery().deliver_error_body(ex, outcome)
                    }
                    (_, Some(r)) if fail_with_body => match self.delivery().commit(r) {
                        Ok(_) => outcome,
                        Err(b) => {
                            self.reporter
                                .warn(&format!("could not write the body: {}", b.failure.detail));
                            outcome
                        }
                    },
                    (_, Some(r)) => {
                        self.output.discard(r.spool);
                        outcome
                    }
                    _ => outcome,
                };
                Next::Stop(outcome, Some(reason))
            }
            Verdict::Retry(retry) => {
                if let Some(r) = spooled {
                    self.output.discard(r.spool);
                }
                let asked = reading.as_ref().and_then(|r| r.asked);
                line.decision = Decision::Retry {
                    wait: retry.wait,
                    reason: retry.planned.reason,
                    asked,
                    hint: carry.hint,
                    spread: retry.wait.saturating_sub(retry.planned.draw.floor),
                    jitter: self.cfg.retry.backoff.jitter.label(),
                };
                self.reporter.attempt(&line);
                self.retry(&retry, sent, carry)
            }
        }
    }

    /// What a retry carries to the next attempt: the backoff drawn, and (once an earlier
    /// hop may have been processed) the hop that failed as the one to send again, never
    /// the request before it; then the sleep, with what the countdown says.
    fn retry(&self, retry: &decision::Retry, sent: Sent, carry: &mut Carry) -> Next {
        carry.previous = retry.drawn;
        carry.fitted = carry.fitted || retry.planned.reason == WaitReason::Deadline;
        let own = matches!(
            retry.planned.reason,
            WaitReason::Backoff | WaitReason::Deadline
        );
        let why = if own {
            format!("backoff after {}", carry.last)
        } else {
            format!("Retry-After from {}", carry.last)
        };
        carry.from = sent.committed.then_some(sent.last);
        Next::Sleep(retry.wait, why)
    }

    /// The decision about an attempt. Where a retry is allowed, the server's Retry-After
    /// values that could not be read are reported (they are ignored, never read as 0), and
    /// a retry the decision plans is asked of the retry budget, which may refuse it.
    fn decide(&self, facts: &Attempt, reading: Option<&Reading>, rng: &mut dyn Rng) -> Verdict {
        let rules = self.rules();
        if let Some(stop) = decision::judge(&rules, facts) {
            return stop;
        }
        for bad in reading.iter().flat_map(|r| &r.invalid) {
            self.reporter.warn(&bad.to_string());
        }
        let verdict = decision::schedule(&rules, facts, rng);
        let (Verdict::Retry(retry), Some(shared)) = (&verdict, self.shared) else {
            return verdict;
        };
        // The state is asked last; it hears this attempt's Retry-After (429 and 503) to
        // share it, and refuses a retry the budget has no room for. It charges nothing
        // yet: that is done when the retry is sent (`clear_to_send`).
        let status = match facts.happened {
            Happened::Status(s) => Some(s),
            _ => None,
        };
        let hint = facts
            .hint
            .filter(|_| status.is_some_and(crate::fleet::admission::shares_hint))
            .map(|h| h.wait);
        // A poll of an answer that was not ready is not charged: the service is up.
        let charge = !matches!(facts.happened, Happened::NotReady(_));
        match shared.before_retry(hint, facts.left, charge) {
            Gate::Go(Some(held)) if held > retry.wait => {
                let spread = rules.retry_after_spread;
                match decision::wait_for_hold(held, spread, self.deadline_left(), rng) {
                    Some(wait) => Verdict::Retry(decision::Retry {
                        wait,
                        planned: backoff::PlannedWait {
                            reason: WaitReason::Shared,
                            draw: backoff::Draw {
                                floor: held,
                                spread: wait.saturating_sub(held),
                            },
                            ..retry.planned
                        },
                        drawn: retry.drawn,
                    }),
                    None => Verdict::stop(
                        Outcome::Deadline,
                        "stopping: a Retry-After shared by the runs holds past the deadline",
                    ),
                }
            }
            Gate::Go(_) => verdict,
            Gate::Spent(why) => Verdict::refused(&why),
            Gate::TooLate(why) => Verdict::stop(Outcome::Deadline, why),
        }
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
            attempts: self.rules().attempts,
            method: sent.first.method.clone(),
            url: redact::url(&sent.first.url),
            start_url: redact::url(self.url),
            status: None,
            error: None,
            start_ms: begun.duration_since(self.start).as_millis(),
            elapsed: begun.elapsed(),
            retry_after: None,
            note: None,
            not_ready: None,
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

    /// Fills the attempt's result into its line and the summary's `last`, and says what
    /// happened in the decision's terms.
    fn record(
        &self,
        tried: Tried,
        sent: &Sent,
        line: &mut AttemptLine,
        carry: &mut Carry,
    ) -> Judged {
        let judged = |happened, pending, reading| Judged {
            happened,
            pending,
            reading,
            spooled: None,
        };
        // A success was put in place before the signal was seen: it stands, and says so.
        if let Some(sig) = self
            .interrupt
            .fired()
            .filter(|_| !matches!(tried, Tried::Success(..)))
        {
            line.error = Some("interrupted".into());
            carry.last = "interrupted".into();
            return judged(Happened::Signal(sig.outcome()), None, None);
        }
        match tried {
            Tried::Success(status, reason, resumed, delivered) => {
                carry.last = format!("{status} {reason}").trim_end().to_string();
                carry.delivered = delivered;
                line.status = Some((status, reason));
                line.note = resumed.map(|at| format!("resumed at byte {at}"));
                self.note_redirect(line, sent);
                judged(Happened::Success, None, None)
            }
            Tried::Unchanged(status, reason, why) => {
                carry.last = format!("{status} {reason}").trim_end().to_string();
                carry.delivered = 0;
                line.status = Some((status, reason));
                line.note = Some(why);
                self.note_redirect(line, sent);
                judged(Happened::Success, None, None)
            }
            Tried::Failed(ex) => {
                self.note_answer(&ex, sent, line, carry);
                let raw: Vec<&str> = ex.head.values("retry-after").collect();
                line.retry_after = (!raw.is_empty()).then(|| raw.join(", "));
                let reading =
                    retry_after::read_all(raw, SystemTime::now(), self.cfg.retry.max_retry_after);
                judged(Happened::Status(ex.head.status), Some(ex), Some(reading))
            }
            Tried::Declined(ex, why) => {
                self.note_answer(&ex, sent, line, carry);
                judged(Happened::Declined(why), Some(ex), None)
            }
            Tried::Broken(f) => {
                self.note_failure(&f, sent, line, carry);
                judged(Happened::Failure(f.kind), None, None)
            }
            Tried::NotReady(head, why, body) => {
                let status = format!("{} {}", head.status, head.reason);
                carry.last = format!("{}, not ready: {why}", status.trim_end());
                line.status = Some((head.status, head.reason.clone()));
                self.note_redirect(line, sent);
                line.not_ready = Some(why.clone());
                let raw: Vec<&str> = head.values("retry-after").collect();
                line.retry_after = (!raw.is_empty()).then(|| raw.join(", "));
                let reading =
                    retry_after::read_all(raw, SystemTime::now(), self.cfg.retry.max_retry_after);
                let (pending, spooled) = match body {
                    Pending::Unread(ex) => (Some(*ex), None),
                    Pending::Read(r) => (None, Some(r)),
                };
                Judged {
                    happened: Happened::NotReady(why),
                    pending,
                    reading: Some(reading),
                    spooled,
                }
            }
        }
    }

    /// No usable response: what went wrong into the line and the summary, and the request
    /// that failed named.
    fn note_failure(&self, f: &Failure, sent: &Sent, line: &mut AttemptLine, carry: &mut Carry) {
        let described = describe(f);
        // A failure that ends the run is named in full in the summary (under -s the only
        // line shown): "TLS certificate rejected (... trust it with --cacert FILE)".
        carry.last = if f.kind.is_retryable() {
            f.kind.name().to_string()
        } else {
            described.clone()
        };
        line.error = Some(described);
        if self.watchdog.expired() && f.kind != FailureKind::Local {
            // The watchdog cut the exchange: whatever the socket said, that is why.
            line.error = Some("cut at the deadline".into());
            carry.last = "cut at the deadline".into();
        }
        self.name_failed_hop(line, sent);
    }

    /// A response that is not a success: its status into the line and the summary, and
    /// the request it answered named.
    fn note_answer(&self, ex: &Exchange, sent: &Sent, line: &mut AttemptLine, carry: &mut Carry) {
        let status = ex.head.status;
        carry.last = format!("{status} {}", ex.head.reason)
            .trim_end()
            .to_string();
        line.status = Some((status, ex.head.reason.clone()));
        self.name_failed_hop(line, sent);
    }

    /// Sleeps, showing a countdown on a terminal when the wait is long enough to wonder about.
    fn sleep_visibly(
        &self,
        wait: Duration,
        why: &str,
    ) -> Option<crate::process::interrupt::Signal> {
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
    fn first_hop(&self, carry: &Carry) -> Hop {
        carry.from.clone().unwrap_or_else(|| Hop {
            method: self.cfg.request.method.clone(),
            url: self.url.clone(),
            headers: self.headers.clone(),
            with_body: self.payload.is_some(),
        })
    }

    /// One exchange; a success's body is delivered before this returns.
    fn try_once(&self, carry: &mut Carry) -> (Tried, Sent) {
        let partial = carry.partial.take();
        let first = self.first_hop(carry);
        let mut hop = first.clone();
        let mut asked: Vec<(String, String)> = partial
            .iter()
            .flat_map(|p| resume::range_headers(p.offset, &p.validator))
            .collect();
        // `-C -` asks for the rest of the -o file on every attempt (nothing is kept).
        asked.extend(self.cron.range().filter(|_| partial.is_none()));
        hop.headers.extend(asked.iter().cloned());
        let replay_ok = self.has_key || self.cfg.retry.retry_unsafe;
        let chain = self
            .transport
            .send(&hop, self.payload, self.budget(), replay_ok);
        // The range asked for belongs to this attempt: the hop a later attempt starts at
        // asks for what will be kept then.
        carry.connects += chain.timeline.connects;
        carry.redirects += chain.timeline.redirects;
        carry.timeline = chain.timeline;
        let mut last = chain.last;
        last.headers.retain(|h| !asked.contains(h));
        carry.uploaded = match (&chain.result, self.payload) {
            (Ok(_), Some(p)) if last.with_body => p.content_length(),
            _ => 0,
        };
        carry.referer = last
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("referer"))
            .map(|(_, v)| v.clone());
        // An attempt that starts at a hop after a processed one is past that point too.
        let sent = Sent {
            first,
            last,
            committed: chain.committed || carry.from.is_some(),
        };
        let tried = match (chain.result, chain.declined) {
            (Ok(ex), Some(why)) => {
                carry.partial = partial;
                Tried::Declined(ex, why)
            }
            (Ok(ex), None) => self.take_response(ex, partial, &sent.last.method, carry),
            (Err(f), _) => {
                // A redirect not followed (--max-redirs, --proto-redir) is the last answer
                // that came, as curl reports it in -w and -D.
                if let Some(head) = chain.unfollowed {
                    carry.head = Some(head);
                }
                // No final response: the kept bytes are still good for the next attempt.
                carry.partial = partial;
                Tried::Broken(f)
            }
        };
        (tried, sent)
    }

    /// A response arrived: judge its head against a kept partial download, and deliver a
    /// success's body.
    fn take_response(
        &self,
        ex: Exchange,
        partial: Option<Partial>,
        method: &str,
        carry: &mut Carry,
    ) -> Tried {
        self.log_response_headers(&ex.head);
        carry.head = Some(ex.head.clone());
        let (status, reason) = (ex.head.status, ex.head.reason.clone());
        // A kept part asked for its own range: the -o file's size was not asked for.
        let judged = match &partial {
            Some(_) => crate::http::conditional::judge(
                &ex.head,
                &crate::http::conditional::Asked {
                    resume_from: None,
                    ..self.cron.asked
                },
            ),
            None => self.cron.judge(&ex.head),
        };
        match judged {
            Answer::Deliver => {}
            Answer::Unchanged(why) => {
                if let Some(p) = partial {
                    self.output.discard(p.spool);
                }
                return Tried::Unchanged(status, reason, why);
            }
            Answer::NotResumable(why) => {
                return Tried::Broken(Failure::new(FailureKind::NotResumable, why));
            }
            Answer::Resume(range) => return self.resume_file(ex, range, method),
        }
        // An error, or an answer not ready, says nothing about the representation: the
        // kept bytes stay kept.
        let ready = &self.cfg.ready;
        match ready.by_status(status, &self.cfg.retry.retry_on) {
            ByStatus::Error => {
                carry.partial = partial;
                return Tried::Failed(ex);
            }
            ByStatus::NotReady(why) => {
                carry.partial = partial;
                return Tried::NotReady(ex.head.clone(), why, Pending::Unread(Box::new(ex)));
            }
            ByStatus::Candidate => {}
        }
        if let Some(why) = ready.check_headers(&ex.head.headers) {
            carry.partial = partial;
            return Tried::NotReady(ex.head.clone(), why, Pending::Unread(Box::new(ex)));
        }
        let range = partial
            .as_ref()
            .and_then(|p| resume::continues(&ex.head, p.offset, p.total, &p.validator));
        let continued = match (partial, range) {
            (Some(partial), Some(range)) => Some(Resumed { partial, range }),
            (stale, _) => {
                // A 200 (or anything else) means the representation changed: start over.
                if let Some(p) = stale {
                    if self.cfg.conditional.resume {
                        self.reporter.warn(&format!(
                            "-C -: the {} bytes kept are not continued by this {status} answer (the representation changed): discarded, downloading from the first byte",
                            p.offset
                        ));
                    }
                    self.output.discard(p.spool);
                }
                None
            }
        };
        if let Some(f) = not_final(&ex.head, continued.is_some()) {
            return Tried::Broken(f);
        }
        self.watchdog
            .note_last(&format!("{status} {reason}, its body not yet delivered"));
        let resumed = continued.as_ref().map(|r| r.partial.offset);
        let head = ex.head.clone();
        let delivered = if ready.needs_body() {
            self.delivery()
                .receive(ex, continued, method == "GET")
                .and_then(|r| match self.check_body(&r) {
                    Ok(None) => self.delivery().commit(r).map(Ok),
                    Ok(Some(why)) => Ok(Err((why, r))),
                    Err(f) => {
                        self.output.discard(r.spool);
                        Err(Broken::from(f))
                    }
                })
        } else {
            self.delivery()
                .deliver(ex, continued, method == "GET")
                .map(Ok)
        };
        match delivered {
            Ok(Ok(n)) => Tried::Success(status, reason, resumed, n),
            Ok(Err((why, r))) => Tried::NotReady(head, why, Pending::Read(r)),
            Err(Broken { failure, kept }) => {
                carry.partial = kept;
                Tried::Broken(failure)
            }
        }
    }

    /// Reads a received body back (at most `MAX_CHECKED` bytes) and checks the body and
    /// JSON conditions on it: `Ok(None)` when they hold, else why not.
    fn check_body(&self, r: &Received) -> Result<Option<String>, Failure> {
        let body = r
            .spool
            .contents(r.body_start, readiness::MAX_CHECKED)
            .map_err(|e| {
                Failure::new(
                    FailureKind::Local,
                    format!("cannot read the body back to check it: {e}"),
                )
            })?;
        // `len` counts the body alone; `body_start` is where it begins in the spool.
        Ok(self.cfg.ready.check_body(body.as_deref(), r.len))
    }

    /// `-C -`: a 206 that continues the -o file. Its bytes are copied into the spool, the
    /// 206's body appended, and the whole put in place only when it is exactly the range;
    /// anything less leaves the file as it was (the next attempt asks again).
    fn resume_file(&self, ex: Exchange, range: resume::Continuation, method: &str) -> Tried {
        let (status, reason) = (ex.head.status, ex.head.reason.clone());
        let (Some(file), Some(size)) = (&self.cron.file, self.cron.asked.resume_from) else {
            return Tried::Broken(Failure::new(FailureKind::Local, "no -o file to resume"));
        };
        let local = |e: std::io::Error| {
            Tried::Broken(Failure::new(
                FailureKind::Local,
                format!("cannot copy the {size} bytes of the -o file to resume it: {e}"),
            ))
        };
        let mut spool = match self.output.begin(&ex.head) {
            Ok(s) => s,
            Err(e) => return local(e),
        };
        if let Err(e) = cron::copy_kept(&mut spool, file, size) {
            self.output.discard(spool);
            return local(e);
        }
        let partial = Partial {
            spool,
            offset: size,
            total: range.last + 1,
            validator: resume::Validator(String::new()),
        };
        self.watchdog
            .note_last(&format!("{status} {reason}, its body not yet delivered"));
        let continued = Resumed { partial, range };
        match self
            .delivery()
            .deliver(ex, Some(continued), method == "GET")
        {
            // As curl counts it for -w %{size_download}: the bytes this run received.
            Ok(n) => Tried::Success(status, reason, Some(size), n.saturating_sub(size)),
            Err(Broken { failure, .. }) => Tried::Broken(failure),
        }
    }

    fn log_response_headers(&self, head: &Head) {
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

/// A success status that is still no whole answer: 1xx to a request that asked for no
/// upgrade, or a 206 that does not continue the kept download (a part of something is
/// never a whole body; the kept bytes are gone, so the next attempt asks for everything).
fn not_final(head: &Head, continues: bool) -> Option<Failure> {
    if head.status < 200 {
        return Some(Failure::new(
            FailureKind::Protocol,
            format!(
                "a {} answer to a request that asked for no upgrade",
                head.status
            ),
        ));
    }
    (head.status == 206 && !continues).then(|| {
        Failure::new(
            FailureKind::Truncated,
            "a 206 Partial Content that does not continue the download; starting over",
        )
    })
}
