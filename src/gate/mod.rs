//! The gate in front of the attempt loop. The loop has two entry points into it, and
//! reaches no store but through it:
//!
//! - [`Gate::ask`], before each send: "go, wait this long, or stop, and why"
//!   (`policy::gate::Clear`);
//! - [`Gate::tell`], after each answer (its head as soon as it arrives, then the whole
//!   attempt once it is over): what was heard (the status, Retry-After and RateLimit
//!   fields, whether the target answered but was not ready), and back, as data, what the
//!   run must know of it (a quota said spent, what a retry would meet in the breaker's and
//!   budget's records: `policy::gate::Outlook`, the line saying a circuit closed), which
//!   the pure decision (`policy::decision`) takes as facts.
//!
//! A gate is opened by the run's admission ([`Gate::open`]: the circuit breaker, a
//! Retry-After another run was told) and closed with the run's end ([`Gate::close`]: how it
//! ended, for the breaker and the budget). It has two layers:
//!
//! - the local one, always there (`local::Local`, one per run, shared by a batch's
//!   transfers): the origins' table (`fleet::origins`: the Retry-After hold, RateLimit
//!   pacing, the requests in flight), the transfers under way per origin and `--rate`'s
//!   next start (which the batch's scheduler asks), and, in a batch without `--state`, the
//!   batch's own breaker and budget records per origin;
//! - the shared one, only with `--state` (`fleet::admission` over the store it names):
//!   the circuit breaker, the retry budget and a Retry-After told to another run.
//!
//! The breaker and budget are asked through one seam (`between::Between`), whichever
//! layer keeps them. A send is cleared in three steps, each asked again after its wait
//! until it says go: a Retry-After that the records said still holds (before the first
//! attempt only), the origin's table (the request is then counted in flight), then,
//! before a retry, the records, which charge the retry to the budget as they let it go.
//! The gate decides and says why; the loop says it, sleeps, and asks again
//! (`request::pause`).

pub mod between;
pub mod local;

use crate::exit::Outcome;
use crate::fleet::Millis;
use crate::fleet::admission::{Records, Shared, StateConfig, job_settled, shares_hint};
use crate::fleet::job::{Digest, Job, Kept};
use crate::fleet::origins::{Origins, Told};
use crate::policy::decision::{HOLD_PAST_DEADLINE, wait_for_hold};
use crate::policy::gate::{Clear, Outlook, Stop, Why};
use crate::report::Reporter;
use crate::units::fmt_duration;
use between::Between;
use local::Local;
use rand::Rng;
use std::path::Path;
use std::time::{Duration, Instant};
use url::Url;

/// The gate of one run (one URL, or one transfer of a batch).
pub struct Gate<'a> {
    /// The run's local layer (shared by a batch's transfers).
    local: &'a Local,
    /// The breaker's and budget's records: the store with `--state`, a batch's own in the
    /// local layer without it, none for a run of one URL without it.
    records: Option<Box<dyn Between + 'a>>,
    /// A Retry-After the records said still holds this long, before the first attempt.
    hold: Option<Duration>,
    /// `--retry-after-spread`: the spread added to a hold's end.
    spread: Duration,
    /// `--max-retry-after`: the clamp on a Retry-After.
    max_hold: Duration,
    /// Who shared a Retry-After, as the wait says it.
    shared_by: &'static str,
}

/// What a run's gate is opened with, besides its local layer: the values of the run's
/// configuration it needs.
pub struct Opening<'c> {
    /// `--state`, if given.
    pub state: Option<&'c StateConfig>,
    /// The URL the run starts at, and `--unix-socket` (the origin's key).
    pub target: (&'c Url, Option<&'c Path>),
    /// How long a half-open circuit's probe may take (see `Shared::admit`).
    pub lease: Duration,
    /// When the run's deadline passes.
    pub deadline: Option<Instant>,
    /// `--retry-after-spread`.
    pub spread: Duration,
    /// `--max-retry-after`.
    pub max_hold: Duration,
}

