//! The circuit breaker of one target, as pure decisions of its state and "now": closed,
//! counting consecutive failed runs (exit 4, 5 or 6); open after `--breaker-threshold` of
//! them, refusing at once (exit 7) for `--breaker-cooldown`; then half-open: one run probes
//! with a single attempt under a lease (so a probe that dies does not hold the circuit),
//! while the others keep being refused. Success closes it, failure reopens it. Where the
//! state lives is the `store`'s business.

use crate::fleet::Millis;
use crate::units::millis;
use std::time::Duration;

/// The circuit breaker's state for one target.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Breaker {
    /// Consecutive failed runs.
    pub failures: u32,
    /// When the circuit opened, if it is open (or half-open).
    pub opened_at: Option<Millis>,
    /// Until when a probe holds the half-open circuit.
    pub probe_until: Option<Millis>,
}

/// What the breaker says before a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// Closed: run as configured.
    Run,
    /// Half-open: this run is the probe, with a single attempt.
    Probe,
    /// Open (or a probe is in flight): refuse until then.
    Refuse {
        /// When the next probe may start.
        until: Millis,
        /// Why, for the log.
        why: String,
    },
}

/// How a run ended, as far as the breaker cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunResult {
    /// Exit 0.
    Success,
    /// Exit 4, 5 or 6: the target failed.
    Failure,
    /// Anything else (a 404, a usage error, an interrupt): says nothing about the target.
    Neutral,
}

impl Breaker {
    /// Whether the circuit is open or half-open (a probe may be due).
    pub fn is_open(&self) -> bool {
        self.opened_at.is_some()
    }

    /// Decides whether a run may start at `now`. An open circuit refuses for `cooldown`
    /// after it opened; then the first run to ask is the probe and takes the lease for
    /// `lease` (at least `cooldown`), during which the others are refused.
    pub fn admit(&mut self, now: Millis, cooldown: Duration, lease: Duration) -> Admission {
        let Some(opened) = self.opened_at else {
            return Admission::Run;
        };
        let reopen = opened.saturating_add(millis(cooldown));
        if now < reopen {
            return Admission::Refuse {
                until: reopen,
                why: format!(
                    "the circuit is open after {} failed runs in a row",
                    self.failures
                ),
            };
        }
        if let Some(lease) = self.probe_until.filter(|l| now < *l) {
            return Admission::Refuse {
                until: lease,
                why: "the circuit is half-open and a probe is in flight".into(),
            };
        }
        self.probe_until = Some(now.saturating_add(millis(lease.max(cooldown))));
        Admission::Probe
    }

    /// Records how a run that ended at `now` went: a success closes the circuit; a failure
    /// counts, and opens it when it is the probe's or the `threshold`-th in a row; a neutral
    /// end only frees the probe lease.
    pub fn finish(&mut self, now: Millis, result: RunResult, probe: bool, threshold: u32) {
        match result {
            RunResult::Success => *self = Breaker::default(),
            RunResult::Failure => {
                self.failures = self.failures.saturating_add(1);
                self.probe_until = None;
                if probe || self.failures >= threshold {
                    self.opened_at = Some(now);
                }
            }
            RunResult::Neutral => {
                if probe {
                    self.probe_until = None;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const THRESHOLD: u32 = 3;
    const COOLDOWN: Duration = Duration::from_secs(30);

    #[test]
    fn breaker_opens_after_threshold_then_probes_once() {
        let mut b = Breaker::default();
        for i in 0..3 {
            assert_eq!(b.admit(i, COOLDOWN, Duration::ZERO), Admission::Run);
            b.finish(i, RunResult::Failure, false, THRESHOLD);
        }
        assert!(matches!(
            b.admit(1_000, COOLDOWN, Duration::ZERO),
            Admission::Refuse { until: 30_002, .. }
        ));
        assert_eq!(b.admit(40_000, COOLDOWN, Duration::ZERO), Admission::Probe);
        assert!(
            matches!(
                b.admit(40_001, COOLDOWN, Duration::ZERO),
                Admission::Refuse { .. }
            ),
            "one probe at a time"
        );
        b.finish(41_000, RunResult::Failure, true, THRESHOLD);
        assert!(
            matches!(
                b.admit(42_000, COOLDOWN, Duration::ZERO),
                Admission::Refuse { until: 71_000, .. }
            ),
            "a failed probe reopens"
        );
        assert_eq!(b.admit(80_000, COOLDOWN, Duration::ZERO), Admission::Probe);
        b.finish(80_500, RunResult::Success, true, THRESHOLD);
        assert_eq!(
            b.admit(80_600, COOLDOWN, Duration::ZERO),
            Admission::Run,
            "a successful probe closes"
        );
    }

    #[test]
    fn a_dead_probe_frees_the_circuit_after_its_lease() {
        let mut b = Breaker {
            failures: 5,
            opened_at: Some(0),
            probe_until: None,
        };
        assert_eq!(b.admit(30_000, COOLDOWN, Duration::ZERO), Admission::Probe);
        assert!(matches!(
            b.admit(59_999, COOLDOWN, Duration::ZERO),
            Admission::Refuse { .. }
        ));
        assert_eq!(
            b.admit(60_000, COOLDOWN, Duration::ZERO),
            Admission::Probe,
            "the lease expired"
        );
    }

    #[test]
    fn a_long_lease_holds_the_circuit_and_a_neutral_end_frees_it() {
        let mut b = Breaker {
            failures: 3,
            opened_at: Some(0),
            probe_until: None,
        };
        let lease = Duration::from_secs(120);
        assert_eq!(b.admit(30_000, COOLDOWN, lease), Admission::Probe);
        assert!(matches!(
            b.admit(149_999, COOLDOWN, lease),
            Admission::Refuse { until: 150_000, .. }
        ));
        b.finish(31_000, RunResult::Neutral, true, THRESHOLD);
        assert_eq!(b.admit(31_001, COOLDOWN, lease), Admission::Probe);
        assert!(b.is_open(), "a neutral end says nothing about the target");
    }
}
