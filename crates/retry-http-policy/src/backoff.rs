//! Capped exponential backoff with jitter, and how the server's Retry-After hint and the
//! deadline shape the wait before the next attempt. Pure: the random source is passed in.
//!
//! Source: AWS Architecture Blog, "Exponential Backoff And Jitter" (2015), for full jitter,
//! equal jitter and decorrelated jitter; RFC 9110 section 10.2.3 for Retry-After.

use rand::{Rng, RngExt};
use std::time::Duration;

/// How the backoff ceiling is turned into a wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jitter {
    /// Full jitter: uniform(0, ceiling).
    Full,
    /// Equal jitter: ceiling/2 + uniform(0, ceiling/2).
    Equal,
    /// Decorrelated jitter: min(cap, uniform(base, previous * 3)); previous starts at base.
    Decorrelated,
    /// No jitter: the ceiling itself (plain exponential backoff).
    None,
    /// Additive: ceiling + uniform(0, spread).
    Additive(Duration),
}

impl Jitter {
    /// The name shown in logs and `--explain`, as accepted by `--jitter`.
    pub fn label(&self) -> String {
        match self {
            Jitter::Full => "full".into(),
            Jitter::Equal => "equal".into(),
            Jitter::Decorrelated => "decorrelated".into(),
            Jitter::None => "none".into(),
            Jitter::Additive(d) => format!("+{}", crate::units::fmt_given(*d)),
        }
    }
}

/// Capped exponential backoff with jitter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The first retry's ceiling (at least 1 ms).
    pub base: Duration,
    /// The largest ceiling (at least `base`).
    pub cap: Duration,
    /// How the ceiling becomes a wait.
    pub jitter: Jitter,
}

/// A wait split in two: the part that must be slept (`floor`) and a random spread on top
/// (`spread`) that may be trimmed to fit a deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Draw {
    /// The part of the wait that must not be shortened.
    pub floor: Duration,
    /// A random addition that exists only to spread clients apart.
    pub spread: Duration,
}

impl Draw {
    /// The whole wait, floor plus spread.
    pub fn total(&self) -> Duration {
        self.floor.saturating_add(self.spread)
    }
}

/// Uniform duration in [0, max], at microsecond resolution.
pub(crate) fn uniform(rng: &mut dyn Rng, max: Duration) -> Duration {
    let micros = max.as_micros().min(u64::MAX as u128) as u64;
    if micros == 0 {
        return Duration::ZERO;
    }
    Duration::from_micros(rng.random_range(0..=micros))
}

/// Uniform duration in [lo, hi] (hi below lo is read as lo).
fn uniform_between(rng: &mut dyn Rng, lo: Duration, hi: Duration) -> Duration {
    lo + uniform(rng, hi.saturating_sub(lo))
}

impl Backoff {
    /// The ceiling of retry `n` (n = 0 for the first retry): min(cap, base * 2^n).
    pub fn ceiling(&self, n: u32) -> Duration {
        let factor = 2u32.checked_pow(n.min(31)).unwrap_or(u32::MAX);
        self.base
            .checked_mul(factor)
            .unwrap_or(Duration::MAX)
            .min(self.cap)
    }

    /// The lowest and highest backoff that retry `n` can draw (for `--explain` and tests).
    /// For decorrelated jitter, previous starts at base, so retry n draws at most
    /// min(cap, base * 3^(n+1)).
    pub fn bounds(&self, n: u32) -> (Duration, Duration) {
        let c = self.ceiling(n);
        match self.jitter {
            Jitter::Full => (Duration::ZERO, c),
            Jitter::Equal => (c / 2, c),
            Jitter::Decorrelated => {
                let grown = 3u32.checked_pow(n.saturating_add(1)).unwrap_or(u32::MAX);
                (
                    self.base.min(self.cap),
                    self.base
                        .checked_mul(grown)
                        .unwrap_or(Duration::MAX)
                        .min(self.cap),
                )
            }
            Jitter::None => (c, c),
            Jitter::Additive(d) => (c, c.saturating_add(d)),
        }
    }

