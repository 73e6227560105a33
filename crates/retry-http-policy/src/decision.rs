//! THE decision after an attempt: stop (with which outcome, and why) or retry (after how
//! long). Every exit status the attempt loop can end with is chosen here, in one order,
//! from what the attempt ended with and what the run allows; the loop only gathers the
//! facts and carries the verdict out. Pure: the random source is passed in, and so is the
//! shared state's answer about a retry; the time left is a number. [`schedule`] (rows 11 to
//! 15 alone) is public for `simulate`, which plays the backoff without a transport.
//!
//! The precedence, first match wins (the table test below lists every row):
//!
//! | # | when                                                        | outcome |
//! |---|-------------------------------------------------------------|---------|
//! | 1 | a signal arrived during an attempt that did not succeed     | 129-143 |
//! | 2 | the attempt succeeded                                       | 0       |
//! | 3 | under `-L`, a redirect that would replay the request         | 3       |
//! | 4 | a status not in `--retry-on`; with an Idempotency-Key, a 422 whatever `--retry-on` says (a 409 then goes on, whatever it says; a 400 goes on only when it names it) | 3 |
//! | 5 | a status the server may have acted on, for a request not safe to replay | 3 |
//! | 6 | a local failure (writing the output)                        | 1       |
//! | 7 | the deadline passed during the attempt                      | 5       |
//! | 8 | a body cut after part of it reached stdout (`--no-buffer`)  | 6       |
//! | 9 | a transport failure a second try would repeat (TLS, protocol) | 6     |
//! | 10 | a transport failure after which the request may have been processed, not safe to replay | 6 |
//! | 11 | no attempts left                                           | 4       |
//! | 12 | the server's Retry-After would end past the deadline       | 5       |
//! | 13 | the backoff would end past the deadline, and no time is left for another attempt | 5 |
//! | 14 | the backoff would end past the deadline: the last attempt, its start drawn before it | - |
//! | 15 | otherwise: retry after the wait                            | -       |
//!
//! Rows 13 and 14 ("the last attempt fits the deadline"): a backoff is this tool's own
//! choice, so when it would end past the deadline the run does not give up early; it waits
//! instead until shortly before the deadline, leaving the next attempt the least time an
//! attempt needs: the larger of [`MIN_ATTEMPT`] (10 ms) and the longest attempt so far.
//! The start of that attempt is drawn, uniformly in the second half of the time left before
//! that point (never shorter than a Retry-After the server gave), so that a fleet started
//! by one cron tick, which shares a deadline, does not fire at one instant. When the
//! backoff after a fitted attempt would again end past the deadline, another attempt is
//! fitted only while the room left is at least `--base`, the least wait the user set
//! between attempts: so a run ends within about `--base` of its deadline, yet never makes
//! a burst of ever closer attempts just before it (a fleet sharing the deadline would make
//! them all at once); otherwise it stops (row 13), as it does when less than the least
//! attempt time is left. A
//! server's Retry-After is not this tool's choice: one that would end past the deadline
//! stops the run at once (row 12; the server said when to come back).
//!
//! An answer that failed an `--until-*` condition (not ready) is polled like a retryable
//! status: rows 1, 7 (as 8), 11 to 15 apply, and where they would end the run with 4 or 5
//! it ends with 8, "not ready" (the service answered; it was not ready yet). So does a
//! deadline that cuts the attempt after such an answer (row 7 as 8): the last answer the
//! run had was "not ready".
//!
//! A retry that rows 14 and 15 allow is then put to what the breaker's and budget's
//! records said (`--state`, or a batch's own) as the attempt was told to the run's gate:
//! [`decide`] asks the `gate` it is given, which answers from that fact (the loop's
//! answer is [`retry_gate`] on the `policy::gate::Outlook` the tell returned: an input, as
//! the random source is), and the answer is weighed in rows 16 to 18. Nothing is charged
//! here: a retry is charged as it is sent.
//!
//! | # | when (a retry was allowed)                                  | outcome |
//! |---|-------------------------------------------------------------|---------|
//! | 16 | the retry budget has no room for it                        | 7       |
//! | 17 | a Retry-After shared by the runs holds past the deadline   | 5       |
//! | 18 | a shared Retry-After outlasts the wait: wait for it instead (5 when it cannot end before the deadline) | - |
//!
//! The rest of the rows are decided outside an attempt, where the loop waits or ends:
//!
//! | # | when                                                        | outcome |
//! |---|-------------------------------------------------------------|---------|
//! | 19 | the deadline passed before the next attempt                | 5       |
//! | 20 | a signal arrived during a wait                             | 129-143 |
//! | 21 | just before a retry is sent, the budget was spent meanwhile | 7      |
//! | 22 | a Retry-After shared by the runs, or the hold or pacing of the origin (`fleet::origins`), cannot end before the deadline ([`wait_for_hold`]) | 5 |
//! | 23 | the attempts ended with 5 (any row) after an answer that was not ready | 8 |
//! | 24 | the run's end: the deadline passed while an error body, `-D` or `-w` was written | 5 |
//! | 25 | then a file the run writes at its end (`-D`, `--etag-save`, `-w`) cannot be written | 1 |
//!
//! Rows 19 to 22 are [`deadline_between`], [`signalled`] and [`stopped`], row 23 is [`after_the_loop`], row 24 [`at_the_end`], row
//! 25 [`unwritten`].
//!
//! With an Idempotency-Key, row 4 reads the key's own answers first (`idempotency`, the
//! IETF httpapi draft): a 409 (a request with this key is still being processed) goes on
//! to row 7 and the rows after it, as a retryable status does, even when `--retry-on` does
//! not list it; the key makes its replay safe (row 5 allows it). A 422 (the key was used
//! with a different request) ends the run with 3 even when `--retry-on` lists it: the same
//! request with the same key gets the same answer. A 400 (the key may be required in
//! another form, or the request is malformed) ends it with 3 unless `--retry-on` names it
//! (a code, a class such as `4xx`, a range): the user's list wins where the replay is safe,
//! and the key makes it safe, so it goes on as a listed status does, for every method.
//! Without a key none of this applies.
//!
//! Rate limiting is not an outage, for the retry budget either ([`charged`]): a retry
//! after a 429 (waiting out its Retry-After, or its backoff when it has none) is not
//! charged to the budget, nor is one after an answer whose RateLimit fields said the quota
//! was spent (the loop adds that), nor a poll of an answer that was not ready. The hold is
//! what protects the server; charging those retries would end a batch that meets a rate
//! limit with exit 7. A

//! response is judged on its status before the deadline (the answer arrived, whatever the
//! clock says); a transport failure at the deadline is the deadline's (the watchdog's cut is
//! what broke the exchange, so its kind says nothing).
//!
//! Sources: RFC 9110 sections 9.2.2 (idempotent methods) and 10.2.3 (Retry-After), RFC
//! 6585 section 4 (429), the IETF httpapi Idempotency-Key draft.

use super::backoff::{
    Backoff, Draw, Fit, Hint, MIN_ATTEMPT, PlannedWait, WaitReason, fit_leaving, fit_to_deadline,
    plan_wait, uniform,
};
use super::gate::{Clear, Outlook, Stop, Why};
use super::idempotency::{KeyAnswer, key_answer};
use super::replay::{FailureKind, StatusSet, replay_allowed, status_means_unprocessed};
use crate::outcome::{Cause, Outcome};
use crate::units::fmt_duration;
use rand::Rng;
use std::time::Duration;

/// How an attempt ended, as far as the decision is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Happened {
    /// The response was a success and its body is in place.
    Success,
    /// A signal arrived; the outcome it ends the run with (129 to 143).
    Signal(Outcome),
    /// A response with a status of 400 or more.
    Status(u16),
    /// Under `-L`, a redirect not followed because following it would send a
    /// non-idempotent request again; why, as the attempt line says it.
    Declined(String),
    /// No usable response.
    Failure(FailureKind),
    /// An answer that failed an `--until-*` condition; why, as the attempt line says it.
    NotReady(String),
}

/// `--attempts unlimited`: as many attempts as the deadline allows.
pub const UNLIMITED: u32 = u32::MAX;