/// An open gate, and what the admission decided besides: the job's key as the store keeps
/// it, and the store's time then (`None`: no job, or no store).
pub struct Opened<'a> {
    /// The run's gate.
    pub gate: Gate<'a>,
    /// The job's key kept, with the store's time.
    pub kept: Option<(Kept, Millis)>,
}

/// One send being cleared: the origin it goes to and the step it has reached. Made by the
/// loop; a ticket dropped after the origin let it go but before it was sent (the run ended
/// while it waited) stops counting in flight.
pub struct Ticket<'a> {
    /// The key of the origin the attempt starts at (`fleet::origins::origin_key`).
    pub origin: String,
    /// Whether the send is a retry, and then whether it is charged to the budget.
    retry: Option<bool>,
    step: Step,
    /// The table that counts the send in flight, once it does.
    counted: Option<&'a Origins>,
}

/// The steps of clearing a send, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Hold,
    Origin,
    Records,
    Cleared,
}

impl Ticket<'_> {
    /// A send to `origin` to clear: the first attempt (`retry` None) or a retry (charged to
    /// the budget when `Some(true)`).
    pub fn new(origin: String, retry: Option<bool>) -> Self {
        Ticket {
            origin,
            retry,
            step: if retry.is_none() {
                Step::Hold
            } else {
                Step::Origin
            },
            counted: None,
        }
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if let (Step::Records, Some(origins)) = (self.step, self.counted) {
            origins.after(&self.origin, None, Instant::now());
        }
    }
}

/// What the loop tells the gate.
pub enum Heard<'h> {
    /// An answer's head arrived, before its body, for a request that started at `origin`:
    /// the transfers waiting for the origin's first answer need not wait for the body.
    Head {
        /// The origin the attempt started at.
        origin: &'h str,
        /// What the head said.
        told: &'h Told,
    },
    /// The attempt is over.
    Over(Over<'h>),
    /// The decision about the attempt last told over is made: whether the run ends in a
    /// failure (under `--fail-early`, that halts the batch before any transfer sends its
    /// first request; see `local`).
    Decided {
        /// The run ends in a failure.
        failed: bool,
    },
}

/// An attempt that is over, as the gate hears it.
pub struct Over<'h> {
    /// The origin the attempt started at (no longer in flight).
    pub origin: &'h str,
    /// What the origin that answered said (None: no answer).
    pub told: Option<&'h Told>,
    /// Its Retry-After as asked and as clamped, when one was read.
    pub retry_after: Option<(Duration, Duration)>,
    /// The error status the decision weighs (None: no such answer): a 429's or 503's
    /// Retry-After is shared with the other runs.
    pub status: Option<u16>,
    /// The target answered but was not ready: the breaker hears it is up.
    pub not_ready: bool,
    /// It was the last attempt the run's rules allow: no retry can follow, so a
    /// Retry-After is shared with the run's end (`Gate::close`), not now, which saves the
    /// store a round trip.
    pub last: bool,
}

/// What the gate says back when told an attempt is over.
#[derive(Debug, Default)]
pub struct Noted {
    /// A spent quota holds the origin this long (clamped).
    pub spent: Option<Duration>,
    /// A RateLimit field could not be read, for the first time at this origin: say it.
    pub say_malformed: bool,
    /// What a retry would meet in the breaker's and budget's records.
    pub outlook: Outlook,
    /// The line saying that the answer closed the circuit this run was probing.
    pub closed: Option<String>,
    /// Whether the run is still the half-open circuit's probe (a single attempt).
    pub probing: bool,
    /// The origin's adaptive pacing changed its rate on this answer: the origin and the
    /// change, to be said once.
    pub paced: Option<(String, crate::policy::pacer::Change)>,
}

