//! The waits between attempts: the backoff or Retry-After the decision chose (with a
//! countdown on a terminal), a Retry-After another run shared through `--state` (before the
//! first attempt, and again just before a retry is sent), the origin's hold and pacing
//! (`fleet::origins`, asked before every attempt and told after it), and the budget charged
//! as a retry goes. A wait that must end the run instead says how, in the decision's words
//! (`policy::decision::between`).

use crate::exit::Outcome;
use crate::fleet::origins::origin_of;
use crate::policy::decision::{self, Pause};
use crate::policy::gate::{Clear, Why};
use crate::process::interrupt::{Interrupt, Signal};
use crate::report::Reporter;
use crate::request::attempt::{Carry, Loop, Sent};
use rand::Rng;
use std::time::{Duration, Instant};

impl Loop<'_> {
    /// Before the first attempt, the wait for a Retry-After another run shared; `Some` when
    /// the run must end instead (interrupted, or the deadline came nearer meanwhile).
    pub(super) fn wait_for_hold(&self, rng: &mut dyn Rng) -> Option<(Outcome, Option<String>)> {
        self.honour_hold(self.hold?, "before the first attempt", rng)
    }

    /// After a retry's wait (and the origin's hold and pacing), just before it is sent: the
    /// state charges it to the budget now when `charge` (see `policy::decision::charged`:
    /// not to poll an answer that was not ready, nor after a 429 or a spent quota), so that
    /// a retry that is not sent is never charged. A Retry-After that another run was told meanwhile is waited for
    /// first (or stops the run with 5 when it holds past the deadline), as one of the run's
    /// own would be; the deadline or a signal may end the run before anything is charged.
    /// `Some` when the run ends instead, and why.
    pub(super) fn clear_to_send(
        &self,
        charge: bool,
        rng: &mut dyn Rng,
    ) -> Option<(Outcome, Option<String>)> {
        let shared = self.shared?;
        loop {
            if self.deadline_passed() {
                return Some(decision::between(Pause::Deadline));
            }
            match shared.send_retry(charge) {
                Clear::Go => return None,
                Clear::Wait { wait, .. } => {
                    if let Some(stop) = self.honour_hold(wait, "more", rng) {
                        return Some(stop);
                    }
                }
                Clear::Stop(stop) => return Some(decision::stopped(stop)),
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
            return Some(decision::between(Pause::HoldPastDeadline));
        };
        // A batch without --state shares its transfers' store in memory: the Retry-After
        // was told to another transfer of this run, not to another run.
        let in_memory = self
            .cfg
            .state
            .as_ref()
            .is_some_and(|s| s.location.is_memory());
        let who = if in_memory {
            "another transfer of this run"
        } else {
            "another run sharing --state"
        };
        self.reporter.info(&format!(
            "waiting {} {when}: {who} was told Retry-After",
            crate::units::fmt_duration(wait)
        ));
        let sig = self.sleep_visibly(wait, "Retry-After shared by the runs")?;
        Some(decision::between(Pause::Signal(sig.outcome())))
    }

    /// Before an attempt, the first included: asks the origins' table about the origin the
    /// attempt starts at, and waits as it says (a hold, said once per hold; pacing, said
    /// with why; room in flight, silently), interruptibly. `Ok`: send now, to this origin
    /// (counted in flight until `tell_origins`); `Err`: the run ends instead (a wait past
    /// the deadline, in row 12's words; the deadline; a signal).
    pub(super) fn pace(
        &self,
        carry: &Carry,
        rng: &mut dyn Rng,
    ) -> Result<String, (Outcome, Option<String>)> {
        let origin = match &carry.from {
            Some(hop) => origin_of(&hop.url),
            None => origin_of(self.url),
        };
        let spread = self.cfg.retry.retry_after_spread;
        loop {
            if self.deadline_passed() {
                return Err(decision::between(Pause::Deadline));
            }
            let (wait, why) = match self.origins.before_send(
                &origin,
                Instant::now(),
                self.deadline_left(),
                (spread, &mut *rng),
            ) {
                Clear::Go => return Ok(origin),
                Clear::Stop(stop) => return Err(decision::stopped(stop)),
                Clear::Wait { wait, why } => (wait, why),
            };
            let countdown = match why {
                Why::Held(line) => {
                    line.iter().for_each(|l| self.reporter.info(l));
                    format!("requests to {origin} held")
                }
                Why::Pacing(line) => {
                    self.reporter.info(&line);
                    "pacing".to_string()
                }
                Why::Shared { .. } => "Retry-After shared by the runs".to_string(),
                Why::Room => String::new(),
            };
            if let Some(sig) = self.sleep_visibly(wait, &countdown) {
                return Err(decision::between(Pause::Signal(sig.outcome())));
            }
        }
    }

    /// After an attempt: the request `sent` is no longer in flight, and the table hears
    /// what the origin that answered said (its status, its Retry-After as read and
    /// clamped, its RateLimit fields). RateLimit fields that could not be read are said
    /// once per origin; a quota said spent is kept in `carry.spent`.
    pub(super) fn tell_origins(&self, sent: &Sent, carry: &mut Carry) {
        let told = carry.told.take();
        let retry_after = carry
            .reading
            .as_ref()
            .and_then(|r| r.asked.zip(r.hint.map(|h| h.wait)));
        let max_hold = self.cfg.retry.max_retry_after;
        let answer = told.as_ref().map(|t| t.answer(retry_after, max_hold));
        let after = self
            .origins
            .after(&origin_of(&sent.first.url), answer, Instant::now());
        if after.say_malformed {
            for bad in told.iter().flat_map(|t| &t.rate.invalid) {
                self.reporter.warn(&bad.to_string());
            }
        }
        carry.spent = after.spent;
    }

    /// With `--state`, a quota the last answer said was spent holds the other runs too,
    /// shared as a Retry-After is (a retry shares it as it asks the state: see `ask_gate`).
    pub(super) fn share_spent_quota(&self, spent: Option<Duration>) {
        if let (Some(shared), Some(held)) = (self.shared, spent) {
            let _ = shared.before_retry(Some(held), None, false);
        }
    }

    /// Sleeps, showing a countdown on a terminal when the wait is long enough to wonder
    /// about; `Some` when a signal cut it short.
    pub(super) fn sleep_visibly(&self, wait: Duration, why: &str) -> Option<Signal> {
        sleep_visibly(self.reporter, self.interrupt, wait, why)
    }
}

/// Sleeps for `wait`, showing a countdown that says `why` on a terminal when the wait is
/// long enough to wonder about; `Some` when a signal cut it short. The loop's waits and the
/// splay's before the first attempt (see `run`) both sleep here.
pub(super) fn sleep_visibly(
    reporter: &Reporter,
    interrupt: &Interrupt,
    wait: Duration,
    why: &str,
) -> Option<Signal> {
    if !reporter.live() || wait <= Duration::from_secs(2) {
        return interrupt.sleep(wait);
    }
    let end = Instant::now() + wait;
    let result = loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break None;
        }
        // Whole seconds, rounded up; tick when the shown number changes.
        let secs = left.as_secs_f64().ceil() as u64;
        reporter.live_line(&format!("waiting {secs}s: {why}, Ctrl-C to stop"));
        let tick = left.saturating_sub(Duration::from_secs(secs.saturating_sub(1)));
        if let Some(sig) = interrupt.sleep(tick) {
            break Some(sig);
        }
    };
    reporter.clear_live();
    result
}