/// The rules of a run, from its configuration.
#[derive(Debug, Clone, Copy)]
pub struct Rules<'a> {
    /// The most attempts (at least 1).
    pub attempts: u32,
    /// The statuses that are retried (`--retry-on`).
    pub retry_on: &'a StatusSet,
    /// The backoff between attempts.
    pub backoff: Backoff,
    /// The spread added to a Retry-After wait (`--retry-after-spread`).
    pub retry_after_spread: Duration,
    /// An Idempotency-Key is sent, so the server deduplicates replays.
    pub has_key: bool,
    /// `--retry-unsafe`: replay non-idempotent requests anyway.
    pub retry_unsafe: bool,
}

/// What the decision weighs about one attempt.
#[derive(Debug, Clone)]
pub struct Attempt<'a> {
    /// How it ended.
    pub happened: Happened,
    /// Its number, from 1.
    pub number: u32,
    /// The method of the request that failed (under `-L`, the last hop's).
    pub method: &'a str,
    /// The method of the attempt's first request, named when an earlier hop committed it.
    pub first_method: &'a str,
    /// An earlier hop (of this attempt or an earlier one) sent a non-idempotent request that
    /// the server answered with something other than 307/308: it may have been processed.
    pub committed: bool,
    /// The deadline has passed (its watchdog cut the exchange, or the time is up).
    pub deadline_passed: bool,
    /// Time left before the deadline (`None`: no deadline).
    pub left: Option<Duration>,
    /// The server's Retry-After, read and clamped (see `retry_after`).
    pub hint: Option<Hint>,
    /// The last backoff drawn (the base before the first retry); decorrelated jitter
    /// grows from it.
    pub previous: Duration,
    /// The longest attempt of the run so far, this one included: a last attempt before the
    /// deadline is left at least this long (and never less than [`MIN_ATTEMPT`]).
    pub longest: Duration,
    /// The attempt before this one was answered but not ready (`--until-*`): a deadline that
    /// cuts this one ends the run not ready (8), not with 5.
    pub after_not_ready: bool,
    /// This attempt was the last one fitted before the deadline (row 14 chose its wait):
    /// a backoff that would again end past the deadline stops the run (row 13).
    pub fitted: bool,
}

/// A retry: how long to wait, and the parts of that wait for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry {
    /// The wait to sleep, already fitted to the deadline.
    pub wait: Duration,
    /// How it was planned: the backoff drawn, the hint, which one decided.
    pub planned: PlannedWait,
    /// The backoff drawn for this retry: the next decision's `previous`.
    pub drawn: Duration,
}

/// What comes next: after an attempt, done, a stop or a retry ([`decide`]); between
/// attempts, the stop that ends the run ([`deadline_between`], [`signalled`], [`stopped`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The attempt succeeded: the run ends with exit 0.
    Done,
    /// The run ends with `outcome`; `reason` is what the attempt line says ("not retried:
    /// ...", "stopping: ...", "giving up: ...").
    Stop {
        /// The exit outcome.
        outcome: Outcome,
        /// Why, as one phrase.
        reason: String,
    },
    /// Sleep, then try again.
    Retry(Retry),
}

impl Verdict {
    /// The run ends with `outcome`, for `reason`.
    pub fn stop(outcome: Outcome, reason: impl Into<String>) -> Verdict {
        Verdict::Stop {
            outcome,
            reason: reason.into(),
        }
    }

    /// The retry budget (`--state`) refused the retry this verdict allowed: exit 7.
    pub fn refused(why: &str) -> Verdict {
        Verdict::stop(Outcome::Refused, format!("not retried: {why}"))
    }

    /// The outcome this verdict ends the run with (`None`: the run goes on).
    pub fn outcome(&self) -> Option<Outcome> {
        match self {
            Verdict::Done => Some(Outcome::Success),
            Verdict::Stop { outcome, .. } => Some(*outcome),
            Verdict::Retry(_) => None,
        }
    }
}

/// The reason given when the deadline passed while an attempt was under way.
pub const DEADLINE_DURING: &str = "stopping: the deadline passed during this attempt";

/// What the decision asks its `gate` about a retry it would make (the loop answers from
/// what the records said, see [`retry_gate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ask {
    /// The attempt's error status (None: it got none), whose Retry-After may be shared.
    pub status: Option<u16>,
    /// The attempt's Retry-After, read and clamped.
    pub hint: Option<Duration>,
    /// Time left before the deadline (None: no deadline).
    pub left: Option<Duration>,
    /// Whether the retry counts against the retry budget: a poll of an answer that was not
    /// ready does not (the service is up).
    pub charge: bool,
}

/// Decides what follows attempt `a` under `rules`: rows 1 to 10 ([`judge`]), then 11 to 15
/// ([`schedule`]), then, for a retry, rows 16 to 18 with the answer `gate` gives (asked only
/// then). `rng` draws the backoff and a shared Retry-After's spread.
pub fn decide(
    rules: &Rules,
    a: &Attempt,
    gate: &mut dyn FnMut(Ask) -> Clear,
    rng: &mut dyn Rng,
) -> Verdict {
    if let Some(stop) = judge(rules, a) {
        return stop;
    }
    let verdict = schedule(rules, a, rng);
    let Verdict::Retry(retry) = verdict else {
        return verdict;
    };
    let ask = Ask {
        status: match a.happened {
            Happened::Status(s) => Some(s),
            _ => None,
        },
        hint: a.hint.map(|h| h.wait),
        left: a.left,
        charge: charged(&a.happened),
    };
    admit(rules, retry, gate(ask), rng)
}

/// Whether a retry after an attempt that ended as `happened` is charged to the retry
/// budget: not after a 429 (rate limiting, not an outage: the server's hold protects it),
/// nor to poll an answer that was not ready (the service is up and answering).
pub fn charged(happened: &Happened) -> bool {
    !matches!(happened, Happened::NotReady(_) | Happened::Status(429))
}

/// Whether the server's Retry-After matters to the attempt: rows 1 to 10 let the run go
/// on, so any value that could not be read is worth a warning (it is ignored, never read
/// as 0).
pub fn reads_retry_after(rules: &Rules, a: &Attempt) -> bool {
    judge(rules, a).is_none()
}

/// Rows 16 to 18: the shared state's answer about `retry`.
fn admit(rules: &Rules, retry: Retry, answer: Clear, rng: &mut dyn Rng) -> Verdict {
    match answer {
        Clear::Go => Verdict::Retry(retry),
        Clear::Stop(stop) => stopped(stop),
        Clear::Wait { wait: held, .. } if held <= retry.wait => Verdict::Retry(retry),
        Clear::Wait { wait: held, why } => {
            let left = match why {
                Why::Shared { left, .. } => left,
                _ => None,
            };
            match wait_for_hold(held, rules.retry_after_spread, left, rng) {
                Some(wait) => Verdict::Retry(Retry {
                    wait,
                    planned: PlannedWait {
                        reason: WaitReason::Shared,
                        draw: Draw {
                            floor: held,
                            spread: wait.saturating_sub(held),
                        },
                        ..retry.planned
                    },
                    drawn: retry.drawn,
                }),
                None => Verdict::stop(Outcome::Deadline, HOLD_PAST_DEADLINE),
            }
        }
    }
}

/// Rows 16 to 18's answer from the records' [`Outlook`] about a retry asked as `ask`: the
/// store failed (under `--state-on-error closed`), then a shared Retry-After holding past
/// the deadline (`ask.left`), then a budget with no room for a charged retry, stop the
/// run; a shared Retry-After still holding is a wait; else go. Pure.
pub fn retry_gate(o: &Outlook, ask: &Ask) -> Clear {
    if let Some(why) = &o.failed {
        return Clear::Stop(Stop::Spent(why.clone()));
    }
    if let Some(h) = o.held
        && !hold_fits(h, ask.left)
    {
        return Clear::Stop(Stop::TooLate(format!(
            "stopping: a Retry-After for {} shared by the runs holds for {}, past the deadline ({} left)",
            o.origin,
            fmt_duration(h),
            fmt_duration(ask.left.unwrap_or_default())
        )));
    }
    match (o.spent.as_ref().filter(|_| ask.charge), o.held) {
        (Some(why), _) => Clear::Stop(Stop::Spent(why.clone())),
        (None, Some(h)) => Clear::Wait {
            wait: h,
            why: Why::Shared {
                left: ask.left,
                line: None,
            },
        },
        (None, None) => Clear::Go,
    }
}

