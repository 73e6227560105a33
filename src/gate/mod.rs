//! The gate in front of the attempt loop: the one thing the loop asks before each send
//! ("go, wait this long, or stop, and why": `policy::gate::Clear`) and tells after each
//! answer (its status, Retry-After and RateLimit fields). It has two layers:
//!
//! - the local one, always there: the origins' table of the run (`fleet::origins`: the
//!   Retry-After hold, RateLimit pacing, the requests in flight), one per run, shared by a
//!   batch's transfers;
//! - the shared one, only when there is a store (`fleet::admission`, through the
//!   `Between` seam): the circuit breaker, the retry budget and a Retry-After told to
//!   another run (or, in a batch, to another of its transfers).
//!
//! A send is cleared in three steps, each asked again after its wait until it says go: a
//! Retry-After that the store said still holds (before the first attempt only), the
//! origin's table (the request is then counted in flight), then, before a retry, the
//! store, which charges the retry to the budget as it lets it go. The gate decides and
//! says why; the loop says it, sleeps, and asks again (`request::pause`).

use crate::config::Config;
use crate::fleet::admission::{Between, shares_hint};
use crate::fleet::origins::{After, Origins, Told, origin_key};
use crate::policy::decision::{Ask, HOLD_PAST_DEADLINE, wait_for_hold};
use crate::policy::gate::{Clear, Stop, Why};
use crate::units::fmt_duration;
use rand::Rng;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use url::Url;

/// The gate of one run (one URL, or one transfer of a batch).
pub struct Gate<'a> {
    /// The run's table of origins.
    origins: &'a Origins,
    /// The store's side, with `--state` (or a batch's shared breaker and budget).
    shared: Option<&'a dyn Between>,
    /// A Retry-After the store said still holds this long, before the first attempt.
    hold: Option<Duration>,
    /// `--retry-after-spread`: the spread added to a hold's end.
    spread: Duration,
    /// `--max-retry-after`: the clamp on a Retry-After.
    max_hold: Duration,
    /// Who shared a Retry-After, as the wait says it.
    shared_by: &'static str,
    /// `--unix-socket`: part of every origin's key.
    socket: Option<PathBuf>,
}

/// One send being cleared: the origin it goes to and the step it has reached.
pub struct Ticket {
    /// The key of the origin the attempt starts at ([`Gate::key`]).
    pub origin: String,
    /// Whether the send is a retry, and then whether it is charged to the budget.
    retry: Option<bool>,
    step: Step,
}

/// The steps of clearing a send, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Hold,
    Origin,
    Store,
    Cleared,
}

impl<'a> Gate<'a> {
    /// The gate of a run configured by `cfg`, over its table of `origins` and the store's
    /// side (`shared`, with the Retry-After it said still `hold`s).
    pub fn new(
        cfg: &Config,
        origins: &'a Origins,
        (shared, hold): (Option<&'a dyn Between>, Option<Duration>),
    ) -> Gate<'a> {
        // A batch without --state shares its transfers' breaker and budget in memory: a
        // Retry-After was told to another transfer of this run, not to another run.
        let in_memory = cfg.state.as_ref().is_some_and(|s| s.location.is_memory());
        Gate {
            origins,
            shared,
            hold,
            spread: cfg.retry.retry_after_spread,
            max_hold: cfg.retry.max_retry_after,
            shared_by: if in_memory {
                "another transfer of this run"
            } else {
                "another run sharing --state"
            },
            socket: cfg.request.network.unix_socket.clone(),
        }
    }

    /// The key of the origin of `url` (`fleet::origins::origin_key`, with the run's
    /// `--unix-socket`).
    pub fn key(&self, url: &Url) -> String {
        origin_key(url, self.socket.as_deref())
    }

    /// A send to `url` to clear: the first attempt (`retry` None) or a retry (charged to
    /// the budget when `Some(true)`).
    pub fn ticket(&self, url: &Url, retry: Option<bool>) -> Ticket {
        Ticket {
            origin: self.key(url),
            retry,
            step: if retry.is_none() {
                Step::Hold
            } else {
                Step::Origin
            },
        }
    }

