//! A run's side of `--state`: asks the circuit breaker (and the shared Retry-After) before
//! the first attempt, the retry budget before each retry (asked when it is planned, charged
//! as it is sent), and records how the run ended, each a decision on the target's record
//! made through the `Store` seam, whatever the store is. The decisions themselves are in `breaker` and `budget`, reached through
//! `record::Target`.
//!
//! Every store operation is bounded by `--state-timeout`, cut to what is left of the
//! deadline. A store that cannot be used is reported once, in one warning line written
//! under `-s` too (the user asked for the store by giving `--state`: losing it is an
//! operational fault to hear about); then `--state-on-error` says what follows: `open`
//! goes on as without state, `closed` sends nothing more (exit 7). What became of the store
//! is noted on the reporter (`report::StateUse`) for `-w '%{state}'` and the JSON summary.

use crate::exit::Outcome;
use crate::fleet::Millis;
use crate::fleet::breaker::{Admission, Breaker, RunResult};
use crate::fleet::job::{Digest, Job, Kept, Sent};
use crate::fleet::location::{Location, Opening};
use crate::fleet::op::{Op, Reply};
use crate::fleet::record::{Limits, MAX_STAMP, Target};
use crate::fleet::store::memory::SharedMemory;
use crate::fleet::store::{Clock, Store};
use crate::policy::decision::hold_fits;
use crate::policy::gate::{Clear, Outlook, Stop};
use crate::report::{Reporter, StateUse};
use crate::units::fmt_duration;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};
use url::Url;

/// What a store that cannot be used means for the run (`--state-on-error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnError {
    /// Warn once and go on as without state (the default: shared state must never stop a
    /// request by accident).
    Open,
    /// Send nothing more: exit 7.
    Closed,
}

/// `--state` and everything that goes with it, as the configuration holds it: where the
/// records are, the breaker's and the budget's limits, how long a store operation may take
/// and what a store that fails means.
#[derive(Debug, Clone, PartialEq)]
pub struct StateConfig {
    /// Where the records are.
    pub location: Location,
    /// The breaker's and the budget's settings.
    pub limits: Limits,
    /// `--state-timeout`: the bound on each store operation.
    pub timeout: Duration,
    /// `--state-on-error`.
    pub on_error: OnError,
    /// `--state-cacert`.
    pub cacert: Option<PathBuf>,
    /// The run's `--max-retry-after`: a Retry-After shared by another run is clamped to it
    /// too, so one host's generous limit cannot hold back the others for longer than they
    /// allow.
    pub max_hold: Duration,
}

impl StateConfig {
    /// Opens the store, on its own clock, within `bound`: see `Location::open`.
    fn open(&self, bound: Duration) -> Result<Box<dyn Store>, String> {
        let how = Opening {
            limits: &self.limits,
            clock: Clock::own(),
            cacert: self.cacert.as_deref(),
        };
        self.location.open(how, bound)
    }
}

/// Where a run's breaker and budget records are.
pub enum Records<'s> {
    /// `--state`: the store it names, opened for the run.
    State(&'s StateConfig),
    /// A batch's own records in process, without `--state` (held by the gate's local
    /// layer), with the run's `--max-retry-after`: they never fail, a Retry-After held
    /// there is the batch's own (met by the loop, not refused at admission), and
    /// `%{state}` stays "none".
    Own(&'s SharedMemory, Duration),
}

/// How a run uses its records: the store `--state` names (`None`: the batch's own), the
/// bound of an operation, what a store that fails means, and the clamp on a Retry-After
/// held there.
#[derive(Debug, Clone)]
struct Use {
    location: Option<Location>,
    timeout: Duration,
    on_error: OnError,
    max_hold: Duration,
}

/// The bound of an operation on the batch's own records (never waited for: they are in
/// process).
const OWN_BOUND: Duration = Duration::from_secs(1);

impl Use {
    fn of(settings: &StateConfig) -> Use {
        Use {
            location: Some(settings.location.clone()),
            timeout: settings.timeout,
            on_error: settings.on_error,
            max_hold: settings.max_hold,
        }
    }

    fn own(max_hold: Duration) -> Use {
        Use {
            location: None,
            timeout: OWN_BOUND,
            on_error: OnError::Open,
            max_hold,
        }
    }

    /// How messages name the records: "the state file" and its path, "the state store"
    /// and its URL, or the batch's own.
    fn names(&self) -> (&'static str, String) {
        match &self.location {
            Some(l) => (l.noun(), l.describe()),
            None => ("the batch's shared state", "the batch's memory".into()),
        }
    }
}

/// The time a record's date stands for, for messages.
fn http_date(at: Millis) -> String {
    httpdate::fmt_http_date(SystemTime::UNIX_EPOCH + Duration::from_millis(at.min(MAX_STAMP)))
}

/// One run's use of the shared state.
pub struct Shared<'a> {
    store: Box<dyn Store>,
    used: Use,
    key: String,
    reporter: &'a Reporter,
    deadline: Option<Instant>,
    /// The number of the probe lease this run holds, when it is the half-open circuit's
    /// probe.
    pub probe: Option<u64>,
    /// The run's number (a transfer of a batch draws its own): the budget tells the run's
    /// own retries, which do not count against it, from other runs' by it.
    run: u64,
    /// The store failed during this run: it is not asked again. (Atomic, as `proven`: the
    /// loop asks through `&self`, and `Shared` may be shared between threads.)
    broken: AtomicBool,
    /// An answer of this run proved the target up, and the breaker was told.
    proven: AtomicBool,
    /// What the store last told this run, which a retry's wait goes by when the run has no
    /// Retry-After to share (so that it costs no round trip): `Send` asks the store again.
    view: Mutex<View>,
    /// The run's job and the key it sends, which the store keeps until an answer is final.
    job: Option<Sent>,
}