/// Why a run stops when a Retry-After shared by the runs cannot end before the deadline.
pub const HOLD_PAST_DEADLINE: &str =
    "stopping: a Retry-After shared by the runs holds past the deadline";

/// Row 19: the deadline passed before the next attempt (5; after an answer that was not
/// ready, 8 at once, as row 23 would make it).
pub fn deadline_between(after_not_ready: bool) -> Verdict {
    let outcome = after_the_loop(Outcome::Deadline, after_not_ready);
    Verdict::stop(outcome, stopping(outcome))
}

/// Row 20: a signal arrived during a wait; `outcome` is the one it ends the run with (129
/// to 143).
pub fn signalled(outcome: Outcome) -> Verdict {
    Verdict::stop(outcome, stopping(outcome))
}

/// Rows 21 and 22 as a gate's stop says them before a send: the budget spent meanwhile
/// (7), a shared Retry-After or the origin's hold or pacing that cannot end before the
/// deadline (5, in the words of row 12). A batch that halted before the run's first send
/// ends it refused (7) as its gate would, though the batch counts such a run not started.
pub fn stopped(stop: Stop) -> Verdict {
    match stop {
        Stop::Spent(why) => Verdict::refused(&why),
        Stop::TooLate(why) => Verdict::stop(Outcome::Deadline, why),
        Stop::Halted(why) => Verdict::stop(Outcome::Refused, why),
    }
}

/// Why a run that ended outside an attempt (rows 19 and 20, or before its first attempt)
/// stopped, in its outcome's own words ("stopping: interrupted").
pub fn stopping(outcome: Outcome) -> String {
    match outcome {
        Outcome::Deadline => "stopping: the deadline passed before the next attempt".into(),
        Outcome::Interrupted => "stopping: interrupted".into(),
        Outcome::Terminated => "stopping: terminated".into(),
        other => other.meaning().into(),
    }
}

/// Row 23: the outcome of the attempts once they are over. A run that ended with 5 (by any
/// row) when its last answer was not ready ends not ready (8): the service answered.
pub fn after_the_loop(outcome: Outcome, last_not_ready: bool) -> Outcome {
    if outcome == Outcome::Deadline && last_not_ready {
        Outcome::NotReady
    } else {
        outcome
    }
}

/// A verdict about a not-ready answer: a run that ends on one for want of attempts or time
/// ends "not ready" (8), not with 4 or 5.
fn not_ready(v: Verdict) -> Verdict {
    match v {
        Verdict::Stop {
            outcome: Outcome::AttemptsExhausted | Outcome::Deadline,
            reason,
        } => Verdict::stop(Outcome::NotReady, reason),
        other => other,
    }
}

/// Rows 1 to 10: the verdict when the attempt ends the run whatever the wait would be, or
/// `None` when another attempt may be made (then [`schedule`] plans it).
fn judge(rules: &Rules, a: &Attempt) -> Option<Verdict> {
    let verdict = judge_attempt(rules, a);
    if !a.after_not_ready {
        return verdict;
    }
    // The service answered, not ready, and the deadline then cut the next attempt: the run
    // ends not ready (8), as it would have had that answer been the last.
    verdict.map(|v| match v {
        Verdict::Stop {
            outcome: Outcome::Deadline,
            reason,
        } => Verdict::stop(
            Outcome::NotReady,
            format!("{reason} (the answer before it was not ready)"),
        ),
        other => other,
    })
}

fn judge_attempt(rules: &Rules, a: &Attempt) -> Option<Verdict> {
    match &a.happened {
        Happened::Signal(outcome) => Some(Verdict::stop(*outcome, "stopping: interrupted")),
        Happened::Success => Some(Verdict::Done),
        Happened::Declined(why) => Some(Verdict::stop(Outcome::NonRetryableResponse, why)),
        Happened::Status(status) => judge_status(rules, a, *status),
        Happened::Failure(kind) => judge_failure(rules, a, *kind),
        Happened::NotReady(_) => a
            .deadline_passed
            .then(|| Verdict::stop(Outcome::NotReady, DEADLINE_DURING)),
    }
}

/// A response of 400 or more: a stop, or `None` when it may be retried (rows 4, 5, 7).
fn judge_status(rules: &Rules, a: &Attempt, status: u16) -> Option<Verdict> {
    let listed = rules.retry_on.contains(status);
    match key_answer(status, rules.has_key) {
        Some(answer) if !answer.retried(listed) => {
            let unless = match answer {
                KeyAnswer::Rejected => " (--retry-on does not name it)",
                _ => "",
            };
            return Some(Verdict::stop(
                Outcome::NonRetryableResponse,
                format!("not retried: {status}: {}{unless}", answer.meaning()),
            ));
        }
        // A 409: the key makes the replay safe, and --retry-on is not asked: only the
        // deadline (row 7) stops it here.
        Some(KeyAnswer::InFlight) => return late(a),
        // A 400 --retry-on names goes on as a listed status does (row 5 allows it: a key).
        Some(_) | None => {}
    }
    if !rules.retry_on.contains(status) {
        return Some(Verdict::stop(
            Outcome::NonRetryableResponse,
            format!(
                "not retried: {status} is not in --retry-on ({})",
                rules.retry_on.to_spec()
            ),
        ));
    }
    let unprocessed = !a.committed && status_means_unprocessed(status);
    if !replay_allowed(a.method, rules.has_key, rules.retry_unsafe, unprocessed) {
        let why = if a.committed {
            format!(
                "an earlier hop answered {} other than 307/308",
                a.first_method
            )
        } else {
            format!("a {status} does not prove it was not processed")
        };
        return Some(Verdict::stop(
            Outcome::NonRetryableResponse,
            format!(
                "not retried: {} is not idempotent and {why}; {}",
                a.method, KEY_HINT
            ),
        ));
    }
    late(a)
}

/// Row 7 for an answer that may be retried: the deadline passed during the attempt.
fn late(a: &Attempt) -> Option<Verdict> {
    a.deadline_passed
        .then(|| Verdict::stop(Outcome::Deadline, DEADLINE_DURING))
}

/// What the user can do about a request that is not safe to replay.
const KEY_HINT: &str = "send an --idempotency-key (or --retry-unsafe) to allow replay";

/// No usable response: a stop, or `None` when it may be retried (rows 6 to 10).
fn judge_failure(rules: &Rules, a: &Attempt, kind: FailureKind) -> Option<Verdict> {
    if kind == FailureKind::Local {
        return Some(Verdict::stop(Outcome::Local, "stopping: local failure"));
    }
    if a.deadline_passed {
        return Some(Verdict::stop(Outcome::Deadline, DEADLINE_DURING));
    }
    if kind == FailureKind::Streamed {
        return Some(Verdict::stop(
            Outcome::NonRetryableTransport,
            "not retried: part of the body already reached stdout (--no-buffer)",
        ));
    }
    if !kind.is_retryable() {
        return Some(Verdict::stop(
            Outcome::NonRetryableTransport,
            format!(
                "not retried: {} (a second try would fail the same way)",
                kind.name()
            ),
        ));
    }
    let unprocessed = !a.committed && kind.proves_unprocessed();
    if !replay_allowed(a.method, rules.has_key, rules.retry_unsafe, unprocessed) {
        return Some(Verdict::stop(
            Outcome::NonRetryableTransport,
            format!(
                "not retried: {} is not idempotent and the request may have been processed ({}); {}",
                a.method,
                kind.name(),
                KEY_HINT
            ),
        ));
    }
    None
}

/// Rows 11 to 15, once [`judge`] allows a retry: plan the wait, fitted to the deadline (a
/// backoff that does not fit becomes the last attempt's drawn start), or stop when no
/// attempt is left, the server's Retry-After cannot fit, or no time is left.
pub fn schedule(rules: &Rules, a: &Attempt, rng: &mut dyn Rng) -> Verdict {
    let verdict = plan(rules, a, rng);
    if matches!(a.happened, Happened::NotReady(_)) {
        not_ready(verdict)
    } else {
        verdict
    }
}

