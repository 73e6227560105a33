//! The retry budget of one target, as pure decisions of what it remembers and "now" (Google
//! SRE book, "Handling Overload"; gRPC retry throttling; Finagle's RetryBudget): retries
//! within `--budget-window` are limited to `--retry-budget` percent of the successful
//! requests in that window, with a floor of `--budget-floor` retries. Where the budget lives
//! is the `store`'s business.
//!
//! The window is remembered in `BUCKETS` buckets of a tenth of the window each, counting the
//! successes and the retries that fell in them, so a record stays a few hundred bytes
//! however busy its target (a fleet's store holds one per target). The price is the window's
//! edge: an event counts for between 0.9 and 1.0 of the window (it leaves with its bucket),
//! an error of at most a tenth of the window. Both stores keep the same buckets, so both
//! make the same decisions.

use crate::fleet::Millis;
use crate::units::millis;
use std::time::Duration;

/// How many buckets a window is cut into.
pub const BUCKETS: u64 = 10;

/// The most buckets a record keeps (more arrive only from a clock set back, or a window
/// that was changed between runs); the oldest go first.
pub const MAX_BUCKETS: usize = 2 * BUCKETS as usize;

/// What happened in one tenth of the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket {
    /// When the bucket began (milliseconds, a multiple of its width).
    pub start: Millis,
    /// Successful requests that ended in it.
    pub successes: u64,
    /// Retries sent in it.
    pub retries: u64,
}

/// What the retry budget remembers of one target: the buckets of the window, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Budget {
    /// The buckets, by `start`, oldest first.
    pub buckets: Vec<Bucket>,
}

/// The width of a bucket of `window`: a tenth of it, at least 1 ms.
pub fn width(window: Duration) -> Millis {
    (millis(window) / BUCKETS).max(1)
}

impl Budget {
    /// Drops the buckets that began `window` or more before `now` (so an event counts for
    /// between nine and ten tenths of the window), and the oldest beyond `MAX_BUCKETS`.
    pub fn prune(&mut self, now: Millis, window: Duration) {
        let since = now.saturating_sub(millis(window));
        self.buckets
            .retain(|b| b.start > since || now < millis(window));
        if self.buckets.len() > MAX_BUCKETS {
            self.buckets.drain(..self.buckets.len() - MAX_BUCKETS);
        }
    }

    /// Drops the buckets that begin more than `window` after `now`, which no run could have
    /// written by then (a clock that was wrong, an edit): believed, their retries would
    /// spend the budget, or their successes fill it, for as long as they lie ahead. A bucket
    /// a little ahead (a clock stepped back) is kept: it leaves within two windows. Returns
    /// how many were dropped.
    pub fn drop_future(&mut self, now: Millis, window: Duration) -> usize {
        let latest = now.saturating_add(millis(window));
        let before = self.buckets.len();
        self.buckets.retain(|b| b.start <= latest);
        before - self.buckets.len()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }

    /// The successes and the retries counted in the window (as pruned).
    pub fn counts(&self) -> (u64, u64) {
        self.buckets.iter().fold((0, 0), |(s, r), b| {
            (s.saturating_add(b.successes), r.saturating_add(b.retries))
        })
    }

    /// The bucket of `now`, made when it is missing.
    fn bucket(&mut self, now: Millis, window: Duration) -> &mut Bucket {
        let w = width(window);
        let start = now - now % w;
        let at = match self.buckets.binary_search_by_key(&start, |b| b.start) {
            Ok(at) => at,
            Err(at) => {
                let fresh = Bucket {
                    start,
                    successes: 0,
                    retries: 0,
                };
                self.buckets.insert(at, fresh);
                at
            }
        };
        &mut self.buckets[at]
    }

    /// Records a successful request that ended at `now`: it earns retries.
    pub fn success(&mut self, now: Millis, window: Duration) {
        self.prune(now, window);
        let b = self.bucket(now, window);
        b.successes = b.successes.saturating_add(1);
    }

