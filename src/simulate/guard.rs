//! The client strategies of the overload and failure-rate models: how a run decides whether
//! to start, whether to retry and how long to wait, and what it records when it ends. The
//! per-client breaker and the two fleet-wide strategies run the very code `--state` runs
//! (`record::Target`: the circuit breaker and the retry budget), fed the simulated time
//! instead of a store's clock; the waits come from `policy::Backoff`, as the client's do.

use crate::fleet::Millis;
use crate::fleet::breaker::{Admission, RunResult};
use crate::fleet::record::{Limits, Target};
use crate::policy::{Backoff, Jitter};
use rand::Rng;
use std::time::Duration;

/// A client strategy, by the name `--strategies` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// One try per run.
    NoRetry,
    /// Immediate retries, up to the attempts.
    Retries,
    /// A constant pause of the base between tries.
    Fixed,
    /// Capped exponential backoff, no jitter.
    Exponential,
    /// Capped exponential backoff, full jitter (the client's default).
    Full,
    /// Equal jitter.
    Equal,
    /// Decorrelated jitter.
    Decorrelated,
    /// Full jitter, each retry paid from a token bucket of the client's own.
    Bucket,
    /// Full jitter behind a circuit breaker of the client's own, as client libraries build
    /// it: no retry while more than a tenth of its last 20 calls failed (first tries go on).
    Breaker,
    /// Full jitter, each retry asked of one retry budget shared by the fleet.
    SharedBudget,
    /// Full jitter behind one circuit breaker shared by the fleet: `--state`'s, which
    /// refuses whole runs while open and lets one probe through when half-open.
    SharedBreaker,
}

impl Strategy {
    /// Every strategy, in the order of the report.
    pub const ALL: [Strategy; 11] = [
        Strategy::NoRetry,
        Strategy::Retries,
        Strategy::Fixed,
        Strategy::Exponential,
        Strategy::Full,
        Strategy::Equal,
        Strategy::Decorrelated,
        Strategy::Bucket,
        Strategy::Breaker,
        Strategy::SharedBudget,
        Strategy::SharedBreaker,
    ];

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::NoRetry => "no-retry",
            Strategy::Retries => "retries",
            Strategy::Fixed => "fixed",
            Strategy::Exponential => "exponential",
            Strategy::Full => "full",
            Strategy::Equal => "equal",
            Strategy::Decorrelated => "decorrelated",
            Strategy::Bucket => "bucket",
            Strategy::Breaker => "breaker",
            Strategy::SharedBudget => "shared-budget",
            Strategy::SharedBreaker => "shared-breaker",
        }
    }

    /// Reads a name.
    pub fn parse(s: &str) -> Result<Strategy, String> {
        let s = s.trim();
        Strategy::ALL
            .into_iter()
            .find(|x| x.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Strategy::ALL.iter().map(|x| x.name()).collect();
                format!(
                    "unknown strategy {s:?}: expected one of {}",
                    names.join(", ")
                )
            })
    }
}

/// `part / whole`, and 1 when there is no whole (no run ended, no first try: nothing failed
/// and nothing was multiplied): the success rate and the amplification of both models.
pub fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        1.0
    } else {
        part as f64 / whole as f64
    }
}

/// The calls a per-client breaker remembers.
const WINDOW: usize = 20;

/// The settings the strategies share: the backoff, the breaker's and the budget's limits,
/// and the token bucket's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Tries per run, the first included.
    pub attempts: u32,
    /// Backoff base (the pause of `fixed`) and cap.
    pub base: Duration,
    pub cap: Duration,
    /// The breaker's and the budget's settings, as `--state` takes them.
    pub limits: Limits,
    /// The token bucket: tokens it holds at most (and starts with), what a retry costs
    /// (1), what a success earns.
    pub bucket_size: f64,
    pub bucket_refill: f64,
}