impl<'a> Gate<'a> {
    /// Opens the gate of a run over its `local` layer: with `--state`, or a batch's own
    /// records, asks the breaker and the shared Retry-After whether the run may go (`Err`:
    /// refused, exit 7, and why), and takes the key of its `job`.
    pub fn open(
        local: &'a Local,
        how: &Opening<'_>,
        job: Option<Job>,
        reporter: &'a Reporter,
    ) -> Result<Opened<'a>, String> {
        let records = match (how.state, local.records()) {
            (Some(settings), _) => Records::State(settings),
            (None, Some(own)) => Records::Own(own, how.max_hold),
            (None, None) => {
                let gate = Gate::with(local, None, None, (how.spread, how.max_hold));
                return Ok(Opened { gate, kept: None });
            }
        };
        let admitted = Shared::admit(
            records,
            (how.lease, job),
            how.target,
            reporter,
            how.deadline,
        )?;
        let shared = admitted
            .shared
            .map(|s| Box::new(s) as Box<dyn Between + 'a>);
        let mut gate = Gate::with(local, shared, admitted.hold, (how.spread, how.max_hold));
        if how.state.is_none() {
            // A Retry-After in a batch's own records was told to another of its transfers.
            gate.shared_by = "another transfer of this run";
        }
        Ok(Opened {
            gate,
            kept: admitted.job,
        })
    }