/// What the store last told a run: until when a shared Retry-After holds (on this host's
/// monotonic clock), and why the budget had no retry left, if it had none.
#[derive(Debug, Default)]
struct View {
    held_until: Option<Instant>,
    spent: Option<String>,
}

impl View {
    /// The view after a reply that told `held` and `budget`.
    fn told(held: Option<Duration>, budget: &Result<(), String>) -> View {
        View {
            held_until: held.and_then(|h| Instant::now().checked_add(h)),
            spent: budget.clone().err(),
        }
    }

    /// The shared Retry-After as of now, and the budget's answer (`charge`: whether the
    /// retry would be charged), as last told.
    fn now(&self, charge: bool) -> (Option<Duration>, Result<(), String>) {
        let held = self
            .held_until
            .map(|u| u.saturating_duration_since(Instant::now()))
            .filter(|h| !h.is_zero());
        let budget = match &self.spent {
            Some(why) if charge => Err(why.clone()),
            _ => Ok(()),
        };
        (held, budget)
    }
}

/// What the breaker and the shared Retry-After say before the first attempt.
pub struct Admitted<'a> {
    /// The state to use for the rest of the run (`None`: going on without it).
    pub shared: Option<Shared<'a>>,
    /// A Retry-After that another run shared, still holding for this long: wait first.
    pub hold: Option<Duration>,
    /// The job's key as the store keeps it, and the store's time then (`None`: no job was
    /// brought, or the store could not be used, which was said).
    pub job: Option<(Kept, Millis)>,
}

/// The run's job and the key the admission decided for it (what a final answer retires).
fn sent(job: Option<Job>, kept: Option<&Kept>) -> Option<Sent> {
    Sent::new(job?.digest, &kept?.key)
}

/// What a job's key not retired after a final answer means, for the notice that says so.
const KEPT_ON: &str = "the job's Idempotency-Key stays kept, and a later run of the same request will send it again (delete the state, or wait for --state-ttl, to start afresh)";

/// Whether a run that ended with `outcome` (as the attempt loop decided it, before the
/// files at its end are written) got a final answer to its job: a success, or a status
/// that is not retried (exit 3). Every other ending leaves the outcome unknown (the server
/// may have processed the request and its answer was lost: a timeout or a reset after
/// sending, a cut body, retries exhausted on a retried status such as 503 or 409, the
/// deadline, a signal, a failure of this host), or sent nothing (refused, connection
/// refused, DNS): the job's key is kept, which is harmless when nothing was sent.
pub fn job_settled(outcome: Outcome) -> bool {
    matches!(outcome, Outcome::Success | Outcome::NonRetryableResponse)
}

/// The most the whole run's store time may pass the deadline by, for the final record.
const FINISH_GRACE: Duration = Duration::from_millis(50);