impl Default for Settings {
    /// 3 tries, base 100 ms, cap 2 s; breaker: 5 failed runs, 5 s cooldown; budget: 10% of
    /// the successes in 10 s, floor 10; bucket: 10 tokens, 0.1 per success.
    fn default() -> Self {
        Settings {
            attempts: 3,
            base: Duration::from_millis(100),
            cap: Duration::from_secs(2),
            limits: Limits {
                threshold: 5,
                cooldown: Duration::from_secs(5),
                budget_pct: 10.0,
                window: Duration::from_secs(10),
                floor: 10,
                ttl: Duration::from_secs(24 * 3600),
            },
            bucket_size: 10.0,
            bucket_refill: 0.1,
        }
    }
}

/// The strategy's state for a fleet of `clients`: per client, or one for all.
pub struct Guard {
    strategy: Strategy,
    settings: Settings,
    backoff: Backoff,
    /// The fleet's one record (the shared strategies).
    records: Vec<Target>,
    /// Per client, the outcomes of its last `WINDOW` calls (the per-client breaker).
    recent: Vec<std::collections::VecDeque<bool>>,
    /// Per-client token buckets.
    tokens: Vec<f64>,
    /// Probe numbers handed out.
    probes: u64,
}

/// What a strategy says before a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Send, with this many tries at most.
    Go(u32),
    /// The probe of a half-open circuit (one try), under this lease number.
    Probe(u64),
    /// Refused: the circuit is open.
    Refused,
}

impl Guard {
    /// The state of `strategy` for `clients` clients.
    pub fn new(strategy: Strategy, settings: Settings, clients: u32) -> Guard {
        let jitter = match strategy {
            Strategy::Exponential => Jitter::None,
            Strategy::Equal => Jitter::Equal,
            Strategy::Decorrelated => Jitter::Decorrelated,
            _ => Jitter::Full,
        };
        let shared = matches!(strategy, Strategy::SharedBudget | Strategy::SharedBreaker);
        let records = vec![Target::default(); usize::from(shared)];
        let recent = if strategy == Strategy::Breaker {
            vec![std::collections::VecDeque::new(); clients as usize]
        } else {
            Vec::new()
        };
        let tokens = if strategy == Strategy::Bucket {
            vec![settings.bucket_size; clients as usize]
        } else {
            Vec::new()
        };
        Guard {
            strategy,
            settings,
            backoff: Backoff {
                base: settings.base,
                cap: settings.cap,
                jitter,
            },
            records,
            recent,
            tokens,
            probes: 0,
        }
    }

    fn record(&mut self) -> Option<&mut Target> {
        self.records.first_mut()
    }

    /// Whether `client` may start a run at `now` (ms), and with how many tries.
    pub fn start(&mut self, client: u32, now: Millis, lease: Duration) -> Start {
        let attempts = if self.strategy == Strategy::NoRetry {
            1
        } else {
            self.settings.attempts
        };
        if self.strategy != Strategy::SharedBreaker {
            return Start::Go(attempts);
        }
        let _ = client;
        self.probes += 1;
        let id = self.probes;
        let limits = self.settings.limits;
        let Some(t) = self.record() else {
            return Start::Go(attempts);
        };
        match t.admit(now, &limits, lease, id) {
            Admission::Run => Start::Go(attempts),
            Admission::Probe => Start::Probe(id),
            Admission::Refuse { .. } => Start::Refused,
        }
    }

    /// Whether `client` may retry at `now` after try `tried` failed (the budget or the bucket
    /// may refuse); the wait before it when it may (`previous`: the last backoff drawn).
    pub fn retry(
        &mut self,
        client: u32,
        now: Millis,
        tried: u32,
        previous: Duration,
        rng: &mut dyn Rng,
    ) -> Option<Duration> {
        match self.strategy {
            Strategy::Bucket => {
                let t = self.tokens.get_mut(client as usize)?;
                if *t < 1.0 {
                    return None;
                }
                *t -= 1.0;
            }
            Strategy::SharedBudget => {
                let limits = self.settings.limits;
                self.records.first_mut()?.take_retry(now, &limits).ok()?;
            }
            Strategy::Breaker => {
                let recent = self.recent.get(client as usize)?;
                let failed = recent.iter().filter(|ok| !**ok).count();
                if failed * 10 > recent.len() {
                    return None;
                }
            }
            _ => {}
        }
        Some(match self.strategy {
            Strategy::Retries => Duration::ZERO,
            Strategy::Fixed => self.settings.base,
            _ => self
                .backoff
                .draw(tried.saturating_sub(1), previous, rng)
                .total(),
        })
    }