fn plan(rules: &Rules, a: &Attempt, rng: &mut dyn Rng) -> Verdict {
    if a.number >= rules.attempts {
        return Verdict::stop(Outcome::AttemptsExhausted, "giving up: no attempts left");
    }
    let drawn = rules.backoff.draw(a.number - 1, a.previous, rng);
    let planned = plan_wait(&rules.backoff, drawn, a.hint, rules.retry_after_spread, rng);
    let need = a.longest.max(MIN_ATTEMPT);
    match fit_leaving(planned.draw, a.left, need) {
        Fit::Sleep(wait) => Verdict::Retry(Retry {
            wait,
            planned,
            drawn: drawn.total(),
        }),
        Fit::Stop if planned.reason != WaitReason::Backoff => Verdict::stop(
            Outcome::Deadline,
            hint_past_deadline(planned.draw.floor, a, a.left.unwrap_or_default()),
        ),
        Fit::Stop => last_before_deadline(a, planned, (drawn, rules.backoff.base), need, rng),
    }
}

/// Row 12's words: the server's Retry-After (`wait`, as clamped, and said so when
/// `--max-retry-after` shortened it) would end past the deadline, `left` away.
fn hint_past_deadline(wait: Duration, a: &Attempt, left: Duration) -> String {
    let clamped = match a.hint {
        Some(h) if h.clamped => ", clamped by --max-retry-after",
        _ => "",
    };
    format!(
        "stopping: the server's Retry-After ({}{clamped}) would end past the deadline ({} left)",
        fmt_duration(wait),
        fmt_duration(left)
    )
}

/// Rows 13 and 14: the backoff (`planned`) would end past the deadline. Wait instead a
/// time drawn in the second half of what is left once `need` is kept for the attempt (and
/// never less than a Retry-After the server gave), or stop with 5 when that leaves nothing.
fn last_before_deadline(
    a: &Attempt,
    planned: PlannedWait,
    (drawn, base): (Draw, Duration),
    need: Duration,
    rng: &mut dyn Rng,
) -> Verdict {
    let left = a.left.unwrap_or_default();
    let room = left.saturating_sub(need);
    let hint = a.hint.map_or(Duration::ZERO, |h| h.wait);
    if hint > room && !room.is_zero() {
        return Verdict::stop(Outcome::Deadline, hint_past_deadline(hint, a, left));
    }
    let least = (room / 2).max(hint);
    if room.is_zero() {
        return Verdict::stop(
            Outcome::Deadline,
            format!(
                "stopping: {} left before the deadline; {}: another would end past the deadline",
                fmt_duration(left),
                attempt_takes(a.longest),
            ),
        );
    }
    if a.fitted && room < base {
        return Verdict::stop(
            Outcome::Deadline,
            format!(
                "stopping: {} left before the deadline; {}, and the wait before another is at least --base {}: it would end past the deadline",
                fmt_duration(left),
                attempt_takes(a.longest),
                fmt_duration(base),
            ),
        );
    }
    let wait = least + uniform(rng, room - least);
    Verdict::Retry(Retry {
        wait,
        planned: PlannedWait {
            draw: Draw {
                floor: wait,
                spread: Duration::ZERO,
            },
            backoff: planned.backoff,
            reason: WaitReason::Deadline,
        },
        drawn: drawn.total(),
    })
}

/// What the time an attempt needs comes from, as a stop says it: the longest attempt so far
/// (`longest`), or [`MIN_ATTEMPT`] when every attempt was shorter.
fn attempt_takes(longest: Duration) -> String {
    if longest >= MIN_ATTEMPT {
        format!("the longest attempt so far took {}", fmt_duration(longest))
    } else {
        format!("an attempt is given at least {}", fmt_duration(MIN_ATTEMPT))
    }
}

/// The wait for a Retry-After that another run shared through `--state` (`held`: how long
/// it still holds): at least that, plus this run's own `spread` drawn from `rng`, fitted to
/// the deadline as a Retry-After of the run's own is. `None`: it cannot end before the
/// deadline (see `hold_fits`), so the run stops rather than wait into a sure failure.
pub fn wait_for_hold(
    held: Duration,
    spread: Duration,
    left: Option<Duration>,
    rng: &mut dyn Rng,
) -> Option<Duration> {
    if !hold_fits(held, left) {
        return None;
    }
    let draw = crate::backoff::Draw {
        floor: held,
        spread: crate::backoff::uniform(rng, spread),
    };
    match fit_to_deadline(draw, left) {
        Fit::Sleep(wait) => Some(wait),
        Fit::Stop => None,
    }
}

/// Whether a shared Retry-After that holds for `held` ends early enough before the
/// deadline for an attempt to follow it (the rule of `fit_to_deadline`).
pub fn hold_fits(held: Duration, left: Option<Duration>) -> bool {
    left.is_none_or(|l| held.saturating_add(crate::backoff::MIN_ATTEMPT) < l)
}

/// Row 24, the run's outcome once it is over: whatever the loop ended with, a deadline that passed
/// meanwhile (while an error body, `-D` or `-w` was written) makes a failure a deadline
/// failure; a success that was put in place stands, and so does a run that ended not ready
/// (its last answer did arrive).
pub fn at_the_end(outcome: Outcome, deadline_passed: bool) -> Outcome {
    if deadline_passed && !matches!(outcome, Outcome::Success | Outcome::NotReady) {
        Outcome::Deadline
    } else {
        outcome
    }
}

/// Row 25, after row 24: output the user asked for at the run's end (`-D`, `--etag-save`,
/// `-w`) that cannot be written makes the run a local failure (exit 1), whatever the
/// attempts ended with, as a body that cannot be written does (row 6); a file written
/// makes no change.
pub fn unwritten(outcome: Outcome, written: bool) -> Outcome {
    if written { outcome } else { Outcome::Local }
}

/// What ended an attempt that `happened` so, in curl's words, for `--exit-codes curl`
/// (`exit::curl_code`): an answer (an error from 400), or the failure's kind as curl names
/// it. A failure once the deadline had passed is the deadline's (it cut the attempt, as
/// curl's `-m` does: 28).
pub fn cause(happened: &Happened, deadline_passed: bool) -> Cause {
    match happened {
        Happened::Failure(_) if deadline_passed => Cause::Deadline,
        Happened::Failure(kind) => failure_cause(*kind),
        Happened::Status(status) => Cause::Answer {
            error: *status >= 400,
        },
        Happened::Success | Happened::Declined(_) | Happened::NotReady(_) | Happened::Signal(_) => {
            Cause::Answer { error: false }
        }
    }
}

