//! The seam between the gate and the breaker's and budget's records (`fleet::admission`:
//! the store `--state` names, or a batch's own records in process), as the gate asks them
//! once a run is admitted. Tests put a scripted implementation behind it.

use crate::exit::Outcome;
use crate::fleet::admission::Shared;
use crate::policy::gate::{Clear, Outlook};
use std::time::Duration;

/// What the gate asks the records between the admission and the end of a run.
pub trait Between {
    /// As an attempt's answer is told: shares `share` (its Retry-After on a 429 or 503,
    /// or the hold of a quota it said was spent), then says what a retry would meet
    /// (nothing charged). With nothing to share the records are not asked: the run goes
    /// by what they last told it.
    fn outlook(&self, share: Option<Duration>) -> Outlook;
    /// Just before a retry is sent: a shared Retry-After holds it back (a wait, nothing
    /// charged), or, when `charge`, one retry is taken from the budget (a stop when it has
    /// none left).
    fn send_retry(&self, charge: bool) -> Clear;
    /// The target answered but was not ready: the breaker hears it is up (once per run);
    /// the line saying the circuit closed, when this run was its probe.
    fn answered(&self) -> Option<String>;
    /// Whether the run is still the half-open circuit's probe, kept to a single attempt.
    fn probing(&self) -> bool;
    /// How the run ended (`outcome`, after the files at its end), its last error status
    /// and Retry-After (`last`), whether its job's answer was final (`settled`), whether
    /// it carried an Idempotency-Key and whether it sent anything (`(has_key, sent)`):
    /// recorded for the breaker and the budget.
    fn finish(
        &self,
        outcome: Outcome,
        last: Option<(u16, Option<Duration>)>,
        settled: bool,
        key_sent: (bool, bool),
    );
}

/// A borrowed seam is one too (the gate may hold records it does not own).
impl<T: Between + ?Sized> Between for &T {
    fn outlook(&self, share: Option<Duration>) -> Outlook {
        (**self).outlook(share)
    }

    fn send_retry(&self, charge: bool) -> Clear {
        (**self).send_retry(charge)
    }

    fn answered(&self) -> Option<String> {
        (**self).answered()
    }

    fn probing(&self) -> bool {
        (**self).probing()
    }

    fn finish(
        &self,
        outcome: Outcome,
        last: Option<(u16, Option<Duration>)>,
        settled: bool,
        key_sent: (bool, bool),
    ) {
        (**self).finish(outcome, last, settled, key_sent);
    }
}

/// The records of `--state` (or a batch's own), as `fleet::admission` keeps a run's use of
/// them.
impl Between for Shared<'_> {
    fn outlook(&self, share: Option<Duration>) -> Outlook {
        Shared::outlook(self, share)
    }

    fn send_retry(&self, charge: bool) -> Clear {
        Shared::send_retry(self, charge)
    }

    fn answered(&self) -> Option<String> {
        Shared::answered(self)
    }

    fn probing(&self) -> bool {
        Shared::probing(self)
    }

    fn finish(
        &self,
        outcome: Outcome,
        last: Option<(u16, Option<Duration>)>,
        settled: bool,
        key_sent: (bool, bool),
    ) {
        Shared::finish(self, outcome, last, settled, key_sent);
    }
}
