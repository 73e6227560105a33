//! The circuit breaker of one target, as pure decisions of its state and "now": closed,
//! counting consecutive failed runs (exit 4, 5 or 6); open after `--breaker-threshold` of
//! them, refusing at once (exit 7) for `--breaker-cooldown`; then half-open: one run probes
//! with a single attempt under a lease (so a probe that dies does not hold the circuit),
//! while the others keep being refused. Success closes it, failure reopens it. An answer
//! that was not ready (`--until-*`) proves the target up: it is a success here, in every
//! state, so a readiness wait and a half-open circuit cannot hold each other. Where the
//! state lives is the `store`'s business.

use crate::Millis;
use crate::units::{fmt_duration, millis};
use std::time::Duration;

/// The longest a probe's lease lasts, unless the cooldown is longer (one hour): a probe that
/// runs for longer lets another run probe beside it. It bounds how far in the future a
/// lease may end (see `Breaker::damage`).
pub const MAX_LEASE: Duration = Duration::from_secs(3600);

/// The longest lease a run with `cooldown` grants: the cooldown or `MAX_LEASE`, whichever is
/// longer.
pub fn longest_lease(cooldown: Duration) -> Duration {
    cooldown.max(MAX_LEASE)
}

/// The circuit breaker's state for one target.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Breaker {
    /// Consecutive failed runs.
    pub failures: u32,
    /// When the circuit opened, if it is open (or half-open).
    pub opened_at: Option<Millis>,
    /// Until when a probe holds the half-open circuit.
    pub probe_until: Option<Millis>,
    /// Which run holds the probe lease (a number it drew), so that only that run's end
    /// frees it: a probe whose lease expired and was taken by a newer probe cannot free the
    /// newer one's when it finishes late.
    pub probe_id: Option<u64>,
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
impl Admission {
    /// The refusal of an open circuit, after `failures` failed runs in a row, until
    /// `until` (when its cooldown ends).
    pub fn open(until: Millis, failures: u32) -> Admission {
        Admission::Refuse {
            until,
            why: format!("the circuit is open after {failures} failed runs in a row"),
        }
    }