    /// Draws the backoff before retry `n`. `previous` is the last backoff drawn (the base
    /// before the first retry); only decorrelated jitter uses it.
    pub fn draw(&self, n: u32, previous: Duration, rng: &mut dyn Rng) -> Draw {
        let c = self.ceiling(n);
        match self.jitter {
            Jitter::Full => Draw {
                floor: uniform(rng, c),
                spread: Duration::ZERO,
            },
            Jitter::Equal => Draw {
                floor: c / 2 + uniform(rng, c - c / 2),
                spread: Duration::ZERO,
            },
            Jitter::Decorrelated => {
                let hi = previous.saturating_mul(3).max(self.base);
                let d = uniform_between(rng, self.base, hi).min(self.cap);
                Draw {
                    floor: d,
                    spread: Duration::ZERO,
                }
            }
            Jitter::None => Draw {
                floor: c,
                spread: Duration::ZERO,
            },
            Jitter::Additive(d) => Draw {
                floor: c,
                spread: uniform(rng, d),
            },
        }
    }
}

/// Why a wait has the length it has; shown in logs as `wait_reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitReason {
    /// The jittered backoff was the longer of the two.
    Backoff,
    /// The server's Retry-After was the longer.
    RetryAfter,
    /// The server's Retry-After, clamped to `--max-retry-after`, was the longer.
    Clamped,
    /// A Retry-After that another run sharing `--state` was told was the longest.
    Shared,
    /// The backoff would have ended past the deadline: the last attempt's start was drawn
    /// within the time left instead (see `decision`).
    Deadline,
}

impl WaitReason {
    /// The name used in the JSON log.
    pub fn name(self) -> &'static str {
        match self {
            WaitReason::Backoff => "backoff",
            WaitReason::RetryAfter => "retry-after",
            WaitReason::Clamped => "clamped",
            WaitReason::Shared => "shared-retry-after",
            WaitReason::Deadline => "before-deadline",
        }
    }
}

/// The server's hint, already parsed and clamped (see `retry_after`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hint {
    /// The wait the server asked for, after clamping.
    pub wait: Duration,
    /// Whether `--max-retry-after` shortened it.
    pub clamped: bool,
}

/// The wait before the next attempt, with its parts kept apart for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlannedWait {
    /// The wait: floor plus spread.
    pub draw: Draw,
    /// The backoff drawn, whether or not it was the larger part.
    pub backoff: Duration,
    /// Which of backoff and hint decided the wait.
    pub reason: WaitReason,
}

/// Combines the drawn backoff with the server's hint (RFC 9110 section 10.2.3).
///
/// The wait is never shorter than the hint. When the hint exceeds the backoff, clients that
/// got the same hint are spread apart by uniform(0, `retry_after_spread`), except with
/// additive jitter, whose own spread is used instead: max(hint, ceiling) + uniform(0, D).
pub fn plan_wait(
    backoff: &Backoff,
    drawn: Draw,
    hint: Option<Hint>,
    retry_after_spread: Duration,
    rng: &mut dyn Rng,
) -> PlannedWait {
    let backoff_total = drawn.total();
    let Some(hint) = hint.filter(|h| h.wait > drawn.floor) else {
        return PlannedWait {
            draw: drawn,
            backoff: backoff_total,
            reason: WaitReason::Backoff,
        };
    };
    let reason = if hint.clamped {
        WaitReason::Clamped
    } else {
        WaitReason::RetryAfter
    };
    let spread = match backoff.jitter {
        Jitter::Additive(_) => drawn.spread,
        _ => uniform(rng, retry_after_spread),
    };
    PlannedWait {
        draw: Draw {
            floor: hint.wait,
            spread,
        },
        backoff: backoff_total,
        reason,
    }
}