impl<'a> Shared<'a> {
    /// Asks whether the run may start. `Err` holds the reason for a refusal (exit 7), for
    /// the summary line: the circuit is open, a shared Retry-After holds past the deadline
    /// (not in a batch's own store: there it is the run's own hold, which ends the
    /// transfer with 5 in the loop), or the store cannot be used and `--state-on-error` is
    /// closed.
    ///
    /// `lease` is how long a probe may hold the half-open circuit: as long as the probe can
    /// run (its deadline or attempt timeout), and never less than the cooldown. `job`: the
    /// run's job, with `--idempotency-key auto`, whose key the same operation takes or keeps
    /// (even for a run then refused: it sends nothing, and an earlier run's key stays).
    pub fn admit(
        records: Records<'_>,
        (lease, job): (Duration, Option<Job>),
        target: (&Url, Option<&Path>),
        reporter: &'a Reporter,
        deadline: Option<Instant>,
    ) -> Result<Admitted<'a>, String> {
        let key = crate::fleet::origins::origin_key(target.0, target.1);
        let (used, opened) = open(records, deadline);
        let store = match opened {
            Ok(store) => store,
            Err(why) => return unusable(&used, reporter, &why, job.is_some()),
        };
        let bound = op_bound(used.timeout, deadline, Duration::ZERO);
        let id = probe_number();
        let asked = first_question(
            store.as_ref(),
            &key,
            &used,
            (lease, id, job),
            bound,
            reporter,
        );
        let (first, kept) = match asked {
            Ok(a) => a,
            Err(e) => return unusable(&used, reporter, &e.to_string(), job.is_some()),
        };
        let (admission, hold, view, now) = first;
        let own = used.location.is_none();
        if !own {
            // A batch's own records are no `--state`: `%{state}` stays "none".
            reporter.note_state(StateUse::Used);
        }
        let probe = probe_or_refusal(admission, id, now, &key, reporter)?;
        let shared = Shared {
            store,
            used,
            key,
            reporter,
            deadline,
            probe,
            run: id,
            broken: AtomicBool::new(false),
            proven: AtomicBool::new(false),
            view: Mutex::new(view),
            job: sent(job, kept.as_ref()),
        };
        // A batch's own records hold what its transfers were told: the run's own hold,
        // which the loop meets before its first attempt and ends with 5 when it passes the
        // deadline (as under -Z, where the origins' table says so first), not a refusal.
        if let Some(h) = hold.filter(|_| !own) {
            shared.refuse_a_hold_past_the_deadline(h, now)?;
        }
        Ok(Admitted {
            shared: Some(shared),
            hold,
            job: kept.map(|k| (k, now)),
        })
    }

    /// Before the first attempt, a Retry-After that another run shared (`held`, clamped, at
    /// the store's `now`) that holds past the deadline refuses the run (`Err`: why, for
    /// exit 7), freeing the probe's lease if this run took it, since it sends nothing.
    fn refuse_a_hold_past_the_deadline(&self, held: Duration, now: Millis) -> Result<(), String> {
        let left = self
            .deadline
            .map(|d| d.saturating_duration_since(Instant::now()));
        if hold_fits(held, left) {
            return Ok(());
        }
        if self.probe.is_some() {
            self.record(RunResult::Neutral, None, false);
        }
        self.reporter.note_state(StateUse::Refused);
        Err(format!(
            "nothing sent: another run was told to wait until {} (Retry-After from {}), {} from now, past the deadline ({} left)",
            http_date(now.saturating_add(crate::units::millis(held))),
            self.key,
            fmt_duration(held),
            fmt_duration(left.unwrap_or_default())
        ))
    }

    /// The bound of one operation now (`grace`: how far past the deadline it may go).
    fn bound(&self, grace: Duration) -> Duration {
        op_bound(self.used.timeout, self.deadline, grace)
    }

    /// Reports a store that failed mid-run, once; with `--state-on-error closed` the run
    /// must send nothing more (`Err`, for the retry's refusal).
    fn failed(&self, e: &std::io::Error) -> Result<(), String> {
        let first = !self.broken.swap(true, Ordering::Relaxed);
        self.reporter.note_state(StateUse::Unavailable);
        let (noun, name) = self.used.names();
        match self.used.on_error {
            OnError::Open => {
                if first {
                    self.reporter.notice(&format!(
                        "cannot use {noun} {name}: {e}; going on without it"
                    ));
                }
                Ok(())
            }
            OnError::Closed => Err(format!(
                "{noun} {name} cannot be used ({e}) and --state-on-error is closed"
            )),
        }
    }

    /// As an attempt's answer is told: shares `share` (its Retry-After, clamped, on a 429
    /// or 503, or the hold of a quota it said was spent), then says what a retry would meet:
    /// a shared Retry-After still holding (clamped), a budget with no retry left (as if the
    /// retry were charged: the decision knows whether it is, a poll of an answer that was
    /// not ready never is), or a store that failed under `--state-on-error closed`. With
    /// nothing to share, the store is not asked: the run goes by what the store last told
    /// it (its admission, or its last retry), which costs no round trip; `send_retry` asks
    /// again before the retry is sent. Nothing is charged here: the retry is charged by
    /// `send_retry`, when it is sent, so a run that stops during the wait (a signal, the
    /// deadline, another run's Retry-After) keeps no charge.
    pub fn outlook(&self, share: Option<Duration>) -> Outlook {
        let failed = |why: String| Outlook {
            failed: Some(why),
            origin: self.key.clone(),
            ..Outlook::default()
        };
        if self.broken.load(Ordering::Relaxed) {
            return match self.used.on_error {
                OnError::Open => Outlook::default(),
                OnError::Closed => failed("the state store failed earlier in this run".into()),
            };
        }
        let (held, budget) = if share.is_some() {
            let run = self.run;
            match self.ask(Op::Ask {
                hint: share,
                charge: true,
                run,
            }) {
                Ok(Reply::Told { held, budget, .. }) => (held, budget),
                Ok(_) => (None, Ok(())),
                Err(why) => return failed(why),
            }
        } else {
            self.view
                .lock()
                .map(|v| v.now(true))
                .unwrap_or((None, Ok(())))
        };
        Outlook {
            held: held.map(|h| h.min(self.used.max_hold)),
            spent: budget.err(),
            failed: None,
            origin: self.key.clone(),
        }
    }

    /// Just before a retry is sent, in one operation on the record: a Retry-After that
    /// another run shared meanwhile holds it back (a wait, nothing charged);
    /// otherwise, when `charge`, one retry is taken from the budget (a stop when
    /// another run took the last one meanwhile). What is charged is what is sent.
    pub fn send_retry(&self, charge: bool) -> Clear {
        if self.broken.load(Ordering::Relaxed) {
            return match self.used.on_error {
                OnError::Open => Clear::Go,
                OnError::Closed => Clear::Stop(Stop::Spent(
                    "the state store failed earlier in this run".into(),
                )),
            };
        }
        match self.ask(Op::Send {
            charge,
            run: self.run,
        }) {
            Ok(reply) => pass(reply, self.used.max_hold),
            Err(why) => Clear::Stop(Stop::Spent(why)),
        }
    }

    /// Makes `op` (`Ask` or `Send`) on the record and keeps what it told in the run's view.
    /// `Ok(Reply::Recorded)` stands for a store that failed under `--state-on-error open`
    /// (the run goes on without it); `Err` for one that failed under `closed` (why).
    fn ask(&self, op: Op) -> Result<Reply, String> {
        let warn = |m: &str| self.reporter.warn(m);
        match self
            .store
            .apply(&self.key, &op, self.bound(Duration::ZERO), &warn)
        {
            Ok((reply, _)) => {
                if let Reply::Told { held, next, .. } = &reply
                    && let Ok(mut v) = self.view.lock()
                {
                    *v = View::told(*held, next);
                }
                Ok(reply)
            }
            Err(e) => self.failed(&e).map(|()| Reply::Recorded),
        }
    }

    /// Records how the run ended: a failed run (exit 4, 5, 6, or refused by the budget)
    /// counts toward opening the circuit, unless the target was rate limiting it (its last
    /// answer a 429): that is not an outage, and the shared Retry-After governs it; nor is
    /// a 409 to a request with an Idempotency-Key (`has_key`). The last answer's
    /// Retry-After (`last`: its status and clamped hint) is shared. `settled`: the run's
    /// answer was final (see `job_settled`), which retires the job's key.
    pub fn finish(
        &self,
        outcome: Outcome,
        last: Option<(u16, Option<Duration>)>,
        settled: bool,
        (has_key, sent): (bool, bool),
    ) {
        if self.broken.load(Ordering::Relaxed) {
            if settled && self.job.is_some() {
                let (noun, name) = self.used.names();
                self.reporter.notice(&format!(
                    "the job's Idempotency-Key cannot be retired in {noun} {name}, which failed earlier: {KEPT_ON}"
                ));
            }
            return;
        }
        if outcome == Outcome::Refused {
            // The records stopped the run: the budget had no retry left for it.
            self.reporter.note_state(StateUse::Refused);
        }
        let result = match sent {
            true => run_result(outcome, last.map(|l| l.0), has_key),
            // A run that sent nothing (the deadline passed while it waited for its turn, or
            // for a hold) says nothing about the target.
            false => RunResult::Neutral,
        };
        let hint = last.and_then(|(status, hint)| hint.filter(|_| shares_hint(status)));
        self.record(result, hint, settled);
    }

    /// Whether the run is still the half-open circuit's probe, kept to a single attempt
    /// (until an answer proves the target up).
    pub fn probing(&self) -> bool {
        self.probe.is_some() && !self.proven.load(Ordering::Relaxed)
    }

    /// The target answered but was not ready (an `--until-*` condition failed): it is up,
    /// which the breaker hears at once as a success (`RunResult::Answered`: the failure
    /// count reset, an open or half-open circuit closed, the probe's lease freed), so that
    /// a probe that meets a service still starting goes on polling as an ordinary run
    /// instead of ending "not ready" and leaving the circuit half-open for the next run to
    /// do the same. Told once per run; nothing is charged to or counted in the budget.
    /// What the log says of it, when this run was the probe.
    pub fn answered(&self) -> Option<String> {
        if self.broken.load(Ordering::Relaxed) || self.proven.swap(true, Ordering::Relaxed) {
            return None;
        }
        self.record(RunResult::Answered, None, false);
        self.probe.map(|_| {
            format!(
                "{} answered (not ready yet): the circuit is closed and this run goes on polling",
                self.key
            )
        })
    }

    /// Records `result` in the breaker, shares `hint`, and retires the job's key when
    /// `settled`.
    fn record(&self, result: RunResult, hint: Option<Duration>, settled: bool) {
        let probe = self.probe;
        let warn = |m: &str| self.reporter.warn(m);
        let retire = self.job.filter(|_| settled);
        let op = Op::Record {
            result,
            probe,
            hint,
            retire,
        };
        let recorded = self
            .store
            .apply(&self.key, &op, self.bound(FINISH_GRACE), &warn);
        if let Err(e) = recorded {
            self.reporter.note_state(StateUse::Unavailable);
            // An operation that was sent but not answered in time may still be made by the
            // store (at most once): the line says so rather than that it was lost.
            let late = if e.kind() == std::io::ErrorKind::TimedOut {
                "; if the store received it late, it may still count it (once)"
            } else {
                ""
            };
            let kept = if retire.is_some() {
                format!("; {KEPT_ON}")
            } else {
                String::new()
            };
            let (noun, name) = self.used.names();
            self.reporter.notice(&format!(
                "cannot record the run in {noun} {name}: {e}{late}{kept}"
            ));
        }
    }
}

