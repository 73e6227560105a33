//! The retry budget of one target, as pure decisions of what it remembers and "now" (Google
//! SRE book, "Handling Overload"; gRPC retry throttling; Finagle's RetryBudget): retries
//! within `--budget-window` are limited to `--retry-budget` percent of the successful
//! requests in that window, with a floor of `--budget-floor` retries. Where the budget lives
//! is the `store`'s business.

use crate::fleet::Millis;
use crate::units::millis;
use std::time::Duration;

/// The most timestamps kept per list, so the state stays small under heavy use.
pub const MAX_STAMPS: usize = 10_000;

/// What the retry budget remembers of one target: when requests succeeded and when retries
/// were sent, both within the window (older ones are dropped as the window slides).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Budget {
    /// When successful requests ended.
    pub successes: Vec<Millis>,
    /// When retries were sent.
    pub retries: Vec<Millis>,
}

impl Budget {
    /// Drops timestamps older than `window` before `now`, and the oldest beyond
    /// `MAX_STAMPS` per list.
    pub fn prune(&mut self, now: Millis, window: Duration) {
        let since = now.saturating_sub(millis(window));
        for list in [&mut self.successes, &mut self.retries] {
            list.retain(|t| *t >= since);
            if list.len() > MAX_STAMPS {
                list.drain(..list.len() - MAX_STAMPS);
            }
        }
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.successes.is_empty() && self.retries.is_empty()
    }

    /// Records a successful request that ended at `now`: it earns retries.
    pub fn success(&mut self, now: Millis) {
        self.successes.push(now);
    }

    /// Takes one retry at `now`, or says how the budget is spent: within `window`, the
    /// retries allowed are `percent` (of 100) of the successes, and at least `floor`.
    pub fn take_retry(
        &mut self,
        now: Millis,
        percent: f64,
        window: Duration,
        floor: u32,
    ) -> Result<(), String> {
        self.prune(now, window);
        let earned = (self.successes.len() as f64 * percent / 100.0).floor() as u64;
        let allowed = earned.max(u64::from(floor));
        if self.retries.len() as u64 >= allowed {
            return Err(format!(
                "the retry budget is spent: {} retries in the last {} (allowed: {}% of {} successes, at least {})",
                self.retries.len(),
                humantime::format_duration(window),
                percent,
                self.successes.len(),
                floor
            ));
        }
        self.retries.push(now);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WINDOW: Duration = Duration::from_secs(600);

    #[test]
    fn budget_has_a_floor_and_grows_with_successes() {
        let mut b = Budget::default();
        assert!(b.take_retry(1, 10.0, WINDOW, 2).is_ok());
        assert!(b.take_retry(2, 10.0, WINDOW, 2).is_ok());
        assert!(
            b.take_retry(3, 10.0, WINDOW, 2).is_err(),
            "floor of 2 spent"
        );
        b.successes = (0..50).map(|i| 10 + i).collect();
        for i in 0..3 {
            assert!(
                b.take_retry(100 + i, 10.0, WINDOW, 2).is_ok(),
                "10% of 50 is 5"
            );
        }
        assert!(b.take_retry(200, 10.0, WINDOW, 2).is_err());
        assert!(
            b.take_retry(700_000, 10.0, WINDOW, 2).is_ok(),
            "the window slid past the old retries"
        );
    }

    #[test]
    fn a_spent_budget_says_how() {
        let mut b = Budget {
            successes: vec![5; 10],
            retries: vec![6],
        };
        let why = b.take_retry(7, 10.0, WINDOW, 1).expect_err("1 of 1 spent");
        assert_eq!(
            why,
            "the retry budget is spent: 1 retries in the last 10m (allowed: 10% of 10 successes, at least 1)"
        );
    }

    #[test]
    fn pruning_keeps_the_window_and_at_most_max_stamps() {
        let mut b = Budget {
            successes: (0..MAX_STAMPS as u64 + 10).collect(),
            retries: vec![0, 1_000, 2_000],
        };
        b.prune(2_000, WINDOW);
        assert_eq!(b.successes.len(), MAX_STAMPS);
        assert_eq!(b.successes[0], 10, "the oldest go first");
        b.prune(2_500, Duration::from_secs(1));
        assert_eq!(b.retries, [2_000]);
        b.prune(u64::MAX, Duration::from_secs(1));
        assert!(b.is_empty());
    }
}