/// What the deadline makes of a planned wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    /// Sleep this long, then try again (the spread may have been trimmed).
    Sleep(Duration),
    /// The floor alone would end at or past the deadline: stop now.
    Stop,
}

/// The least time worth starting an attempt with: a wait whose floor leaves less than this
/// before the deadline would only lead to a certain timeout.
pub const MIN_ATTEMPT: Duration = Duration::from_millis(10);

/// Fits a wait into the time left before the deadline (`None`: no deadline).
///
/// The floor is never shortened: if it does not end at least [`MIN_ATTEMPT`] before the
/// deadline, stop now rather than sleep into a sure failure. The random spread may be
/// trimmed, so far that half the time left after the floor remains for the attempt, and
/// never less than [`MIN_ATTEMPT`].
pub fn fit_to_deadline(wait: Draw, left: Option<Duration>) -> Fit {
    fit_leaving(wait, left, MIN_ATTEMPT)
}

/// [`fit_to_deadline`], leaving `need` (at least [`MIN_ATTEMPT`]) for the attempt that
/// follows the wait instead of [`MIN_ATTEMPT`].
pub fn fit_leaving(wait: Draw, left: Option<Duration>, need: Duration) -> Fit {
    let Some(left) = left else {
        return Fit::Sleep(wait.total());
    };
    let need = need.max(MIN_ATTEMPT);
    if wait.floor.saturating_add(need) >= left {
        return Fit::Stop;
    }
    // The spread keeps half of the slack for the attempt, and never less than the least
    // attempt time (half of a slack under twice that would be less).
    let slack = left - wait.floor;
    let most = (wait.floor + slack / 2).min(left - need);
    Fit::Sleep(wait.total().min(most))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    const MS: Duration = Duration::from_millis(1);

    fn backoff(j: Jitter) -> Backoff {
        Backoff {
            base: 100 * MS,
            cap: 2000 * MS,
            jitter: j,
        }
    }

    /// The additive mode's name writes its spread as the log writes every duration
    /// (`units::fmt_given`: exact); that `--jitter` takes it back is the command's test
    /// (`cli::values`).
    #[test]
    fn an_additive_label_is_written_as_the_log_writes_durations() {
        assert_eq!(
            Jitter::Additive(Duration::from_millis(1500)).label(),
            "+1.5s"
        );
        assert_eq!(Jitter::Additive(Duration::from_millis(20)).label(), "+20ms");
        assert_eq!(Jitter::Additive(Duration::from_secs(90)).label(), "+1m30s");
    }

    #[test]
    fn ceiling_doubles_then_caps() {
        let b = backoff(Jitter::None);
        let got: Vec<u128> = (0..7).map(|n| b.ceiling(n).as_millis()).collect();
        assert_eq!(got, vec![100, 200, 400, 800, 1600, 2000, 2000]);
        assert_eq!(b.ceiling(10_000), 2000 * MS);
    }

    #[test]
    fn draws_stay_within_bounds_over_many_seeds() {
        let modes = [
            Jitter::Full,
            Jitter::Equal,
            Jitter::Decorrelated,
            Jitter::None,
            Jitter::Additive(500 * MS),
        ];
        for mode in modes {
            let b = backoff(mode);
            for seed in 0..300 {
                let mut rng = StdRng::seed_from_u64(seed);
                let mut prev = b.base;
                for n in 0..10 {
                    let d = b.draw(n, prev, &mut rng);
                    let (lo, hi) = b.bounds(n);
                    assert!(d.total() >= lo && d.total() <= hi, "{mode:?} n={n} {d:?}");
                    if mode == Jitter::Decorrelated {
                        assert!(d.total() <= (prev * 3).max(b.base));
                    }
                    prev = d.total();
                }
            }
        }
    }

    #[test]
    fn full_jitter_spreads_over_the_whole_range() {
        let b = backoff(Jitter::Full);
        let mut rng = StdRng::seed_from_u64(7);
        let draws: Vec<Duration> = (0..2000)
            .map(|_| b.draw(3, b.base, &mut rng).total())
            .collect();
        let low = draws.iter().filter(|d| **d < 200 * MS).count();
        let high = draws.iter().filter(|d| **d > 600 * MS).count();
        // Uniform over [0, 800ms]: a quarter below 200ms, a quarter above 600ms.
        assert!((350..650).contains(&low), "{low}");
        assert!((350..650).contains(&high), "{high}");
    }

    #[test]
    fn same_seed_same_draws() {
        let b = backoff(Jitter::Full);
        let run = |seed| {
            let mut rng = StdRng::seed_from_u64(seed);
            (0..5)
                .map(|n| b.draw(n, b.base, &mut rng))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(42), run(42));
        assert_ne!(run(42), run(43));
    }

    #[test]
    fn hint_larger_than_backoff_wins_and_gets_spread() {
        let b = backoff(Jitter::Full);
        let mut rng = StdRng::seed_from_u64(1);
        let drawn = Draw {
            floor: 50 * MS,
            spread: Duration::ZERO,
        };
        let hint = Hint {
            wait: 3000 * MS,
            clamped: false,
        };
        let w = plan_wait(&b, drawn, Some(hint), 1000 * MS, &mut rng);
        assert_eq!(w.reason, WaitReason::RetryAfter);
        assert_eq!(w.draw.floor, 3000 * MS);
        assert!(w.draw.spread <= 1000 * MS);
        let w0 = plan_wait(&b, drawn, Some(hint), Duration::ZERO, &mut rng);
        assert_eq!(w0.draw.total(), 3000 * MS);
    }

    #[test]
    fn smaller_hint_leaves_backoff() {
        let b = backoff(Jitter::Full);
        let mut rng = StdRng::seed_from_u64(1);
        let drawn = Draw {
            floor: 500 * MS,
            spread: Duration::ZERO,
        };
        let hint = Hint {
            wait: 100 * MS,
            clamped: false,
        };
        let w = plan_wait(&b, drawn, Some(hint), 1000 * MS, &mut rng);
        assert_eq!(w.reason, WaitReason::Backoff);
        assert_eq!(w.draw, drawn);
    }

    #[test]
    fn additive_jitter_does_not_add_the_spread_twice() {
        let b = backoff(Jitter::Additive(200 * MS));
        let mut rng = StdRng::seed_from_u64(3);
        let drawn = b.draw(0, b.base, &mut rng);
        let hint = Hint {
            wait: 5000 * MS,
            clamped: true,
        };
        let w = plan_wait(&b, drawn, Some(hint), 1000 * MS, &mut rng);
        assert_eq!(w.reason, WaitReason::Clamped);
        assert_eq!(w.draw.floor, 5000 * MS);
        assert_eq!(w.draw.spread, drawn.spread);
    }

    #[test]
    fn deadline_stops_when_floor_does_not_fit_and_trims_spread() {
        let d = Draw {
            floor: 1000 * MS,
            spread: 500 * MS,
        };
        assert_eq!(fit_to_deadline(d, None), Fit::Sleep(1500 * MS));
        assert_eq!(fit_to_deadline(d, Some(999 * MS)), Fit::Stop);
        assert_eq!(fit_to_deadline(d, Some(1000 * MS)), Fit::Stop);
        assert_eq!(
            fit_to_deadline(d, Some(1005 * MS)),
            Fit::Stop,
            "no time left for an attempt"
        );
        // 200ms of slack: the spread may take half of it, the attempt keeps the rest.
        assert_eq!(fit_to_deadline(d, Some(1200 * MS)), Fit::Sleep(1100 * MS));
        assert_eq!(fit_to_deadline(d, Some(9000 * MS)), Fit::Sleep(1500 * MS));
        // 15ms of slack: half would leave 7.5ms, less than the least attempt; it keeps 10ms.
        assert_eq!(fit_to_deadline(d, Some(1015 * MS)), Fit::Sleep(1005 * MS));
    }
}
