//! The retry budget of one target, as pure decisions of what it remembers and "now" (Google
//! SRE book, "Handling Overload"; gRPC retry throttling; Finagle's RetryBudget): retries
//! within `--budget-window` are limited to `--retry-budget` percent of the successful
//! requests in that window, with a floor of `--budget-floor` retries. Where the budget lives
//! is the `store`'s business.
//!
//! The budget protects the target from a fleet, not from one run, which its attempts and
//! deadline already bound: a run's own retries do not count against it, only other runs'
//! (the rule of `Budget::take_retry`). A run is granted a retry while the retries of the
//! other runs in the window are fewer than the allowance. So the retries in a window stay
//! below `allowed + r` (at most `allowed + r - 1` of them, `r` being the most retries one
//! run makes, `--attempts` - 1, and `allowed` at least 1): at each grant the other runs
//! hold at most `allowed - 1` and the run itself at most `r - 1`. With the defaults (a floor
//! of 3, no successes) and `--attempts 4`, any number of failing runs send at most 5
//! retries per window; a lone run retries as it would without `--state`.
//!
//! The window is remembered in `BUCKETS` buckets of a tenth of the window each, counting the
//! successes and the retries that fell in them, so a record stays a few hundred bytes
//! however busy its target (a fleet's store holds one per target). The price is the window's
//! edge: an event counts for between 0.9 and 1.0 of the window (it leaves with its bucket),
//! an error of at most a tenth of the window. Which run made which retries is kept beside
//! the buckets, one entry per run and bucket (`RunRetries`), at most `MAX_RUNS` of them:
//! past that the oldest entry is dropped, and its retries, still in their bucket, count as
//! other runs' for every run (its own run included), which errs toward the bound, never
//! past it. Both stores keep the same buckets and entries, so both make the same decisions.

use crate::Millis;
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

/// The most entries of `RunRetries` a record keeps: past it, the oldest is dropped (its
/// retries then count as other runs' for every run). A fleet of failing runs sends at most
/// `allowed + r - 1` retries per window, a few entries; only a target whose successes earn
/// more than about 60 retries a window reaches it (10% of 600 successes), and then the runs
/// that retried earliest in the window lose the credit of their own retries.
pub const MAX_RUNS: usize = 64;

/// The retries one run made in one bucket: what keeps a run's own retries from counting
/// against it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunRetries {
    /// The run's number (a random number below 2^53 that each run, and each transfer of a
    /// batch, draws for itself).
    pub run: u64,
    /// The `start` of the bucket the retries are counted in.
    pub start: Millis,
    /// How many retries the run made in that bucket.
    pub retries: u64,
}