    /// May `t` be sent now (`left`: time left before the deadline; `rng` draws a hold's
    /// spread)? On go the request is in flight until [`Gate::tell`]; a wait is to be slept
    /// and the gate asked again; a stop ends the run, with why.
    pub fn before_send(&self, t: &mut Ticket, left: Option<Duration>, rng: &mut dyn Rng) -> Clear {
        if t.step == Step::Hold {
            t.step = Step::Origin;
            if let Some(held) = self.hold {
                return self.shared_wait(held, "before the first attempt", left, rng);
            }
        }
        if t.step == Step::Origin {
            let now = Instant::now();
            match self
                .origins
                .before_send(&t.origin, now, left, (self.spread, &mut *rng))
            {
                Clear::Go => t.step = Step::Store,
                other => return other,
            }
        }
        let (Some(charge), Some(shared)) = (t.retry, self.shared) else {
            t.step = Step::Cleared;
            return Clear::Go;
        };
        match shared.send_retry(charge) {
            Clear::Wait { wait, .. } => self.shared_wait(wait, "more", left, rng),
            Clear::Go => {
                t.step = Step::Cleared;
                Clear::Go
            }
            stop => stop,
        }
    }

    /// `t` will not be sent (the run ends while it waits): its origin stops counting it in
    /// flight.
    pub fn abandon(&self, t: &Ticket) {
        if t.step == Step::Store {
            self.origins.after(&t.origin, None, Instant::now());
        }
    }

    /// A wait for a Retry-After the store said holds for `held`, plus the run's spread,
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

    /// After an attempt that started at `first`: the request is no longer in flight, and
    /// the table hears what the origin that answered said (`told`, with its Retry-After as
    /// read and clamped, `retry_after`).
    pub fn tell(
        &self,
        first: &Url,
        told: Option<&Told>,
        retry_after: Option<(Duration, Duration)>,
    ) -> After {
        let answer = told.map(|t| t.answer(retry_after, self.max_hold));
        self.origins.after(&self.key(first), answer, Instant::now())
    }

    /// An answer's head arrived for a request that started at `first`: the transfers
    /// waiting for the origin's first answer need not wait for its body.
    pub fn heard(&self, first: &Url, told: &Told) {
        let answer = told.answer(None, self.max_hold);
        self.origins.heard(&self.key(first), answer, Instant::now());
    }

    /// The store's answer about a retry the decision would make: it hears the attempt's
    /// Retry-After (429 and 503), or the hold of a quota the answer said was spent
    /// (`spent`), to share it, and refuses a retry the budget has no room for. Nothing is
    /// charged yet (that is done as the retry is sent). No store: go. `left` says the time
    /// left before the deadline once the store has answered.
    pub fn plan_retry(
        &self,
        ask: Ask,
        spent: Option<Duration>,
        left: &dyn Fn() -> Option<Duration>,
    ) -> Clear {
        let Some(shared) = self.shared else {
            return Clear::Go;
        };
        let hint = ask.hint.filter(|_| ask.status.is_some_and(shares_hint));
        match shared.before_retry(hint.max(spent), ask.left, ask.charge) {
            Clear::Wait {
                wait,
                why: Why::Shared { .. },
            } => Clear::Wait {
                wait,
                why: Why::Shared {
                    left: left(),
                    line: None,
                },
            },
            other => other,
        }
    }

    /// With a store, a quota the last answer said was spent (held this long) holds the
    /// other runs too, shared as a Retry-After is.
    pub fn share_spent(&self, spent: Option<Duration>) {
        if let (Some(shared), Some(held)) = (self.shared, spent) {
            let _ = shared.before_retry(Some(held), None, false);
        }
    }

    /// The target answered but was not ready: the breaker hears the service is up (the
    /// line to say when that closed the circuit).
    pub fn answered(&self) -> Option<String> {
        self.shared.and_then(|s| s.answered())
    }

    /// Whether the run is the half-open circuit's probe, kept to a single attempt.
    pub fn probing(&self) -> bool {
        self.shared.is_some_and(|s| s.probing())
    }
}