    /// Notes how one of `client`'s calls went (the per-client breaker's window).
    pub fn observe(&mut self, client: u32, ok: bool) {
        if let Some(recent) = self.recent.get_mut(client as usize) {
            recent.push_back(ok);
            if recent.len() > WINDOW {
                recent.pop_front();
            }
        }
    }

    /// Records how `client`'s run ended at `now` (`probe`: its lease, if it probed).
    pub fn finish(&mut self, client: u32, now: Millis, success: bool, probe: Option<u64>) {
        if success && self.strategy == Strategy::Bucket {
            let (size, refill) = (self.settings.bucket_size, self.settings.bucket_refill);
            if let Some(t) = self.tokens.get_mut(client as usize) {
                *t = (*t + refill).min(size);
            }
        }
        let limits = self.settings.limits;
        let result = if success {
            RunResult::Success
        } else {
            RunResult::Failure
        };
        if let Some(t) = self.record() {
            t.finish(now, result, probe, &limits);
        }
    }

    /// The backoff base the strategy grows from (decorrelated jitter's first `previous`).
    pub fn base(&self) -> Duration {
        self.settings.base
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn names_round_trip() {
        for s in Strategy::ALL {
            assert_eq!(Strategy::parse(s.name()), Ok(s));
        }
        assert!(Strategy::parse("jittery").is_err());
    }

    #[test]
    fn the_shared_budget_is_the_state_budget() {
        let mut g = Guard::new(Strategy::SharedBudget, Settings::default(), 100);
        let rng = &mut StdRng::seed_from_u64(1);
        let granted = (0..50)
            .filter(|i| g.retry(i % 100, 1_000, 1, Duration::ZERO, rng).is_some())
            .count();
        assert_eq!(granted, 10, "the floor, fleet-wide");
        for i in 0..200 {
            g.finish(i % 100, 2_000, true, None);
        }
        let granted = (0..50)
            .filter(|i| g.retry(*i, 2_000, 1, Duration::ZERO, rng).is_some())
            .count();
        assert_eq!(granted, 10, "10% of 200 successes, 10 already taken");
    }

    #[test]
    fn a_shared_breaker_opens_for_the_fleet_and_probes_once() {
        let mut g = Guard::new(Strategy::SharedBreaker, Settings::default(), 10);
        let lease = Duration::from_secs(10);
        for c in 0..5 {
            assert_eq!(g.start(c, 0, lease), Start::Go(3));
            g.finish(c, 0, false, None);
        }
        assert_eq!(g.start(7, 1_000, lease), Start::Refused);
        assert!(matches!(g.start(8, 6_000, lease), Start::Probe(_)));
        assert_eq!(g.start(9, 6_001, lease), Start::Refused, "one probe");
    }

    #[test]
    fn a_client_breaker_stops_retries_while_its_calls_fail() {
        let mut g = Guard::new(Strategy::Breaker, Settings::default(), 2);
        let rng = &mut StdRng::seed_from_u64(1);
        assert!(
            g.retry(0, 0, 1, Duration::ZERO, rng).is_some(),
            "nothing seen yet"
        );
        for _ in 0..9 {
            g.observe(0, true);
        }
        g.observe(0, false);
        assert!(
            g.retry(0, 0, 1, Duration::ZERO, rng).is_some(),
            "1 of 10 failed"
        );
        g.observe(0, false);
        assert!(g.retry(0, 0, 1, Duration::ZERO, rng).is_none(), "2 of 11");
        assert!(
            g.retry(1, 0, 1, Duration::ZERO, rng).is_some(),
            "its own window"
        );
    }

    #[test]
    fn a_bucket_pays_for_retries_and_refills_on_success() {
        let s = Settings {
            bucket_size: 2.0,
            bucket_refill: 0.5,
            ..Settings::default()
        };
        let mut g = Guard::new(Strategy::Bucket, s, 2);
        let rng = &mut StdRng::seed_from_u64(1);
        assert!(g.retry(0, 0, 1, Duration::ZERO, rng).is_some());
        assert!(g.retry(0, 0, 2, Duration::ZERO, rng).is_some());
        assert!(g.retry(0, 0, 1, Duration::ZERO, rng).is_none(), "spent");
        assert!(
            g.retry(1, 0, 1, Duration::ZERO, rng).is_some(),
            "its own bucket"
        );
        g.finish(0, 0, true, None);
        g.finish(0, 0, true, None);
        assert!(g.retry(0, 0, 1, Duration::ZERO, rng).is_some(), "refilled");
    }

    /// The waits each strategy draws before retry 1 and retry 2 (base 100 ms, cap 2 s):
    /// none for `retries`, the base for `fixed`, the doubling ceiling for `exponential`,
    /// and the jitter modes within their bounds; `no-retry` starts runs of one try.
    #[test]
    fn each_strategy_waits_as_its_name_says() {
        let rng = &mut StdRng::seed_from_u64(3);
        let ms = Duration::from_millis;
        let s = Settings::default();
        let waits = |strategy: Strategy, rng: &mut StdRng| -> Vec<Duration> {
            let mut g = Guard::new(strategy, s, 1);
            (1..=2)
                .flat_map(|tried| {
                    (0..200)
                        .map(|_| g.retry(0, 0, tried, ms(100), rng).expect("no limit"))
                        .collect::<Vec<_>>()
                })
                .collect()
        };
        assert!(waits(Strategy::Retries, rng).iter().all(|w| w.is_zero()));
        assert!(waits(Strategy::Fixed, rng).iter().all(|w| *w == ms(100)));
        let exp = waits(Strategy::Exponential, rng);
        assert!(exp[..200].iter().all(|w| *w == ms(100)));
        assert!(exp[200..].iter().all(|w| *w == ms(200)));
        for (strategy, lo) in [(Strategy::Full, 0), (Strategy::Equal, 50)] {
            let w = waits(strategy, rng);
            assert!(w[..200].iter().all(|w| (ms(lo)..=ms(100)).contains(w)));
            assert!(w[200..].iter().all(|w| (ms(2 * lo)..=ms(200)).contains(w)));
            assert!(w.iter().any(|x| *x > ms(150)), "{}", strategy.name());
        }
        assert!(
            waits(Strategy::Decorrelated, rng)
                .iter()
                .all(|w| (ms(100)..=ms(300)).contains(w))
        );
        let mut g = Guard::new(Strategy::NoRetry, s, 1);
        assert_eq!(g.start(0, 0, Duration::ZERO), Start::Go(1));
        let mut g = Guard::new(Strategy::Full, s, 1);
        assert_eq!(g.start(0, 0, Duration::ZERO), Start::Go(3));
    }

    /// The shared breaker is the fleet's: failures of different clients add up, a success
    /// of any client resets the count (the run's record, `--state`'s rule).
    #[test]
    fn the_shared_breaker_counts_failed_runs_of_every_client() {
        let mut g = Guard::new(Strategy::SharedBreaker, Settings::default(), 10);
        let lease = Duration::from_secs(10);
        for c in 0..4 {
            assert_eq!(g.start(c, 0, lease), Start::Go(3));
            g.finish(c, 0, false, None);
        }
        g.finish(9, 0, true, None);
        for c in 4..8 {
            assert_eq!(g.start(c, 0, lease), Start::Go(3), "reset by a success");
            g.finish(c, 0, false, None);
        }
        g.finish(8, 0, false, None);
        assert_eq!(
            g.start(9, 1, lease),
            Start::Refused,
            "5 in a row, 4 clients"
        );
    }
}