/// What the retry budget remembers of one target: the buckets of the window, oldest first,
/// and which run made which of their retries. A record without entries (as every version
/// before them wrote it) counts all of its retries as other runs'.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Budget {
    /// The buckets, by `start`, oldest first.
    pub buckets: Vec<Bucket>,
    /// The runs' retries per bucket, oldest entry first (at most `MAX_RUNS`; only for
    /// buckets still kept).
    pub runs: Vec<RunRetries>,
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
        self.forget_runs_of_gone_buckets();
    }

    /// Drops the entries of `runs` whose bucket is no longer kept: their retries left the
    /// window.
    fn forget_runs_of_gone_buckets(&mut self) {
        let buckets = &self.buckets;
        self.runs
            .retain(|r| buckets.binary_search_by_key(&r.start, |b| b.start).is_ok());
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
        self.forget_runs_of_gone_buckets();
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

    /// The retries of the window (as pruned) that `run` made: per bucket, what its entries
    /// say, and never more than the bucket's retries (a record edited by hand cannot make
    /// a run's own retries more than there are).
    pub fn own(&self, run: u64) -> u64 {
        self.buckets.iter().fold(0, |sum: u64, b| {
            let said = self
                .runs
                .iter()
                .filter(|r| r.run == run && r.start == b.start)
                .fold(0, |n: u64, r| n.saturating_add(r.retries));
            sum.saturating_add(said.min(b.retries))
        })
    }

    /// The retries of the window (as pruned) made by runs other than `run`: what counts
    /// against it. An entry dropped past `MAX_RUNS`, or a record written before runs were
    /// told apart, leaves retries no run claims: they count as other runs'.
    pub fn others(&self, run: u64) -> u64 {
        self.counts().1.saturating_sub(self.own(run))
    }

    /// Counts one retry of `run` in the bucket starting at `start`, dropping the oldest
    /// entry past `MAX_RUNS`.
    fn charge(&mut self, run: u64, start: Millis) {
        match self
            .runs
            .iter_mut()
            .find(|r| r.run == run && r.start == start)
        {
            Some(r) => r.retries = r.retries.saturating_add(1),
            None => {
                self.runs.push(RunRetries {
                    run,
                    start,
                    retries: 1,
                });
                if self.runs.len() > MAX_RUNS {
                    self.runs.remove(0);
                }
            }
        }
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

    /// The retries allowed now and those already taken by all runs, as pruned: `percent`
    /// (of 100) of the successes, and at least `floor`.
    pub fn allowance(&self, percent: f64, floor: u32) -> (u64, u64) {
        let (successes, retries) = self.counts();
        let earned = (successes as f64 * percent / 100.0).floor() as u64;
        (earned.max(u64::from(floor)), retries)
    }

    /// Takes one retry for `run` at `now`, or says how the budget is spent: within
    /// `window`, the retries allowed are `percent` (of 100) of the successes, and at least
    /// `floor`; the retry is granted while the other runs' retries in the window are fewer
    /// (`run`'s own do not count).
    pub fn take_retry(
        &mut self,
        now: Millis,
        percent: f64,
        window: Duration,
        floor: u32,
        run: u64,
    ) -> Result<(), String> {
        self.prune(now, window);
        let (allowed, _) = self.allowance(percent, floor);
        let taken = self.others(run);
        if taken >= allowed {
            return Err(spent(taken, self.counts().0, percent, window, floor));
        }
        let b = self.bucket(now, window);
        b.retries = b.retries.saturating_add(1);
        let start = b.start;
        self.charge(run, start);
        Ok(())
    }
}

/// Why a retry is refused: `taken` retries by other runs in the `window`, against `percent`
/// of `successes` with a floor of `floor`.
pub fn spent(taken: u64, successes: u64, percent: f64, window: Duration, floor: u32) -> String {
    format!(
        "the retry budget is spent: {} retries by other runs in the last {} (allowed: {}% of {} successes, at least {})",
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

    // In the tests written before runs were told apart, each retry is a run's own, the run
    // numbered by the time it retries at: every retry counts against the next one.
    const WINDOW: Duration = Duration::from_secs(600);

    /// The most retries in the window a fleet of `runs` runs, each making at most `r`,
    /// gets from a budget of `floor` (no successes), over many orders of their asks: each
    /// order a run picked at every step by a small generator seeded with `seed`.
    fn most_granted(runs: u64, r: u64, floor: u32, seed: u64) -> u64 {
        let mut b = Budget::default();
        let mut made = vec![0u64; runs as usize];
        let mut x = seed | 1;
        let mut granted = 0;
        for step in 0..runs * r * 4 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let run = x % runs;
            if made[run as usize] == r {
                continue;
            }
            if b.take_retry(1_000 + step, 0.0, WINDOW, floor, run).is_ok() {
                made[run as usize] += 1;
                granted += 1;
            }
        }
        // Then every run asks until it is refused or has made all of its retries.
        for run in 0..runs {
            while made[run as usize] < r && b.take_retry(9_000, 0.0, WINDOW, floor, run).is_ok() {
                made[run as usize] += 1;
                granted += 1;
            }
        }
        assert_eq!(granted, b.counts().1);
        granted
    }

    /// The bound of the module's head, over a product of floors, retries per run, fleet
    /// sizes and orders: never more than `floor + r - 1` retries in a window, at least the
    /// floor once the fleet wants that many, and a lone run gets all of its `r`.
    #[test]
    fn a_fleet_gets_at_most_the_allowance_plus_one_run_s_retries_less_one() {
        for floor in 1..=5u32 {
            for r in 1..=6u64 {
                assert_eq!(most_granted(1, r, floor, 7), r, "a lone run, {floor} {r}");
                for runs in [2, 3, 10, 100] {
                    let bound = u64::from(floor) + r - 1;
                    for seed in 1..40 {
                        let got = most_granted(runs, r, floor, seed);
                        assert!(got <= bound, "{runs} runs x {r}, floor {floor}: {got}");
                        assert!(got >= u64::from(floor).min(runs * r), "{got}");
                    }
                }
            }
        }
        // The bound is reached: run 0 takes r - 1, run 1 then takes what the floor leaves
        // it and all of its own; run 0's last is refused.
        let mut b = Budget::default();
        for t in 0..2 {
            b.take_retry(t, 0.0, WINDOW, 3, 0).expect("own retries");
        }
        for t in 2..5 {
            b.take_retry(t, 0.0, WINDOW, 3, 1)
                .expect("2 by others, fewer than 3");
        }
        assert!(b.take_retry(5, 0.0, WINDOW, 3, 0).is_err(), "3 by others");
        assert_eq!(b.counts().1, 3 + 3 - 1);
    }

    /// A run's own retries never count against it, however many; another run's do, and a
    /// record without entries (as earlier versions wrote it) counts all its retries as
    /// other runs'.
    #[test]
    fn a_run_s_own_retries_do_not_count_against_it() {
        let mut b = Budget::default();
        for t in 0..100 {
            b.take_retry(t, 10.0, WINDOW, 3, 42).expect("a lone run");
        }
        assert_eq!((b.own(42), b.others(42), b.others(7)), (100, 0, 100));
        let why = b
            .take_retry(200, 10.0, WINDOW, 3, 7)
            .expect_err("another run");
        assert!(why.contains("100 retries by other runs"), "{why}");
        let mut old = b.clone();
        old.runs.clear();
        assert!(
            old.take_retry(200, 10.0, WINDOW, 3, 42).is_err(),
            "no run ids"
        );
        // An entry claiming more than its bucket holds claims only the bucket.
        let mut edited = b.clone();
        edited.runs[0].retries = 1_000_000;
        assert_eq!(edited.own(42), 100);
        // The run's entries leave with their buckets, and then so does the record's memory
        // of the run.
        b.prune(700_000, WINDOW);
        assert!(b.runs.is_empty() && b.is_empty(), "{b:?}");
    }

    /// Past `MAX_RUNS` entries the oldest is dropped: its run's retries then count against
    /// it too, so the run is refused sooner, never later.
    #[test]
    fn entries_past_the_cap_count_as_other_runs_retries() {
        let mut b = Budget::default();
        for _ in 0..1_000 {
            b.success(1, WINDOW);
        }
        // 1,000 successes at 10%: 100 retries allowed, a retry each for 100 runs.
        for run in 0..100u64 {
            b.take_retry(2 + run, 10.0, WINDOW, 3, run)
                .expect("within 100");
            assert!(b.runs.len() <= MAX_RUNS);
        }
        assert_eq!(b.runs.len(), MAX_RUNS);
        assert_eq!(b.runs[0].run, 100 - MAX_RUNS as u64, "the oldest dropped");
        assert_eq!(
            (b.own(0), b.others(0)),
            (0, 100),
            "dropped: others' for it too"
        );
        assert_eq!((b.own(99), b.others(99)), (1, 99));
        assert!(b.take_retry(300, 10.0, WINDOW, 3, 0).is_err());
        assert!(b.take_retry(300, 10.0, WINDOW, 3, 99).is_ok());
    }

    #[test]
    fn budget_has_a_floor_and_grows_with_successes() {
        let mut b = Budget::default();
        assert!(b.take_retry(1, 10.0, WINDOW, 2, 1).is_ok());
        assert!(b.take_retry(2, 10.0, WINDOW, 2, 2).is_ok());
        assert!(
            b.take_retry(3, 10.0, WINDOW, 2, 3).is_err(),
            "floor of 2 spent"
        );
        for i in 0..50 {
            b.success(10 + i, WINDOW);
        }
        for i in 0..3 {
            assert!(
                b.take_retry(100 + i, 10.0, WINDOW, 2, 100 + i).is_ok(),
                "10% of 50 is 5"
            );
        }
        assert!(b.take_retry(200, 10.0, WINDOW, 2, 200).is_err());
        assert!(
            b.take_retry(700_000, 10.0, WINDOW, 2, 700_000).is_ok(),
            "the window slid past the old retries"
        );
    }

    #[test]
    fn a_spent_budget_says_how() {
        let mut b = Budget::default();
        for _ in 0..10 {
            b.success(5, WINDOW);
        }
        assert!(b.take_retry(6, 10.0, WINDOW, 1, 6).is_ok());
        let why = b
            .take_retry(7, 10.0, WINDOW, 1, 7)
            .expect_err("1 of 1 spent");
        assert_eq!(
            why,
            "the retry budget is spent: 1 retries by other runs in the last 10m (allowed: 10% of 10 successes, at least 1)"
        );
    }

    /// An event counts for nine to ten tenths of the window, never more, never less.
    #[test]
    fn an_event_leaves_the_window_with_its_bucket() {
        let w = width(WINDOW);
        assert_eq!(w, 60_000);
        for at in [1_000_000, 1_000_000 + w - 1, 1_020_000] {
            let mut b = Budget::default();
            b.take_retry(at, 0.0, WINDOW, 1, at).expect("the floor");
            let start = at - at % w;
            let gone = start + millis(WINDOW);
            let mut still = b.clone();
            assert!(
                still
                    .take_retry(gone - 1, 0.0, WINDOW, 1, gone - 1)
                    .is_err(),
                "counted until its bucket leaves ({at})"
            );
            let age = gone - 1 - at;
            assert!(age >= millis(WINDOW) - w && age < millis(WINDOW), "{age}");
            assert!(
                b.take_retry(gone, 0.0, WINDOW, 1, gone).is_ok(),
                "gone ({at})"
            );
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
        assert!(b.take_retry(now, 0.0, WINDOW, 1, now).is_err(), "before");
        assert_eq!(b.drop_future(now, WINDOW), 2);
        let kept: Vec<Millis> = b.buckets.iter().map(|b| b.start).collect();
        assert_eq!(kept, [now - 1, now, now + millis(WINDOW)]);
        assert_eq!(b.drop_future(now, WINDOW), 0, "nothing left ahead");
        // What is kept leaves within two windows.
        assert!(
            b.take_retry(
                now + 2 * millis(WINDOW),
                0.0,
                WINDOW,
                1,
                now + 2 * millis(WINDOW)
            )
            .is_ok()
        );
    }
}