/// What `Shared::send_retry` says from the store's reply to `Op::Send` (a shared
/// Retry-After clamped to `max_hold`); any other reply (a store gone, under
/// `--state-on-error open`) lets the retry go.
fn pass(reply: Reply, max_hold: Duration) -> Clear {
    match reply {
        Reply::Told { held: Some(h), .. } => Clear::shared_hold(h.min(max_hold)),
        Reply::Told {
            budget: Err(why), ..
        } => Clear::Stop(Stop::Spent(why)),
        _ => Clear::Go,
    }
}

/// Whether a Retry-After on this status is shared with the other runs (RFC 6585 section 4
/// for 429, RFC 9110 section 15.6.4 for 503).
pub fn shares_hint(status: u16) -> bool {
    matches!(status, 429 | 503)
}

/// How a run that ended with `outcome`, its last answer `status`, counts for the breaker
/// (`has_key`: the request carried an Idempotency-Key, under which a 409 says the first
/// request is still being processed: the target is up, see `policy::idempotency`).
pub fn run_result(outcome: Outcome, status: Option<u16>, has_key: bool) -> RunResult {
    let busy = status.is_some_and(|s| crate::policy::idempotency::breaker_neutral(s, has_key));
    match outcome {
        Outcome::Success => RunResult::Success,
        Outcome::NotReady => RunResult::Answered,
        _ if status == Some(429) || busy => RunResult::Neutral,
        Outcome::AttemptsExhausted
        | Outcome::Deadline
        | Outcome::NonRetryableTransport
        | Outcome::Refused => RunResult::Failure,
        _ => RunResult::Neutral,
    }
}