    /// The refusal of a half-open circuit whose probe's lease runs until `until`.
    pub fn probing(until: Millis) -> Admission {
        Admission::Refuse {
            until,
            why: "the circuit is half-open and a probe is in flight".into(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunResult {
    /// Exit 0.
    Success,
    /// The target answered, but not ready yet (an `--until-*` condition failed): it is up,
    /// so this is a success for the breaker, whatever its state; not for the retry budget,
    /// which counts only the requests that were served.
    Answered,
    /// Exit 4, 5 or 6: the target failed.
    Failure,
    /// Anything else (a 404, a usage error, an interrupt): says nothing about the target.
    Neutral,
}

impl Breaker {
    /// Whether the circuit is open or half-open (a probe may be due). (Read by the store's
    /// contract tests.)
    pub fn is_open(&self) -> bool {
        self.opened_at.is_some()
    }

    /// Decides whether a run may start at `now`. An open circuit refuses for `cooldown`
    /// after it opened; then the first run to ask is the probe and takes the lease for
    /// `lease` (at least `cooldown`) under its number `id`, during which the others are
    /// refused. The lease never passes `longest_lease(cooldown)`.
    pub fn admit(
        &mut self,
        now: Millis,
        cooldown: Duration,
        lease: Duration,
        id: u64,
    ) -> Admission {
        let Some(opened) = self.opened_at else {
            return Admission::Run;
        };
        let reopen = opened.saturating_add(millis(cooldown));
        if now < reopen {
            return Admission::open(reopen, self.failures);
        }
        if let Some(lease) = self.probe_until.filter(|l| now < *l) {
            return Admission::probing(lease);
        }
        let lease = lease.max(cooldown).min(longest_lease(cooldown));
        self.probe_until = Some(now.saturating_add(millis(lease)));
        self.probe_id = Some(id);
        Admission::Probe
    }

    /// What in the breaker no run could have written by `now`, in words, if anything: a
    /// circuit that opened more than `cooldown` in the future, or a probe lease that ends
    /// later than `longest_lease(cooldown)` from now. Such times come from a clock that was
    /// wrong when they were written, or from an edit; believed, they would refuse the target
    /// for as long as they lie ahead (years, say). Within those spans a time a little ahead
    /// (a clock stepped back by a few seconds) still counts: it refuses no longer than one
    /// cooldown or one lease more.
    pub fn damage(&self, now: Millis, cooldown: Duration) -> Option<String> {
        let ahead = |t: Millis| fmt_duration(Duration::from_millis(t.saturating_sub(now)));
        if let Some(opened) = self
            .opened_at
            .filter(|o| *o > now.saturating_add(millis(cooldown)))
        {
            return Some(format!(
                "its circuit opened {} in the future, more than the cooldown ({}) ahead",
                ahead(opened),
                fmt_duration(cooldown)
            ));
        }
        let longest = longest_lease(cooldown);
        if let Some(until) = self
            .probe_until
            .filter(|p| *p > now.saturating_add(millis(longest)))
        {
            return Some(format!(
                "its probe lease ends {} from now, longer than any lease ({})",
                ahead(until),
                fmt_duration(longest)
            ));
        }
        None
    }

    /// Whether the run numbered `id` holds the probe lease.
    fn holds_lease(&self, id: Option<u64>) -> bool {
        id.is_some() && self.probe_until.is_some() && self.probe_id == id
    }

    /// Records how a run that ended at `now` went; `probe` is the number of the lease it
    /// took, if it was admitted as the probe. A success closes the circuit, whoever's; a
    /// failure counts, and opens it when it is the `threshold`-th in a row or the failure of
    /// the probe that still holds the lease; an answer that was not ready is a success for
    /// the breaker (`RunResult::Answered`). Only that probe's end frees the lease: a probe
    /// whose lease expired and was taken again is then an ordinary run.
    pub fn finish(&mut self, now: Millis, result: RunResult, probe: Option<u64>, threshold: u32) {
        let holder = self.holds_lease(probe);
        match result {
            RunResult::Success | RunResult::Answered => *self = Breaker::default(),
            RunResult::Failure => {
                self.failures = self.failures.saturating_add(1);
                if holder || self.failures >= threshold {
                    self.opened_at = Some(now);
                }
            }
            RunResult::Neutral => {}
        }
        if holder {
            self.probe_until = None;
            self.probe_id = None;
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
            assert_eq!(b.admit(i, COOLDOWN, Duration::ZERO, 1), Admission::Run);
            b.finish(i, RunResult::Failure, None, THRESHOLD);
        }
        assert!(matches!(
            b.admit(1_000, COOLDOWN, Duration::ZERO, 1),
            Admission::Refuse { until: 30_002, .. }
        ));
        assert_eq!(
            b.admit(40_000, COOLDOWN, Duration::ZERO, 1),
            Admission::Probe
        );
        assert!(
            matches!(
                b.admit(40_001, COOLDOWN, Duration::ZERO, 1),
                Admission::Refuse { .. }
            ),
            "one probe at a time"
        );
        b.finish(41_000, RunResult::Failure, Some(1), THRESHOLD);
        assert!(
            matches!(
                b.admit(42_000, COOLDOWN, Duration::ZERO, 1),
                Admission::Refuse { until: 71_000, .. }
            ),
            "a failed probe reopens"
        );
        assert_eq!(
            b.admit(80_000, COOLDOWN, Duration::ZERO, 1),
            Admission::Probe
        );
        b.finish(80_500, RunResult::Success, Some(1), THRESHOLD);
        assert_eq!(
            b.admit(80_600, COOLDOWN, Duration::ZERO, 1),
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
            probe_id: None,
        };
        assert_eq!(
            b.admit(30_000, COOLDOWN, Duration::ZERO, 1),
            Admission::Probe
        );
        assert!(matches!(
            b.admit(59_999, COOLDOWN, Duration::ZERO, 1),
            Admission::Refuse { .. }
        ));
        assert_eq!(
            b.admit(60_000, COOLDOWN, Duration::ZERO, 1),
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
            probe_id: None,
        };
        let lease = Duration::from_secs(120);
        assert_eq!(b.admit(30_000, COOLDOWN, lease, 1), Admission::Probe);
        assert!(matches!(
            b.admit(149_999, COOLDOWN, lease, 1),
            Admission::Refuse { until: 150_000, .. }
        ));
        b.finish(31_000, RunResult::Neutral, Some(1), THRESHOLD);
        assert_eq!(b.admit(31_001, COOLDOWN, lease, 1), Admission::Probe);
        assert!(b.is_open(), "a neutral end says nothing about the target");
    }

    #[test]
    fn times_further_ahead_than_any_run_writes_are_damage() {
        const NOW: Millis = 1_000_000_000;
        let year = 365 * 24 * 3600 * 1000;
        let at = |opened_at: Option<Millis>, probe_until: Option<Millis>| Breaker {
            failures: 5,
            opened_at,
            probe_until,
            probe_id: probe_until.map(|_| 1),
        };
        let cooldown = millis(COOLDOWN);
        let lease = millis(MAX_LEASE);
        // What runs write, a clock a little behind included: believed.
        for fine in [
            at(None, None),
            at(Some(NOW), None),
            at(Some(0), None),
            at(Some(NOW + cooldown), None),
            at(Some(NOW - cooldown), Some(NOW + lease)),
            at(Some(NOW), Some(NOW + 1)),
        ] {
            assert_eq!(fine.damage(NOW, COOLDOWN), None, "{fine:?}");
        }
        // Ahead by more than a cooldown or a lease, whatever else the record says.
        for (bad, said) in [
            (
                at(Some(NOW + cooldown + 1), None),
                "opened 30s in the future",
            ),
            (at(Some(NOW + year), None), "opened 365d in the future"),
            (at(Some(u64::MAX), None), "in the future"),
            (
                at(Some(NOW), Some(NOW + lease + 1)),
                "lease ends 1h from now",
            ),
            (
                at(Some(NOW - cooldown), Some(NOW + year)),
                "lease ends 365d",
            ),
            (at(None, Some(u64::MAX)), "lease ends"),
        ] {
            let why = bad.damage(NOW, COOLDOWN).expect("damage");
            assert!(why.contains(said), "{bad:?}: {why}");
        }
        // A long cooldown allows as long a lease, and an opening as far ahead.
        let long = Duration::from_secs(2 * 3600);
        let b = at(Some(NOW + millis(long)), Some(NOW + millis(long)));
        assert_eq!(b.damage(NOW, long), None);
        assert!(b.damage(NOW, COOLDOWN).is_some());
        // What `admit` grants is never damage, however long the run's lease.
        for (lease, cooldown) in [
            (Duration::ZERO, COOLDOWN),
            (Duration::from_secs(10 * 365 * 24 * 3600), COOLDOWN),
            (Duration::from_secs(10 * 365 * 24 * 3600), long),
        ] {
            let mut b = at(Some(NOW - millis(cooldown)), None);
            assert_eq!(b.admit(NOW, cooldown, lease, 7), Admission::Probe);
            assert_eq!(b.damage(NOW, cooldown), None, "{lease:?} {cooldown:?}");
            assert!(b.probe_until <= Some(NOW + millis(longest_lease(cooldown))));
        }
    }

    #[test]
    fn a_late_probe_cannot_free_a_newer_probes_lease() {
        let mut b = Breaker {
            failures: 5,
            opened_at: Some(0),
            ..Breaker::default()
        };
        assert_eq!(
            b.admit(30_000, COOLDOWN, Duration::ZERO, 1),
            Admission::Probe
        );
        assert_eq!(
            b.admit(60_000, COOLDOWN, Duration::ZERO, 2),
            Admission::Probe,
            "the first lease expired"
        );
        for late in [RunResult::Neutral, RunResult::Failure] {
            let mut after = b.clone();
            after.finish(61_000, late, Some(1), THRESHOLD);
            assert!(
                matches!(
                    after.admit(61_001, COOLDOWN, Duration::ZERO, 3),
                    Admission::Refuse { .. }
                ),
                "{late:?}: the second probe still holds the circuit"
            );
            assert_eq!((after.probe_id, after.probe_until), (Some(2), Some(90_000)));
        }
        b.finish(62_000, RunResult::Failure, Some(2), THRESHOLD);
        assert_eq!((b.opened_at, b.probe_id), (Some(62_000), None), "reopened");
    }

    /// Every state the breaker can be in, as a probe (lease number 1) or another run sees it.
    fn every_state() -> Vec<(&'static str, Breaker, Option<u64>)> {
        let open = |probe_until, probe_id| Breaker {
            failures: THRESHOLD,
            opened_at: Some(0),
            probe_until,
            probe_id,
        };
        vec![
            ("closed, clean", Breaker::default(), None),
            (
                "closed, failures counted",
                Breaker {
                    failures: THRESHOLD - 1,
                    ..Breaker::default()
                },
                None,
            ),
            ("open, in its cooldown", open(None, None), None),
            (
                "half-open, this run the probe",
                open(Some(90_000), Some(1)),
                Some(1),
            ),
            (
                "half-open, another run the probe",
                open(Some(90_000), Some(2)),
                None,
            ),
            (
                "half-open, a late probe",
                open(Some(90_000), Some(2)),
                Some(1),
            ),
            (
                "half-open, lease expired",
                open(Some(30_000), Some(2)),
                None,
            ),
        ]
    }

    #[test]
    fn an_answer_not_ready_is_a_success_in_every_state() {
        for (what, before, probe) in every_state() {
            let mut b = before.clone();
            b.finish(60_000, RunResult::Answered, probe, THRESHOLD);
            assert_eq!(b, Breaker::default(), "{what}: {before:?}");
            assert_eq!(
                b.admit(60_001, COOLDOWN, Duration::ZERO, 3),
                Admission::Run,
                "{what}: the next run is admitted as usual"
            );
            let mut s = before.clone();
            s.finish(60_000, RunResult::Success, probe, THRESHOLD);
            assert_eq!(s, b, "{what}: the same as a success");
        }
    }
}
