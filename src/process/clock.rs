//! The attempt loop's clock: the one place where the loop reads the time it decides by
//! (the deadline left, how long an attempt took, the origin's holds and pacing the gate
//! keeps, the date a Retry-After or a RateLimit reset is counted from) and sleeps its
//! waits (a backoff, a Retry-After, a hold, pacing). A run uses [`Real`], the machine's
//! clock; the loop's unit tests use a scripted clock that passes a wait at once and keeps
//! it, so the loop's arithmetic is proved without waiting for it.

use crate::process::interrupt::{Interrupt, Signal};
use std::time::{Duration, Instant, SystemTime};

/// What the attempt loop reads the time from and sleeps with.
pub trait Clock: Sync {
    /// The time now, for the durations the loop measures (its deadline counts from the
    /// process's start, an `Instant` of the same clock).
    fn now(&self) -> Instant;

    /// The date now, for a date a server sent (an HTTP-date Retry-After, a RateLimit
    /// reset given as a date).
    fn date(&self) -> SystemTime;

    /// Sleeps for `wait` unless `interrupt` fires first; `Some`: the signal that cut the
    /// wait short (at once, whatever was left of it).
    fn sleep(&self, wait: Duration, interrupt: &Interrupt) -> Option<Signal>;
}

/// The machine's clock: `Instant::now`, `SystemTime::now`, and a sleep that a signal
/// wakes at once (`Interrupt::sleep`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Real;

impl Clock for Real {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn date(&self) -> SystemTime {
        SystemTime::now()
    }

    fn sleep(&self, wait: Duration, interrupt: &Interrupt) -> Option<Signal> {
        interrupt.sleep(wait)
    }
}