/// How the run uses its records, and the records opened (a store within the bound of one
/// operation, cut by the `deadline`); `Err`: the store `--state` names cannot be opened,
/// why.
fn open(records: Records<'_>, deadline: Option<Instant>) -> (Use, Result<Box<dyn Store>, String>) {
    match records {
        Records::State(settings) => {
            let bound = op_bound(settings.timeout, deadline, Duration::ZERO);
            (Use::of(settings), settings.open(bound))
        }
        Records::Own(memory, max_hold) => (Use::own(max_hold), Ok(Box::new(memory.clone()))),
    }
}

/// The bound of one store operation: `timeout`, cut to half of what is left before
/// `deadline`, so that a store that does not answer leaves the request the other half; the
/// final record (`grace` > 0) may take what is left, and `grace` past it.
fn op_bound(timeout: Duration, deadline: Option<Instant>, grace: Duration) -> Duration {
    let Some(d) = deadline else {
        return timeout;
    };
    let left = d.saturating_duration_since(Instant::now());
    if grace.is_zero() {
        timeout.min(left / 2)
    } else {
        timeout.min(left + grace)
    }
}

/// The run's first question, one operation on the target's record: what the breaker says
/// (`lease` and `id`: the probe's lease, should it be the probe), the Retry-After another
/// run shared (clamped to `--max-retry-after`), what the run goes by until it asks again,
/// and the store's time; a job's key dropped to make room for this run's is warned of.
fn first_question(
    store: &dyn Store,
    key: &str,
    used: &Use,
    (lease, id, job): (Duration, u64, Option<Job>),
    bound: Duration,
    reporter: &Reporter,
) -> std::io::Result<(First, Option<Kept>)> {
    let warn = |m: &str| reporter.warn(m);
    let (reply, now) = store.apply(key, &Op::Admit { lease, id, job }, bound, &warn)?;
    let Reply::Admitted {
        admission,
        held,
        budget,
        job,
    } = reply
    else {
        return Err(std::io::Error::other(
            "the store answered another operation",
        ));
    };
    let held = held.map(|h| h.min(used.max_hold));
    if let Some(made) = job.as_ref().and_then(|k| k.dropped) {
        warn_dropped(reporter, key, made, now);
    }
    Ok(((admission, held, View::told(held, &budget), now), job))
}

/// The first question's answer: the breaker's, the shared Retry-After (clamped), what the
/// run goes by until it asks again, and the store's time.
type First = (Admission, Option<Duration>, View, Millis);