    /// The retries allowed now and those already taken, as pruned: `percent` (of 100) of
    /// the successes, and at least `floor`.
    pub fn allowance(&self, percent: f64, floor: u32) -> (u64, u64) {
        let (successes, retries) = self.counts();
        let earned = (successes as f64 * percent / 100.0).floor() as u64;
        (earned.max(u64::from(floor)), retries)
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
        let (allowed, taken) = self.allowance(percent, floor);
        if taken >= allowed {
            return Err(spent(taken, self.counts().0, percent, window, floor));
        }
        let b = self.bucket(now, window);
        b.retries = b.retries.saturating_add(1);
        Ok(())
    }
}

/// Why a retry is refused: `taken` retries in the `window`, against `percent` of
/// `successes` with a floor of `floor`.
pub fn spent(taken: u64, successes: u64, percent: f64, window: Duration, floor: u32) -> String {
    format!(
        "the retry budget is spent: {} retries in the last {} (allowed: {}% of {} successes, at least {})",
        taken,
        crate::units::fmt_given(window),
        percent,
        successes,
        floor
    )
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
        for i in 0..50 {
            b.success(10 + i, WINDOW);
        }
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
        let mut b = Budget::default();
        for _ in 0..10 {
            b.success(5, WINDOW);
        }
        assert!(b.take_retry(6, 10.0, WINDOW, 1).is_ok());
        let why = b.take_retry(7, 10.0, WINDOW, 1).expect_err("1 of 1 spent");
        assert_eq!(
            why,
            "the retry budget is spent: 1 retries in the last 10m (allowed: 10% of 10 successes, at least 1)"
        );
    }

    /// An event counts for nine to ten tenths of the window, never more, never less.
    #[test]
    fn an_event_leaves_the_window_with_its_bucket() {
        let w = width(WINDOW);
        assert_eq!(w, 60_000);
        for at in [1_000_000, 1_000_000 + w - 1, 1_020_000] {
            let mut b = Budget::default();
            b.take_retry(at, 0.0, WINDOW, 1).expect("the floor");
            let start = at - at % w;
            let gone = start + millis(WINDOW);
            let mut still = b.clone();
            assert!(
                still.take_retry(gone - 1, 0.0, WINDOW, 1).is_err(),
                "counted until its bucket leaves ({at})"
            );
            let age = gone - 1 - at;
            assert!(age >= millis(WINDOW) - w && age < millis(WINDOW), "{age}");
            assert!(b.take_retry(gone, 0.0, WINDOW, 1).is_ok(), "gone ({at})");
        }
    }

    #[test]
    fn buckets_stay_few_and_in_order() {
        let mut b = Budget::default();
        for i in 0..100_000u64 {
            b.success(i * 97, WINDOW);
        }
        assert!(
            b.buckets.len() <= BUCKETS as usize + 1,
            "{}",
            b.buckets.len()
        );
        assert!(b.buckets.windows(2).all(|p| p[0].start < p[1].start));
        // A clock set back inserts an older bucket in its place.
        b.success(9_030_000, WINDOW);
        assert!(b.buckets.windows(2).all(|p| p[0].start < p[1].start));
        assert!(b.buckets.len() <= MAX_BUCKETS);
        b.prune(u64::MAX, Duration::from_secs(1));
        assert!(b.is_empty());
    }

    #[test]
    fn buckets_further_ahead_than_the_window_are_dropped() {
        let now = 100 * millis(WINDOW);
        let year = 365 * 24 * 3600 * 1000;
        let mut b = Budget::default();
        for start in [
            now - 1,
            now,
            now + millis(WINDOW),
            now + millis(WINDOW) + 1,
            now + year,
        ] {
            b.buckets.push(Bucket {
                start,
                successes: 0,
                retries: 9,
            });
        }
        assert!(b.take_retry(now, 0.0, WINDOW, 1).is_err(), "before");
        assert_eq!(b.drop_future(now, WINDOW), 2);
        let kept: Vec<Millis> = b.buckets.iter().map(|b| b.start).collect();
        assert_eq!(kept, [now - 1, now, now + millis(WINDOW)]);
        assert_eq!(b.drop_future(now, WINDOW), 0, "nothing left ahead");
        // What is kept leaves within two windows.
        assert!(
            b.take_retry(now + 2 * millis(WINDOW), 0.0, WINDOW, 1)
                .is_ok()
        );
    }
}