/// A failure kind as curl names it (`man curl`, EXIT CODES): timeouts 28, refused 7, a
/// name not resolved 6, a rejected certificate 60, another TLS failure 35, a reset, a body
/// cut short (streamed in part or not) or a proxy's tunnel failing 56, a write 23, too many redirects 47, `--max-filesize` 63, a reply that is
/// not HTTP 8, a resume the server refused 33.
fn failure_cause(kind: FailureKind) -> Cause {
    match kind {
        FailureKind::Refused => Cause::Refused,
        FailureKind::Dns => Cause::NotResolved,
        FailureKind::ConnectTimeout | FailureKind::Timeout | FailureKind::Stall => Cause::Timeout,
        FailureKind::TlsCertificate => Cause::TlsVerification,
        FailureKind::TlsHandshake | FailureKind::TlsRejected => Cause::Tls,
        FailureKind::Reset
        | FailureKind::ProxyFailed
        | FailureKind::Truncated
        | FailureKind::Streamed => Cause::Reset,
        FailureKind::Protocol => Cause::Protocol,
        FailureKind::TooManyRedirects => Cause::TooManyRedirects,
        FailureKind::TooLarge => Cause::TooLarge,
        FailureKind::NotResumable => Cause::NotResumable,
        FailureKind::Local => Cause::Write,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_hold_is_waited_for_or_stops_the_run() {
        let mut rng = StdRng::seed_from_u64(1);
        let s = Duration::from_secs;
        assert_eq!(
            wait_for_hold(s(3), Duration::ZERO, None, &mut rng),
            Some(s(3))
        );
        let w = wait_for_hold(s(3), s(1), Some(s(60)), &mut rng).expect("fits");
        assert!(w >= s(3) && w <= s(4), "{w:?}");
        assert_eq!(wait_for_hold(s(3), s(1), Some(s(3)), &mut rng), None);
        assert!(!hold_fits(s(3), Some(s(3))));
        assert!(hold_fits(s(3), Some(s(4))));
    }
    use crate::Jitter;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    /// No shared state: every retry may go.
    fn open(_: Ask) -> Clear {
        Clear::Go
    }

    fn retry_on() -> StatusSet {
        StatusSet::from_ranges(vec![(408, 408), (429, 429), (500, 504)])
    }

    fn rules(retry_on: &StatusSet) -> Rules<'_> {
        Rules {
            attempts: 3,
            retry_on,
            backoff: Backoff {
                base: Duration::from_millis(100),
                cap: Duration::from_secs(1),
                jitter: Jitter::None,
            },
            retry_after_spread: Duration::ZERO,
            has_key: false,
            retry_unsafe: false,
        }
    }

    fn attempt(happened: Happened) -> Attempt<'static> {
        Attempt {
            happened,
            number: 1,
            method: "GET",
            first_method: "GET",
            committed: false,
            deadline_passed: false,
            left: None,
            hint: None,
            previous: Duration::from_millis(100),
            longest: Duration::from_millis(1),
            fitted: false,
            after_not_ready: false,
        }
    }

    /// What a row of the precedence puts to the decision.
    enum Case {
        /// An attempt, and the shared state's answer should a retry be asked of it.
        Attempt(Attempt<'static>, Clear),
        /// The run ended between attempts, as this verdict.
        Between(Verdict),
        /// The attempts ended with this outcome, the last answer not ready or not.
        AfterLoop(Outcome, bool),
        /// The run ended with this outcome, the deadline passed or not.
        End(Outcome, bool),
        /// The run ended with this outcome, its last files written or not.
        Unwritten(Outcome, bool),
    }

    /// One row of the precedence: a case, and what it must give.
    struct Row {
        row: u32,
        what: &'static str,
        case: Case,
        has_key: bool,
        outcome: Option<Outcome>,
        reason: &'static str,
    }

    fn row(row: u32, what: &'static str, attempt: Attempt<'static>) -> Row {
        case(row, what, Case::Attempt(attempt, Clear::Go))
    }

    fn case(row: u32, what: &'static str, case: Case) -> Row {
        Row {
            row,
            what,
            case,
            has_key: false,
            outcome: None,
            reason: "",
        }
    }

    impl Row {
        fn gives(mut self, outcome: Option<Outcome>, reason: &'static str) -> Row {
            self.outcome = outcome;
            self.reason = reason;
            self
        }

        /// The shared state answers a retry with `answer`.
        fn gated(mut self, answer: Clear) -> Row {
            if let Case::Attempt(_, a) = &mut self.case {
                *a = answer;
            }
            self
        }

        /// The outcome and the reason the row's case gives.
        fn verdict(&self, rules: &Rules) -> (Option<Outcome>, String) {
            match &self.case {
                Case::Attempt(a, answer) => {
                    let gate = &mut |_: Ask| answer.clone();
                    let v = decide(rules, a, gate, &mut StdRng::seed_from_u64(1));
                    let reason = match &v {
                        Verdict::Stop { reason, .. } => reason.clone(),
                        _ => String::new(),
                    };
                    (v.outcome(), reason)
                }
                Case::Between(v) => {
                    let reason = match v {
                        Verdict::Stop { reason, .. } => reason.clone(),
                        _ => String::new(),
                    };
                    (v.outcome(), reason)
                }
                Case::AfterLoop(o, not_ready) => {
                    (Some(after_the_loop(*o, *not_ready)), String::new())
                }
                Case::End(o, late) => (Some(at_the_end(*o, *late)), String::new()),
                Case::Unwritten(o, written) => (Some(unwritten(*o, *written)), String::new()),
            }
        }
    }

    /// Rows 16 to 25: the shared state's answers, and the ends outside an attempt.
    fn rows_beyond_the_attempt() -> Vec<Row> {
        use FailureKind as K;
        use Happened as H;
        let reset = || attempt(H::Failure(K::Reset));
        let s = Duration::from_secs;
        let spent = "not retried: the retry budget is spent";
        vec![
            row(16, "the budget has no room for the retry", reset())
                .gated(Clear::Stop(Stop::Spent("the retry budget is spent".into())))
                .gives(Some(Outcome::Refused), spent),
            row(17, "a shared Retry-After holds past the deadline", reset())
                .gated(Clear::Stop(Stop::TooLate(
                    "stopping: the shared Retry-After".into(),
                )))
                .gives(Some(Outcome::Deadline), "stopping: the shared Retry-After"),
            row(
                18,
                "a shared Retry-After longer than the backoff is waited for",
                reset(),
            )
            .gated(Clear::Wait {
                wait: s(5),
                why: Why::Shared {
                    left: None,
                    line: None,
                },
            })
            .gives(None, ""),
            row(
                18,
                "a shared Retry-After shorter than the backoff changes nothing",
                reset(),
            )
            .gated(Clear::Wait {
                wait: Duration::from_millis(1),
                why: Why::Shared {
                    left: Some(s(1)),
                    line: None,
                },
            })
            .gives(None, ""),
            row(
                18,
                "a shared Retry-After that cannot end before the deadline",
                reset(),
            )
            .gated(Clear::Wait {
                wait: s(5),
                why: Why::Shared {
                    left: Some(s(5)),
                    line: None,
                },
            })
            .gives(Some(Outcome::Deadline), HOLD_PAST_DEADLINE),
            case(
                19,
                "the deadline passed between attempts",
                Case::Between(deadline_between(false)),
            )
            .gives(
                Some(Outcome::Deadline),
                "stopping: the deadline passed before the next attempt",
            ),
            case(
                19,
                "the deadline passed between attempts after an answer not ready",
                Case::Between(deadline_between(true)),
            )
            .gives(
                Some(Outcome::NotReady),
                "not ready: the attempts or the deadline",
            ),
            case(
                20,
                "a signal during a wait",
                Case::Between(signalled(Outcome::Interrupted)),
            )
            .gives(Some(Outcome::Interrupted), "stopping: interrupted"),
            case(
                21,
                "the budget was spent meanwhile",
                Case::Between(stopped(Stop::Spent("the retry budget is spent".into()))),
            )
            .gives(Some(Outcome::Refused), spent),
            case(
                22,
                "a shared hold past the deadline",
                Case::Between(stopped(Stop::TooLate(HOLD_PAST_DEADLINE.into()))),
            )
            .gives(Some(Outcome::Deadline), HOLD_PAST_DEADLINE),
            case(
                22,
                "the origin's hold past the deadline",
                Case::Between(stopped(Stop::TooLate("stopping: the hold on o".into()))),
            )
            .gives(Some(Outcome::Deadline), "stopping: the hold on o"),
            case(
                23,
                "5 after an answer not ready",
                Case::AfterLoop(Outcome::Deadline, true),
            )
            .gives(Some(Outcome::NotReady), ""),
            case(
                23,
                "7 after an answer not ready stands",
                Case::AfterLoop(Outcome::Refused, true),
            )
            .gives(Some(Outcome::Refused), ""),
            case(
                23,
                "5 after an error stands",
                Case::AfterLoop(Outcome::Deadline, false),
            )
            .gives(Some(Outcome::Deadline), ""),
            case(
                24,
                "a failure whose end passed the deadline",
                Case::End(Outcome::NonRetryableResponse, true),
            )
            .gives(Some(Outcome::Deadline), ""),
            case(
                24,
                "a success stands at the end",
                Case::End(Outcome::Success, true),
            )
            .gives(Some(Outcome::Success), ""),
            case(
                24,
                "not ready stands at the end",
                Case::End(Outcome::NotReady, true),
            )
            .gives(Some(Outcome::NotReady), ""),
            case(
                25,
                "a -D, --etag-save or -w that cannot be written",
                Case::Unwritten(Outcome::Deadline, false),
            )
            .gives(Some(Outcome::Local), ""),
            case(
                25,
                "written, the outcome stands",
                Case::Unwritten(Outcome::AttemptsExhausted, true),
            )
            .gives(Some(Outcome::AttemptsExhausted), ""),
        ]
    }

    fn post(mut a: Attempt<'static>) -> Attempt<'static> {
        a.method = "POST";
        a.first_method = "POST";
        a
    }

    fn late(mut a: Attempt<'static>) -> Attempt<'static> {
        a.deadline_passed = true;
        a.left = Some(Duration::ZERO);
        a
    }

    fn last(mut a: Attempt<'static>) -> Attempt<'static> {
        a.number = 3;
        a
    }

    fn rows() -> Vec<Row> {
        use FailureKind as K;
        use Happened as H;
        let signal = H::Signal(Outcome::Terminated);
        vec![
            row(1, "a signal beats a late, last, unsafe failure", late(last(post(attempt(signal.clone())))))
                .gives(Some(Outcome::Terminated), "stopping: interrupted"),
            row(2, "a success stands, even late", late(attempt(H::Success)))
                .gives(Some(Outcome::Success), ""),
            row(3, "a declined redirect", late(attempt(H::Declined("not followed".into()))))
                .gives(Some(Outcome::NonRetryableResponse), "not followed"),
            row(4, "a status not in --retry-on, even late", late(attempt(H::Status(404))))
                .gives(Some(Outcome::NonRetryableResponse), "not retried: 404 is not in --retry-on"),
            row(5, "a POST answered 500", late(post(attempt(H::Status(500)))))
                .gives(Some(Outcome::NonRetryableResponse), "not retried: POST is not idempotent and a 500"),
            row(5, "a POST after a committed hop, even on 503", {
                let mut a = post(attempt(H::Status(503)));
                a.committed = true;
                a.first_method = "PATCH";
                a
            })
            .gives(Some(Outcome::NonRetryableResponse), "not retried: POST is not idempotent and an earlier hop answered PATCH"),
            row(7, "a retryable status, late", late(attempt(H::Status(503))))
                .gives(Some(Outcome::Deadline), DEADLINE_DURING),
            row(6, "a local failure, even late", late(attempt(H::Failure(K::Local))))
                .gives(Some(Outcome::Local), "stopping: local failure"),
            row(7, "a failure at the deadline is the deadline's", late(post(attempt(H::Failure(K::TlsCertificate)))))
                .gives(Some(Outcome::Deadline), DEADLINE_DURING),
            row(8, "a body cut after streaming", attempt(H::Failure(K::Streamed)))
                .gives(Some(Outcome::NonRetryableTransport), "not retried: part of the body"),
            row(9, "a certificate rejected", last(attempt(H::Failure(K::TlsCertificate))))
                .gives(Some(Outcome::NonRetryableTransport), "not retried: TLS certificate rejected"),
            row(9, "-C -: the server cannot resume the file", attempt(H::Failure(K::NotResumable)))
                .gives(Some(Outcome::NonRetryableTransport), "not retried: cannot resume"),
            row(10, "a POST reset", last(post(attempt(H::Failure(K::Reset)))))
                .gives(Some(Outcome::NonRetryableTransport), "not retried: POST is not idempotent and the request may have been processed (connection reset)"),
            row(11, "a POST refused is replayed, but no attempts are left", last(post(attempt(H::Failure(K::Refused)))))
                .gives(Some(Outcome::AttemptsExhausted), "giving up: no attempts left"),
            row(11, "a POST answered 429, on the last attempt", last(post(attempt(H::Status(429)))))
                .gives(Some(Outcome::AttemptsExhausted), "giving up: no attempts left"),
            row(12, "the server's Retry-After does not fit", {
                let mut a = attempt(H::Status(503));
                a.left = Some(Duration::from_millis(900));
                a.hint = Some(Hint { wait: Duration::from_secs(1), clamped: false });
                a
            })
            .gives(Some(Outcome::Deadline), "stopping: the server's Retry-After (1s) would end past the deadline (900ms left)"),
            row(12, "a clamped Retry-After does not fit: the words say it was clamped", {
                let mut a = attempt(H::Status(503));
                a.left = Some(Duration::from_millis(900));
                a.hint = Some(Hint { wait: Duration::from_secs(1), clamped: true });
                a
            })
            .gives(Some(Outcome::Deadline), "stopping: the server's Retry-After (1s, clamped by --max-retry-after) would end past the deadline (900ms left)"),
            row(13, "the backoff does not fit, and no attempt fits either", {
                let mut a = attempt(H::Failure(K::Reset));
                a.left = Some(Duration::from_millis(9));
                a
            })
            .gives(Some(Outcome::Deadline), "stopping: 9ms left before the deadline; an attempt is given at least 10ms: another would end past the deadline"),
            row(13, "the longest attempt so far does not fit", {
                let mut a = attempt(H::Failure(K::Timeout));
                a.left = Some(Duration::from_millis(50));
                a.longest = Duration::from_millis(60);
                a
            })
            .gives(Some(Outcome::Deadline), "stopping: 50ms left before the deadline; the longest attempt so far took 60ms: another would end past the deadline"),
            row(7, "the deadline cut the attempt after a not-ready answer", {
                let mut a = attempt(H::Failure(K::Timeout));
                a.deadline_passed = true;
                a.after_not_ready = true;
                a
            })
            .gives(Some(Outcome::NotReady), "stopping: the deadline passed during this attempt (the answer before it was not ready)"),
            row(13, "the backoff does not fit after the last attempt fitted before the deadline", {
                let mut a = attempt(H::Failure(K::Reset));
                a.left = Some(Duration::from_millis(50));
                a.fitted = true;
                a
            })
            .gives(Some(Outcome::Deadline), "stopping: 50ms left before the deadline; an attempt is given at least 10ms, and the wait before another is at least --base 100ms: it would end past the deadline"),
            row(14, "the backoff does not fit after a fitted attempt, with --base to spare", {
                let mut a = attempt(H::Failure(K::Reset));
                a.number = 2;
                a.left = Some(Duration::from_millis(150));
                a.fitted = true;
                a
            })
            .gives(None, ""),
            row(12, "a Retry-After shorter than the backoff, but not fitting the deadline", {
                let mut a = attempt(H::Status(503));
                a.left = Some(Duration::from_millis(60));
                a.hint = Some(Hint { wait: Duration::from_millis(55), clamped: false });
                a
            })
            .gives(Some(Outcome::Deadline), "stopping: the server's Retry-After (55ms) would end past the deadline (60ms left)"),
            row(14, "the backoff does not fit: the last attempt before the deadline", {
                let mut a = attempt(H::Failure(K::Reset));
                a.left = Some(Duration::from_millis(50));
                a
            })
            .gives(None, ""),
            row(14, "a 503 whose Retry-After is shorter than the backoff, near the deadline", {
                let mut a = attempt(H::Status(503));
                a.left = Some(Duration::from_millis(80));
                a.hint = Some(Hint { wait: Duration::from_millis(50), clamped: false });
                a
            })
            .gives(None, ""),
            row(15, "a GET reset", attempt(H::Failure(K::Reset))).gives(None, ""),
            row(15, "a POST with a key, reset", post(attempt(H::Failure(K::Timeout)))).keyed().gives(None, ""),
            row(15, "a POST answered 503", post(attempt(H::Status(503)))).gives(None, ""),
        ]
    }

    /// The Idempotency-Key's answers (see `idempotency`): with a key, 409 goes through rows
    /// 7 and 11 to 16 as a retryable status, 422 stops at row 4, and so does 400 unless
    /// `--retry-on` names it; without one, row 4 reads `--retry-on` as it does for any
    /// status.
    fn rows_of_the_key() -> Vec<Row> {
        use Happened as H;
        let with_hint = |wait: u64, left: u64| {
            let mut a = post(attempt(H::Status(409)));
            a.left = Some(Duration::from_millis(left));
            a.hint = Some(Hint {
                wait: Duration::from_millis(wait),
                clamped: false,
            });
            a
        };
        let nrr = Some(Outcome::NonRetryableResponse);
        vec![
            row(4, "a 422 to a POST with a key", post(attempt(H::Status(422)))).keyed()
                .gives(nrr, "not retried: 422: the Idempotency-Key was already used with a different request"),
            row(4, "a 400 to a GET with a key", attempt(H::Status(400))).keyed()
                .gives(nrr, "not retried: 400: the server may require an Idempotency-Key in another form, or the request is malformed"),
            row(4, "a 422 with a key, even late", late(post(attempt(H::Status(422))))).keyed()
                .gives(nrr, "not retried: 422: the Idempotency-Key"),
            row(4, "a 409 to a POST without a key", post(attempt(H::Status(409))))
                .gives(nrr, "not retried: 409 is not in --retry-on"),
            row(4, "a 422 to a GET without a key", attempt(H::Status(422)))
                .gives(nrr, "not retried: 422 is not in --retry-on"),
            row(4, "a 400 to a POST without a key", post(attempt(H::Status(400))))
                .gives(nrr, "not retried: 400 is not in --retry-on"),
            row(7, "a 409 with a key, late", late(post(attempt(H::Status(409))))).keyed()
                .gives(Some(Outcome::Deadline), DEADLINE_DURING),
            row(11, "a 409 with a key on the last attempt", last(post(attempt(H::Status(409))))).keyed()
                .gives(Some(Outcome::AttemptsExhausted), "giving up: no attempts left"),
            row(12, "a 409 with a key, its Retry-After past the deadline", with_hint(1000, 900)).keyed()
                .gives(Some(Outcome::Deadline), "stopping: the server's Retry-After (1s) would end past the deadline (900ms left)"),
            row(15, "a 409 to a POST with a key, after its Retry-After", with_hint(40, 60_000)).keyed()
                .gives(None, ""),
            row(15, "a 409 to a POST with a key, committed by an earlier hop", {
                let mut a = post(attempt(H::Status(409)));
                a.committed = true;
                a
            }).keyed()
                .gives(None, ""),
            row(16, "a 409 with a key, the budget spent", post(attempt(H::Status(409)))).keyed()
                .gated(Clear::Stop(Stop::Spent("the retry budget is spent".into())))
                .gives(Some(Outcome::Refused), "not retried: the retry budget is spent"),
        ]
    }

    impl Row {
        fn keyed(mut self) -> Row {
            self.has_key = true;
            self
        }
    }

    #[test]
    fn the_precedence_table() {
        let set = retry_on();
        let all = rows()
            .into_iter()
            .chain(rows_beyond_the_attempt())
            .chain(rows_of_the_key());
        for r in all {
            let mut rules = rules(&set);
            rules.has_key = r.has_key;
            let (outcome, reason) = r.verdict(&rules);
            assert_eq!(outcome, r.outcome, "row {}: {}: {reason}", r.row, r.what);
            assert!(
                reason.starts_with(r.reason),
                "row {}: {}: {reason}",
                r.row,
                r.what
            );
        }
    }

    #[test]
    fn every_row_is_listed() {
        let listed: std::collections::BTreeSet<u32> = rows()
            .iter()
            .chain(&rows_beyond_the_attempt())
            .map(|r| r.row)
            .collect();
        assert_eq!(listed, (1..=25).collect());
    }

    /// With a key, `--retry-on` decides nothing about a 409 or a 422: a 409 is retried
    /// when it does not list it, a 422 ends the run when it lists it. A retry after a 409
    /// is charged to the budget, as any retry is.
    #[test]
    fn with_a_key_retry_on_does_not_decide_the_conflict_nor_the_reuse() {
        let rng = &mut StdRng::seed_from_u64(1);
        for spec in [vec![(500, 504)], vec![(400, 599)]] {
            let set = StatusSet::from_ranges(spec);
            let mut r = rules(&set);
            r.has_key = true;
            let mut asked = Vec::new();
            let mut gate = |ask: Ask| {
                asked.push(ask.charge);
                Clear::Go
            };
            let v = decide(&r, &post(attempt(Happened::Status(409))), &mut gate, rng);
            assert!(matches!(v, Verdict::Retry(_)), "{v:?}");
            assert_eq!(asked, [true]);
            let v = decide(&r, &attempt(Happened::Status(422)), &mut open, rng);
            assert_eq!(v.outcome(), Some(Outcome::NonRetryableResponse), "{v:?}");
        }
    }

    /// The user's list wins where the replay is safe: over methods x key or not x
    /// `--retry-on` naming 400 (its code, its class, a range) or not, a 400 is retried
    /// exactly when the list names it and either a key makes the replay safe or the method
    /// is idempotent; a 422 with a key never is, a 409 with a key always is.
    #[test]
    fn a_400_the_list_names_is_retried_when_a_key_makes_the_replay_safe() {
        let lists = [
            (vec![(500, 504)], false),
            (vec![(400, 400)], true),
            (vec![(400, 499)], true),
            (vec![(300, 599)], true),
        ];
        for (spec, listed) in lists {
            let set = StatusSet::from_ranges(spec);
            for has_key in [false, true] {
                let mut r = rules(&set);
                r.has_key = has_key;
                for method in ["POST", "PATCH", "PUT", "GET", "DELETE"] {
                    let mut a = attempt(Happened::Status(400));
                    (a.method, a.first_method) = (method, method);
                    let rng = &mut StdRng::seed_from_u64(3);
                    let v = decide(&r, &a, &mut open, rng);
                    let safe = has_key || crate::replay::is_idempotent(method);
                    let case = format!("{method} key {has_key} listed {listed}: {v:?}");
                    assert_eq!(matches!(v, Verdict::Retry(_)), listed && safe, "{case}");
                    if has_key && !listed {
                        let want = "not retried: 400: the server may require an Idempotency-Key in another form, or the request is malformed (--retry-on does not name it)";
                        assert_eq!(v, Verdict::stop(Outcome::NonRetryableResponse, want));
                    }
                    if has_key {
                        a.happened = Happened::Status(422);
                        let v = decide(&r, &a, &mut open, rng);
                        assert_eq!(v.outcome(), Some(Outcome::NonRetryableResponse), "{case}");
                        a.happened = Happened::Status(409);
                        let v = decide(&r, &a, &mut open, rng);
                        assert!(matches!(v, Verdict::Retry(_)), "{case}: {v:?}");
                    }
                }
            }
        }
    }

    /// Without a key, 400, 409 and 422 are judged as any other status is (418 stands for
    /// them): the same verdict, for every method, --retry-on listing them or not, every
    /// attempt number, deadline and flag that the table varies.
    #[test]
    fn without_a_key_the_keys_statuses_are_statuses_like_any_other() {
        let variants = |status: u16| -> Vec<Attempt<'static>> {
            let base = attempt(Happened::Status(status));
            let mut committed = post(base.clone());
            committed.committed = true;
            vec![
                base.clone(),
                post(base.clone()),
                last(base.clone()),
                late(post(base.clone())),
                committed,
            ]
        };
        for spec in [
            vec![(500, 504)],
            vec![(400, 599)],
            vec![(400, 400), (409, 409), (418, 418), (422, 422)],
        ] {
            let set = StatusSet::from_ranges(spec);
            for unsafe_ in [false, true] {
                let mut r = rules(&set);
                r.retry_unsafe = unsafe_;
                for status in [400, 409, 422] {
                    for (a, other) in variants(status).into_iter().zip(variants(418)) {
                        let rng = &mut StdRng::seed_from_u64(7);
                        let v = decide(&r, &a, &mut open, rng);
                        let rng = &mut StdRng::seed_from_u64(7);
                        let w = decide(&r, &other, &mut open, rng);
                        let w = match w {
                            Verdict::Stop { outcome, reason } => {
                                Verdict::stop(outcome, reason.replace("418", &status.to_string()))
                            }
                            w => w,
                        };
                        assert_eq!(v, w, "{status} {a:?}");
                    }
                }
            }
        }
    }

    /// The shared state is asked only about a retry the decision would make, and a poll of
    /// an answer that was not ready is not charged to the budget.
    #[test]
    fn the_state_hears_only_the_retries_the_decision_would_make() {
        let set = retry_on();
        let r = rules(&set);
        let mut asked = Vec::new();
        let mut gate = |ask: Ask| {
            asked.push(ask);
            Clear::Go
        };
        let rng = &mut StdRng::seed_from_u64(1);
        decide(&r, &attempt(Happened::Status(404)), &mut gate, rng);
        decide(&r, &last(attempt(Happened::Status(503))), &mut gate, rng);
        decide(
            &r,
            &attempt(Happened::NotReady("not yet".into())),
            &mut gate,
            rng,
        );
        let mut a = attempt(Happened::Status(503));
        a.hint = Some(Hint {
            wait: Duration::from_millis(40),
            clamped: false,
        });
        decide(&r, &a, &mut gate, rng);
        let expected = [
            Ask {
                status: None,
                hint: None,
                left: None,
                charge: false,
            },
            Ask {
                status: Some(503),
                hint: Some(Duration::from_millis(40)),
                left: None,
                charge: true,
            },
        ];
        assert_eq!(asked, expected);
    }

    /// A retry after a 429 is not charged to the budget, with or without a Retry-After;
    /// one after a 503 is.
    #[test]
    fn a_retry_after_a_429_is_not_charged() {
        let set = retry_on();
        let r = rules(&set);
        let mut asked = Vec::new();
        let mut gate = |ask: Ask| {
            asked.push((ask.status, ask.charge));
            Clear::Go
        };
        let rng = &mut StdRng::seed_from_u64(1);
        let mut hinted = attempt(Happened::Status(429));
        hinted.hint = Some(Hint {
            wait: Duration::from_millis(40),
            clamped: false,
        });
        for a in [
            attempt(Happened::Status(429)),
            hinted,
            attempt(Happened::Status(503)),
        ] {
            assert!(matches!(decide(&r, &a, &mut gate, rng), Verdict::Retry(_)));
        }
        let expected = [(Some(429), false), (Some(429), false), (Some(503), true)];
        assert_eq!(asked, expected);
        assert!(charged(&Happened::Failure(FailureKind::Reset)));
        assert!(!charged(&Happened::NotReady("no".into())));
    }

    /// A shared Retry-After that outlasts the backoff becomes the wait, with this run's
    /// spread on top, and the log says it was shared.
    #[test]
    fn a_shared_retry_after_longer_than_the_wait_is_waited_for() {
        let set = retry_on();
        let mut r = rules(&set);
        r.retry_after_spread = Duration::from_secs(1);
        let held = Duration::from_secs(5);
        let gate = &mut |_: Ask| Clear::shared_hold(held);
        let a = attempt(Happened::Failure(FailureKind::Reset));
        let Verdict::Retry(retry) = decide(&r, &a, gate, &mut StdRng::seed_from_u64(3)) else {
            panic!("a retry")
        };
        assert_eq!(retry.planned.reason, WaitReason::Shared);
        assert!(retry.wait >= held && retry.wait <= held + r.retry_after_spread);
        assert_eq!(retry.drawn, Duration::from_millis(100));
    }

    #[test]
    fn a_retry_waits_the_larger_of_backoff_and_hint() {
        let set = retry_on();
        let mut a = attempt(Happened::Status(503));
        a.hint = Some(Hint {
            wait: Duration::from_secs(2),
            clamped: false,
        });
        let v = decide(&rules(&set), &a, &mut open, &mut StdRng::seed_from_u64(1));
        let Verdict::Retry(r) = v else {
            panic!("{v:?}")
        };
        assert_eq!(r.wait, Duration::from_secs(2));
        assert_eq!(r.drawn, Duration::from_millis(100));
    }

    /// Rows 13 and 14 over a product of times left, longest attempts, hints, jitters and
    /// seeds: a backoff that does not fit becomes a wait that leaves the attempt at least
    /// max(10 ms, the longest attempt), drawn in the second half of the room, never shorter
    /// than a hint, once a run (never after an attempt already fitted); or a stop with 5
    /// when no room is left. A Retry-After that does not fit
    /// always stops.
    #[test]
    fn the_last_attempt_fits_the_deadline() {
        let set = retry_on();
        let ms = Duration::from_millis;
        let mut checked = 0;
        for jitter in [
            Jitter::None,
            Jitter::Full,
            Jitter::Equal,
            Jitter::Decorrelated,
        ] {
            let mut r = rules(&set);
            r.attempts = UNLIMITED;
            r.backoff = Backoff {
                base: ms(2000),
                cap: ms(8000),
                jitter,
            };
            for left in [0, 5, 10, 11, 25, 200, 1999, 7000] {
                for longest in [0, 1, 40, 300] {
                    for hint in [None, Some(30), Some(120)] {
                        for seed in 0..20 {
                            let mut a = attempt(Happened::Status(503));
                            a.number = 4;
                            a.left = Some(ms(left));
                            a.longest = ms(longest);
                            a.fitted = seed % 2 == 1;
                            a.hint = hint.map(|h| Hint {
                                wait: ms(h),
                                clamped: false,
                            });
                            let v = decide(&r, &a, &mut open, &mut StdRng::seed_from_u64(seed));
                            check_last(&a, &v);
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(checked, 4 * 8 * 4 * 3 * 20);
    }

    fn check_last(a: &Attempt, v: &Verdict) {
        let ms = Duration::from_millis;
        let left = a.left.unwrap_or_default();
        let need = a.longest.max(MIN_ATTEMPT);
        let hint = a.hint.map_or(Duration::ZERO, |h| h.wait);
        let room = left.saturating_sub(need);
        match v {
            Verdict::Retry(r) => {
                assert!(r.wait + need <= left, "{a:?}: {r:?}");
                assert!(r.wait >= hint, "{a:?}: {r:?}");
                if r.planned.reason == WaitReason::Deadline {
                    assert!(r.wait >= room / 2, "{a:?}: {r:?}");
                    // After a fitted attempt, another only with --base (2 s here) to spare.
                    assert!(!a.fitted || room >= ms(2000), "{a:?}: {r:?}");
                }
            }
            Verdict::Stop { outcome, reason } => {
                assert_eq!(*outcome, Outcome::Deadline, "{a:?}: {reason}");
                let hint_blocks = hint + MIN_ATTEMPT >= left || hint > room;
                let spent = a.fitted && room < ms(2000);
                assert!(room.is_zero() || hint_blocks || spent, "{a:?}: {reason}");
            }
            Verdict::Done => panic!("{a:?}"),
        }
    }

    /// A not-ready answer is polled like a retryable status; where that would end the run
    /// with 4 or 5, it ends with 8.
    #[test]
    fn an_answer_not_ready_is_polled_and_ends_not_ready() {
        let set = retry_on();
        let r = rules(&set);
        let not_ready = || attempt(Happened::NotReady("/status is \"yellow\"".into()));
        let rng = &mut StdRng::seed_from_u64(1);
        assert!(matches!(
            decide(&r, &not_ready(), &mut open, rng),
            Verdict::Retry(_)
        ));
        let mut last = not_ready();
        last.number = r.attempts;
        assert_eq!(
            decide(&r, &last, &mut open, rng).outcome(),
            Some(Outcome::NotReady)
        );
        let mut late = not_ready();
        late.left = Some(Duration::from_millis(5));
        assert_eq!(
            decide(&r, &late, &mut open, rng).outcome(),
            Some(Outcome::NotReady)
        );
        let mut cut = not_ready();
        cut.deadline_passed = true;
        assert_eq!(
            decide(&r, &cut, &mut open, rng).outcome(),
            Some(Outcome::NotReady)
        );
        let unlimited = Rules {
            attempts: UNLIMITED,
            ..r
        };
        let mut many = not_ready();
        many.number = 100_000;
        assert!(matches!(
            decide(&unlimited, &many, &mut open, rng),
            Verdict::Retry(_)
        ));
        assert_eq!(at_the_end(Outcome::NotReady, true), Outcome::NotReady);
    }

    #[test]
    fn the_budget_and_the_end_of_the_run() {
        assert_eq!(
            Verdict::refused("the retry budget is spent").outcome(),
            Some(Outcome::Refused)
        );
        assert_eq!(at_the_end(Outcome::Success, true), Outcome::Success);
        assert_eq!(
            at_the_end(Outcome::NonRetryableResponse, true),
            Outcome::Deadline
        );
        assert_eq!(
            at_the_end(Outcome::AttemptsExhausted, false),
            Outcome::AttemptsExhausted
        );
    }
}