/// What the breaker's `admission` means for the run of `key`: the probe lease `id` it
/// holds (`Some` when half-open, which is said), none for an ordinary run, or `Err` with
/// the refusal's reason (exit 7) when the circuit is open.
fn probe_or_refusal(
    admission: Admission,
    id: u64,
    now: Millis,
    key: &str,
    reporter: &Reporter,
) -> Result<Option<u64>, String> {
    match admission {
        Admission::Refuse { until, why } => {
            reporter.note_state(StateUse::Refused);
            let wait = Duration::from_millis(until.saturating_sub(now));
            Err(format!(
                "nothing sent: {why} for {key}; the next probe may start in {} ({})",
                fmt_duration(wait),
                http_date(until)
            ))
        }
        Admission::Probe => {
            reporter.info(&format!(
                "the circuit for {key} is half-open: this run probes with a single attempt"
            ));
            Ok(Some(id))
        }
        Admission::Run => Ok(None),
    }
}

/// A store that cannot be used before the first attempt: reported once, then as
/// `--state-on-error` says.
fn unusable<'a>(
    used: &Use,
    reporter: &Reporter,
    why: &str,
    job: bool,
) -> Result<Admitted<'a>, String> {
    let (noun, name) = used.names();
    reporter.note_state(StateUse::Unavailable);
    match used.on_error {
        OnError::Open => {
            // Never a silent loss: a key kept for this job by an earlier run is not read.
            let key = if job {
                " (with a fresh Idempotency-Key: a key an earlier run may have kept for this job is not read, and this run's is not kept)"
            } else {
                ""
            };
            reporter.notice(&format!(
                "cannot use {noun} {name}: {why}; going on without it{key}"
            ));
            Ok(Admitted {
                shared: None,
                hold: None,
                job: None,
            })
        }
        OnError::Closed => Err(format!(
            "nothing sent: {noun} {name} cannot be used ({why}) and --state-on-error is closed"
        )),
    }
}

/// Says that the record of `key` dropped the key of another job still pending, made at
/// `made` (`now`: the store's time), to make room for this run's.
fn warn_dropped(reporter: &Reporter, key: &str, made: Millis, now: Millis) {
    reporter.warn(&format!(
        "{key} keeps at most {} Idempotency-Keys of jobs whose outcome is unknown: the oldest, made {} ago, was dropped (a re-run of its job will send a new key)",
        crate::fleet::job::MAX_JOBS,
        fmt_duration(Duration::from_millis(now.saturating_sub(made)))
    ));
}

/// A number for this run (its probe lease, and its retries in the budget), unlikely to be
/// any other run's (53 bits, so that any JSON reader keeps it exact).
fn probe_number() -> u64 {
    rand::random::<u64>() >> 11 | 1
}

/// What `--explain` shows of the state: the store, its failure policy, and what a run
/// would be told now, from one read-only query (no lease taken, nothing charged, no key
/// made): with `job` (`--idempotency-key auto`, or `new` when `renew`), the job's key kept,
/// if any, its age, and what the next run does with it.
pub fn explain(
    settings: &StateConfig,
    target: (&Url, Option<&Path>),
    job: Option<&Digest>,
    renew: bool,
) -> Vec<String> {
    let key = crate::fleet::origins::origin_key(target.0, target.1);
    let loc = &settings.location;
    let policy = match settings.on_error {
        OnError::Open => "open (a store that fails is reported and the run goes on without it)",
        OnError::Closed => "closed (a store that fails stops the run, exit 7, nothing sent)",
    };
    let mut lines = vec![
        format!(
            "state:        {} ({})",
            loc.describe(),
            loc.record_name(&key)
        ),
        format!(
            "              each operation within {}; on error: {policy}",
            fmt_duration(settings.timeout)
        ),
    ];
    let peeked = settings
        .open(settings.timeout)
        .and_then(|s| s.peek(&key, settings.timeout).map_err(|e| e.to_string()));
    match peeked {
        Ok((t, now)) => {
            lines.extend(what_a_run_is_told(&t, now, &settings.limits));
            lines.extend(job.map(|d| job_line(&t, d, now, renew)));
        }
        Err(why) => lines.push(format!("              cannot be read now: {why}")),
    }
    lines
}

/// `--explain`'s lines on a target's record `t` read at `now`: the circuit, the retry
/// budget left to a run that has not retried yet (every retry in the window is another
/// run's to it), and the Retry-After shared by the runs.
fn what_a_run_is_told(t: &Target, now: Millis, l: &Limits) -> Vec<String> {
    let (allowed, taken) = t.budget.allowance(l.budget_pct, l.floor);
    let held = match t.held(now) {
        Some(h) => format!(
            "holds for {} (until {})",
            fmt_duration(h),
            http_date(now.saturating_add(crate::units::millis(h)))
        ),
        None => "none".into(),
    };
    vec![
        format!("now:          circuit {}", circuit(&t.breaker, now, l)),
        format!(
            "              retry budget: {} of {allowed} left in the last {} ({} success{}) for a new run; a run's own retries do not count against it",
            allowed.saturating_sub(taken),
            crate::units::fmt_given(l.window),
            t.budget.counts().0,
            if t.budget.counts().0 == 1 { "" } else { "es" }
        ),
        format!("              Retry-After shared by the runs: {held}"),
    ]
}

