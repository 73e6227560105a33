//! Sleeping visibly: a wait between attempts, or the splay's, with a countdown on a
//! terminal when it is long enough to wonder about.

use crate::process::clock::Clock;
use crate::process::interrupt::{Interrupt, Signal};
use crate::report::Reporter;
use crate::request::attempt::Loop;
use std::time::Duration;

impl Loop<'_> {
    /// Sleeps on the loop's clock, showing a countdown on a terminal when the wait is long
    /// enough to wonder about; `Some` when a signal cut it short.
    pub(super) fn sleep_visibly(&self, wait: Duration, why: &str) -> Option<Signal> {
        sleep_visibly(self.clock, (self.reporter, self.interrupt), wait, why)
    }
}

/// Sleeps for `wait` on `clock`, showing a countdown that says `why` on a terminal when the
/// wait is long enough to wonder about; `Some` when a signal cut it short. The loop's waits
/// and the splay's before the first attempt (see `run`) both sleep here.
pub(super) fn sleep_visibly(
    clock: &dyn Clock,
    (reporter, interrupt): (&Reporter, &Interrupt),
    wait: Duration,
    why: &str,
) -> Option<Signal> {
    if !reporter.live() || wait <= Duration::from_secs(2) {
        return clock.sleep(wait, interrupt);
    }
    let end = clock.now() + wait;
    let result = loop {
        let left = end.saturating_duration_since(clock.now());
        if left.is_zero() {
            break None;
        }
        // Whole seconds, rounded up; tick when the shown number changes.
        let secs = left.as_secs_f64().ceil() as u64;
        reporter.live_line(&format!("waiting {secs}s: {why}, Ctrl-C to stop"));
        let tick = left.saturating_sub(Duration::from_secs(secs.saturating_sub(1)));
        if let Some(sig) = clock.sleep(tick, interrupt) {
            break Some(sig);
        }
    };
    reporter.clear_live();
    result
}