    /// The gate over `local`, with the breaker's and budget's `records` (and the
    /// Retry-After they said still `hold`s), and the run's `--retry-after-spread` and
    /// `--max-retry-after`.
    pub fn with(
        local: &'a Local,
        records: Option<Box<dyn Between + 'a>>,
        hold: Option<Duration>,
        (spread, max_hold): (Duration, Duration),
    ) -> Gate<'a> {
        Gate {
            local,
            records,
            hold,
            spread,
            max_hold,
            shared_by: "another run sharing --state",
        }
    }

    /// Whether the run was admitted as the half-open circuit's probe (a single attempt).
    pub fn probing(&self) -> bool {
        self.records.as_ref().is_some_and(|r| r.probing())
    }

    /// Ask: may `t` be sent `now` (the loop's clock; `left`: time left before the deadline;
    /// `rng` draws a hold's spread)? On go the request is in flight until told over; a wait
    /// is to be slept and the gate asked again; a stop ends the run, with why (the ticket
    /// is then dropped, which frees what it held).
    pub fn ask(
        &self,
        t: &mut Ticket<'a>,
        (now, left): (Instant, Option<Duration>),
        rng: &mut dyn Rng,
    ) -> Clear {
        if t.retry.is_none()
            && matches!(t.step, Step::Hold | Step::Origin)
            && let Some(halted) = self.first_send_held()
        {
            return halted;
        }
        if t.step == Step::Hold {
            t.step = Step::Origin;
            if let Some(held) = self.hold {
                return self.shared_wait(held, "before the first attempt", left, rng);
            }
        }
        if t.step == Step::Origin {
            let origins = self.local.origins();
            match origins.before_send(&t.origin, now, left, (self.spread, &mut *rng)) {
                Clear::Go => {
                    t.step = Step::Records;
                    t.counted = Some(origins);
                }
                other => return other,
            }
        }
        let (Some(charge), Some(records)) = (t.retry, &self.records) else {
            t.step = Step::Cleared;
            if t.retry.is_none() {
                self.local.sending();
            }
            return Clear::Go;
        };
        match records.send_retry(charge) {
            Clear::Wait { wait, .. } => self.shared_wait(wait, "more", left, rng),
            Clear::Go => {
                t.step = Step::Cleared;
                Clear::Go
            }
            stop => stop,
        }
    }

    /// Before a run's first send: a stop when its batch has halted, a short wait while
    /// another transfer's attempt is decided under `--fail-early` (see `local`); None: go on.
    fn first_send_held(&self) -> Option<Clear> {
        if self.local.halted() {
            let why = "not started: the batch starts no new transfer".to_string();
            return Some(Clear::Stop(Stop::Halted(why)));
        }
        self.local.undecided().then_some(Clear::Wait {
            wait: local::DECIDING,
            why: Why::Room,
        })
    }

    /// A wait for a Retry-After the records said holds for `held`, plus the run's spread,
    /// with the line saying it (`when`: "before the first attempt", "more"); a stop when it
    /// cannot end before the deadline (`left`).
    fn shared_wait(
        &self,
        held: Duration,
        when: &str,
        left: Option<Duration>,
        rng: &mut dyn Rng,
    ) -> Clear {
        let Some(wait) = wait_for_hold(held, self.spread, left, rng) else {
            return Clear::Stop(Stop::TooLate(HOLD_PAST_DEADLINE.into()));
        };
        let line = format!(
            "waiting {} {when}: {} was told Retry-After",
            fmt_duration(wait),
            self.shared_by
        );
        Clear::Wait {
            wait,
            why: Why::Shared {
                left,
                line: Some(line),
            },
        }
    }

    /// Tell: what was heard. An answer's head lets the transfers waiting for the origin's
    /// first answer go (nothing is said back; under `--fail-early` the head lets nothing
    /// go: its transfer may still fail). The decision about an attempt: under
    /// `--fail-early`, a failure halts the batch. An attempt over: the request is no longer in
    /// flight, and the origin that answered is heard (its Retry-After as read and clamped,
    /// its RateLimit fields); then the records hear that a target that was not ready is up
    /// (the breaker: the line when that closed the circuit), and the Retry-After to share
    /// (on a 429 or 503) or a quota said spent; what a retry would meet comes back. `now`:
    /// when it was heard, on the loop's clock.
    pub fn tell(&self, heard: Heard<'_>, now: Instant) -> Noted {
        let over = match heard {
            Heard::Head { origin, told } => {
                if self.local.release_at_head() {
                    let answer = told.answer(None, self.max_hold);
                    self.local.origins().heard(origin, answer, now);
                }
                return Noted::default();
            }
            Heard::Decided { failed } => {
                self.local.decided(failed);
                return Noted::default();
            }
            Heard::Over(over) => over,
        };
        self.local.deciding();
        let answer = over.told.map(|t| t.answer(over.retry_after, self.max_hold));
        let after = self.local.origins().after(over.origin, answer, now);
        let mut noted = Noted {
            spent: after.spent,
            say_malformed: after.say_malformed,
            paced: after.paced,
            ..Noted::default()
        };
        let Some(records) = &self.records else {
            return noted;
        };
        if over.not_ready {
            noted.closed = records.answered();
        }
        let hint = over.retry_after.map(|(_, clamped)| clamped);
        let shared = hint.filter(|_| !over.last && over.status.is_some_and(shares_hint));
        noted.outlook = records.outlook(shared.max(after.spent));
        noted.probing = records.probing();
        noted
    }

    /// Closes the gate with the run's end: how the attempts ended (`ended`, which says
    /// whether the job's answer was final), the run's outcome once the files at its end
    /// are written, its last error status and Retry-After (`last`), and whether it carried
    /// an Idempotency-Key and sent anything (`(has_key, sent)`). The records hear it for the
    /// breaker and the budget.
    pub fn close(
        &self,
        (ended, outcome): (Outcome, Outcome),
        last: Option<(u16, Option<Duration>)>,
        (has_key, sent): (bool, bool),
    ) {
        if let Some(records) = &self.records {
            records.finish(outcome, last, job_settled(ended), (has_key, sent));
        }
    }
}

/// What `--explain` shows of `--state` for `target` (see `fleet::admission::explain`).
pub fn explain(
    settings: &StateConfig,
    target: (&Url, Option<&Path>),
    job: Option<&Digest>,
    renew: bool,
) -> Vec<String> {
    crate::fleet::admission::explain(settings, target, job, renew)
}