/// `--explain`'s line on the key of the job `digest` in the record `t` read at `now`; with
/// `renew` (`--idempotency-key new`), the run replaces a pending key rather than sending it.
fn job_line(t: &Target, digest: &Digest, now: Millis, renew: bool) -> String {
    let hex = digest.hex();
    match t.jobs.iter().find(|p| p.digest == hex) {
        Some(p) => format!(
            "              Idempotency-Key of this job: {} pending, made {} ago ({}): its outcome is unknown, {}",
            p.key,
            fmt_duration(Duration::from_millis(now.saturating_sub(p.made))),
            http_date(p.made),
            if renew {
                "this run (--idempotency-key new) drops it and sends a new one"
            } else {
                "the next run sends it again"
            }
        ),
        None => {
            "              Idempotency-Key of this job: none pending, the next run makes a new one"
                .into()
        }
    }
}

/// The circuit `b` at `now`, in words: closed (and how many failed runs in a row), open
/// (for how long more), or half-open (a probe in flight, or the next run probes).
fn circuit(b: &Breaker, now: Millis, l: &Limits) -> String {
    let Some(opened) = b.opened_at else {
        return format!(
            "closed ({} of {} failed runs in a row)",
            b.failures, l.threshold
        );
    };
    let reopen = opened.saturating_add(crate::units::millis(l.cooldown));
    match b.probe_until.filter(|p| *p > now) {
        _ if now < reopen => format!(
            "open: refusing for {} more (until {})",
            fmt_duration(Duration::from_millis(reopen - now)),
            http_date(reopen)
        ),
        Some(p) => format!(
            "half-open: a probe is in flight (its lease ends in {})",
            fmt_duration(Duration::from_millis(p - now))
        ),
        None => "half-open: the next run probes with a single attempt".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The contract tests' limits (the store crate's `store::contract::limits`).
    fn limits() -> Limits {
        Limits {
            threshold: 3,
            cooldown: Duration::from_secs(30),
            budget_pct: 10.0,
            window: Duration::from_secs(600),
            floor: 2,
            ttl: Duration::from_secs(24 * 3600),
        }
    }

    #[test]
    fn rate_limiting_is_not_an_outage() {
        assert_eq!(
            run_result(Outcome::AttemptsExhausted, Some(429), false),
            RunResult::Neutral
        );
        assert_eq!(
            run_result(Outcome::Refused, Some(429), false),
            RunResult::Neutral
        );
        assert_eq!(
            run_result(Outcome::AttemptsExhausted, Some(503), true),
            RunResult::Failure
        );
        assert_eq!(
            run_result(Outcome::Deadline, None, false),
            RunResult::Failure
        );
        assert_eq!(
            run_result(Outcome::Success, Some(200), false),
            RunResult::Success
        );
        assert_eq!(
            run_result(Outcome::NotReady, None, false),
            RunResult::Answered
        );
    }

    /// A 409 to a request with an Idempotency-Key is the server busy with the first
    /// request, not down; without a key, a 409 retried through --retry-on counts as before.
    #[test]
    fn a_request_still_in_progress_is_not_an_outage() {
        for outcome in [
            Outcome::AttemptsExhausted,
            Outcome::Deadline,
            Outcome::Refused,
        ] {
            assert_eq!(run_result(outcome, Some(409), true), RunResult::Neutral);
            assert_eq!(run_result(outcome, Some(409), false), RunResult::Failure);
        }
        assert!(shares_hint(429) && shares_hint(503) && !shares_hint(500));
    }

    /// `--explain`'s circuit in words, in each of its states (limits: a threshold of 3, a
    /// 30 s cooldown).
    #[test]
    fn explain_says_the_circuits_state_in_words() {
        let l = limits();
        let breaker = |failures, opened_at, probe_until| Breaker {
            failures,
            opened_at,
            probe_until,
            probe_id: probe_until.map(|_| 1),
        };
        let cases = [
            (
                breaker(2, None, None),
                5_000,
                "closed (2 of 3 failed runs in a row)",
            ),
            (
                breaker(3, Some(1_000), None),
                6_000,
                "open: refusing for 25s more",
            ),
            (
                breaker(3, Some(1_000), Some(91_000)),
                61_000,
                "half-open: a probe is in flight (its lease ends in 30s)",
            ),
            (
                breaker(3, Some(1_000), Some(40_000)),
                61_000,
                "half-open: the next run probes with a single attempt",
            ),
        ];
        for (b, now, want) in cases {
            let said = circuit(&b, now, &l);
            assert!(said.starts_with(want), "{said:?} for {b:?} at {now}");
        }
    }

    /// `--explain`'s three lines on a record: the circuit, the budget left, the shared
    /// Retry-After.
    #[test]
    fn explain_tells_the_budget_and_the_shared_hold() {
        let l = limits();
        let mut t = Target::default();
        t.take_retry(1_000, &l, 1).expect("the floor");
        t.hold(1_000, Duration::from_secs(9));
        let lines = what_a_run_is_told(&t, 4_000, &l);
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines[0].ends_with("circuit closed (0 of 3 failed runs in a row)"));
        assert!(lines[1].ends_with(
            "retry budget: 1 of 2 left in the last 10m (0 successes) for a new run; a run's own retries do not count against it"
        ));
        assert!(lines[2].contains("Retry-After shared by the runs: holds for 6s (until "));
        let lines = what_a_run_is_told(&t, 20_000, &l);
        assert!(lines[2].ends_with("Retry-After shared by the runs: none"));
    }

    #[test]
    fn the_gate_shares_the_hint_and_refuses_but_never_charges() {
        let l = limits();
        let s = Duration::from_secs;
        let mut t = Target::default();
        // Run 9 asks; the retries are sent by other runs (numbered by their time).
        let ask = |t: &mut Target, now, hint, left, charge| match (Op::Ask {
            hint,
            charge,
            run: 9,
        })
        .run(t, now, &l)
        {
            Reply::Told { held, next, .. } => {
                let o = Outlook {
                    held,
                    spent: next.err(),
                    failed: None,
                    origin: "k".into(),
                };
                let ask = crate::policy::decision::Ask {
                    status: None,
                    hint: None,
                    left,
                    charge,
                };
                crate::policy::decision::retry_gate(&o, &ask)
            }
            other => panic!("{other:?}"),
        };
        let send = |t: &mut Target, now, charge, max| {
            pass(Op::Send { charge, run: now }.run(t, now, &l), max)
        };
        assert!(matches!(
            ask(&mut t, 0, Some(s(5)), None, true),
            Clear::Wait { wait, .. } if wait == s(5)
        ));
        assert!(matches!(
            ask(&mut t, 1_000, None, Some(s(2)), true),
            Clear::Stop(Stop::TooLate(why)) if why.contains("holds for 4s")
        ));
        assert_eq!(ask(&mut t, 6_000, None, None, true), Clear::Go);
        assert_eq!(t.budget.counts().1, 0, "the gate charges nothing");
        // The floor (2) taken by sends: the gate refuses a charged retry, not a poll.
        for now in [6_000, 6_001] {
            assert_eq!(send(&mut t, now, true, Duration::MAX), Clear::Go);
        }
        assert!(matches!(
            ask(&mut t, 7_000, None, None, true),
            Clear::Stop(Stop::Spent(why)) if why.contains("retry budget is spent")
        ));
        assert_eq!(ask(&mut t, 7_000, None, None, false), Clear::Go);
        assert_eq!(t.budget.counts().1, 2);
    }

    /// Just before a retry is sent: a hold shared meanwhile, a budget spent meanwhile, a
    /// poll and a retry, each with what it charges (only a retry that goes is charged).
    #[test]
    fn a_retry_is_charged_when_it_is_sent_and_only_then() {
        let l = limits();
        let s = Duration::from_secs;
        let held = |until| Target {
            hold_until: Some(until),
            ..Target::default()
        };
        let spent = || {
            let mut t = Target::default();
            for now in 0..2 {
                t.take_retry(now, &l, now).expect("the floor");
            }
            t
        };
        let cases: Vec<(&str, Target, bool, Clear, u64)> = vec![
            ("a retry", Target::default(), true, Clear::Go, 1),
            ("a poll", Target::default(), false, Clear::Go, 0),
            (
                "a retry, held",
                held(13_000),
                true,
                Clear::shared_hold(s(3)),
                0,
            ),
            (
                "a poll, held",
                held(13_000),
                false,
                Clear::shared_hold(s(3)),
                0,
            ),
            ("a hold over", held(10_000), true, Clear::Go, 1),
            (
                "a retry, the budget spent",
                spent(),
                true,
                Clear::Stop(Stop::Spent(String::new())),
                2,
            ),
            ("a poll, the budget spent", spent(), false, Clear::Go, 2),
        ];
        for (what, mut t, charge, want, charged) in cases {
            let send = Op::Send { charge, run: 9 };
            let got = pass(send.run(&mut t, 10_000, &l), Duration::MAX);
            match (&got, &want) {
                (Clear::Stop(Stop::Spent(why)), Clear::Stop(Stop::Spent(_))) => {
                    assert!(why.contains("spent"), "{what}")
                }
                _ => assert_eq!(got, want, "{what}"),
            }
            assert_eq!(t.budget.counts().1, charged, "{what}");
        }
        let mut t = held(u64::MAX / 2);
        let got = pass(
            Op::Send {
                charge: true,
                run: 9,
            }
            .run(&mut t, 0, &l),
            s(1),
        );
        assert_eq!(got, Clear::shared_hold(s(1)), "clamped");
    }
}
