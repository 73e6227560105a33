//! The client strategies, one list for the three models: how a run decides whether to
//! start, whether to retry and how long to wait, and what it records when it ends. The
//! fleet-wide strategies run the very code `--state` runs (`record::Target`: the circuit
//! breaker and the retry budget), fed the simulated time instead of a store's clock; the
//! waits come from `policy::Backoff`, as the client's do. The outage model takes seven of
//! the eleven (`Strategy::OUTAGE`) and draws its waits through `policy::decision`; the
//! overload and failure-rate models take all eleven through a [`Guard`].

use rand::Rng;
use retry_http_policy::Millis;
use retry_http_policy::breaker::{Admission, RunResult};
use retry_http_policy::record::{Limits, Target};
use retry_http_policy::{Backoff, Jitter};
use std::collections::VecDeque;
use std::time::Duration;

/// A client strategy, by the name `--strategies` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// One try per run.
    NoRetry,
    /// Immediate retries, up to the attempts.
    Retries,
    /// A constant pause of the base between tries: the hurried loop.
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
    /// Full jitter, each retry asked of one retry budget shared by the fleet (`--state`'s
    /// budget: Google SRE's client-side retry budget).
    SharedBudget,
    /// Full jitter behind one circuit breaker shared by the fleet: `--state`'s, which
    /// refuses whole runs while open and lets one probe through when half-open (see
    /// [`Strategy::sharing`] for what else it shares).
    SharedBreaker,
}

impl Strategy {
    /// Every strategy, in the order of the reports.
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

    /// The outage model's strategies, in the order of its report; its default is the first
    /// five, those without state.
    pub const OUTAGE: [Strategy; 7] = [
        Strategy::Fixed,
        Strategy::Exponential,
        Strategy::Full,
        Strategy::Equal,
        Strategy::Decorrelated,
        Strategy::SharedBudget,
        Strategy::SharedBreaker,
    ];

    /// The name used on the command line and in reports.
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

    /// Reads a name of the overload and failure-rate models (any of the eleven).
    pub fn parse(s: &str) -> Result<Strategy, String> {
        let s = s.trim();
        Strategy::among(s, &Strategy::ALL).ok_or_else(|| {
            let names: Vec<&str> = Strategy::ALL.iter().map(|x| x.name()).collect();
            format!(
                "unknown strategy {s:?}: expected one of {}",
                names.join(", ")
            )
        })
    }

    /// Reads a name of the outage model (one of [`Strategy::OUTAGE`]).
    pub fn parse_outage(s: &str) -> Result<Strategy, String> {
        Strategy::among(s.trim(), &Strategy::OUTAGE).ok_or_else(|| {
            format!("unknown strategy {s:?}: expected fixed, exponential, full, equal, decorrelated, shared-budget or shared-breaker")
        })
    }

    /// The strategy of `list` named `name`.
    fn among(name: &str, list: &[Strategy]) -> Option<Strategy> {
        list.iter().copied().find(|k| k.name() == name)
    }

    /// The backoff the real client would use for this strategy: `fixed` is a backoff whose
    /// cap is its base, without jitter. (`retries` and `no-retry` draw no backoff.)
    pub fn backoff(self, base: Duration, cap: Duration) -> Backoff {
        let (cap, jitter) = match self {
            Strategy::Fixed => (base, Jitter::None),
            Strategy::Exponential => (cap, Jitter::None),
            Strategy::Equal => (cap, Jitter::Equal),
            Strategy::Decorrelated => (cap, Jitter::Decorrelated),
            _ => (cap, Jitter::Full),
        };
        Backoff { base, cap, jitter }
    }

    /// What the strategy shares across the fleet in the overload and failure-rate models:
    /// `shared-breaker` is the breaker alone there.
    pub fn sharing(self) -> Sharing {
        match self {
            Strategy::SharedBudget => Sharing::Budget,
            Strategy::SharedBreaker => Sharing::Breaker,
            _ => Sharing::Nothing,
        }
    }

    /// What the strategy shares in the outage model: `shared-breaker` is `--state`'s whole
    /// record there, the breaker and the budget.
    pub fn outage_sharing(self) -> Sharing {
        match self.sharing() {
            Sharing::Breaker => Sharing::BreakerAndBudget,
            other => other,
        }
    }
}

/// What the fleet shares, as `--state` shares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    /// Each client on its own.
    Nothing,
    /// One retry budget.
    Budget,
    /// One circuit breaker.
    Breaker,
    /// One circuit breaker and one retry budget: the whole record of `--state`.
    BreakerAndBudget,
}

/// What the shared breaker says before a client's run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admitted {
    /// Run with every attempt.
    Run,
    /// The probe of a half-open circuit: one attempt, under this lease number.
    Probe(u64),
    /// Refused: the circuit is open (or a probe is in flight); nothing is sent.
    Refused,
}

/// The fleet's one `--state` record, run by the very code `--state` runs
/// (`record::Target`), fed the simulated time in milliseconds.
#[derive(Debug, Clone)]
pub struct Shared {
    sharing: Sharing,
    limits: Limits,
    target: Target,
    runs: u64,
}

impl Shared {
    /// The record of a fleet that shares `sharing` with `limits`.
    pub fn new(sharing: Sharing, limits: Limits) -> Shared {
        Shared {
            sharing,
            limits,
            target: Target::default(),
            runs: 0,
        }
    }

    /// Whether a run may start at `now` (ms); `lease`: how long a probe may hold the
    /// half-open circuit.
    pub fn admit(&mut self, now: Millis, lease: Duration) -> Admitted {
        if !matches!(self.sharing, Sharing::Breaker | Sharing::BreakerAndBudget) {
            return Admitted::Run;
        }
        self.runs += 1;
        match self.target.admit(now, &self.limits, lease, self.runs) {
            Admission::Run => Admitted::Run,
            Admission::Probe => Admitted::Probe(self.runs),
            Admission::Refuse { .. } => Admitted::Refused,
        }
    }

    /// Whether a retry of the run numbered `run` planned at `now` is granted (and charged)
    /// by the budget, when the fleet shares one: as `--state`'s, the run's own retries do
    /// not count against it.
    pub fn retry(&mut self, now: Millis, run: u64) -> bool {
        !matches!(self.sharing, Sharing::Budget | Sharing::BreakerAndBudget)
            || self.target.take_retry(now, &self.limits, run).is_ok()
    }

    /// Records a run that ended at `now`, served or not (`probe`: its lease, if it probed).
    pub fn finish(&mut self, now: Millis, served: bool, probe: Option<u64>) {
        if self.sharing == Sharing::Nothing {
            return;
        }
        let result = if served {
            RunResult::Success
        } else {
            RunResult::Failure
        };
        self.target.finish(now, result, probe, &self.limits);
    }

    /// Whether the circuit is open (or half-open) now.
    #[cfg(test)]
    pub fn is_open(&self) -> bool {
        self.target.breaker.opened_at.is_some()
    }
}

/// The calls a per-client breaker remembers.
const WINDOW: usize = 20;

/// The settings the strategies share in the overload and failure-rate models: the backoff,
/// the breaker's and the budget's limits, and the token bucket's.
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

/// One run of a client: its tries so far and at most, the try in flight, the last wait
/// drawn, and its probe lease if the shared breaker let it probe.
#[derive(Debug, Clone)]
pub struct Run {
    /// The client that started it.
    pub client: u32,
    /// The run's number, its own among the fleet's runs (what the shared budget tells its
    /// own retries apart by).
    pub id: u64,
    /// Tries sent, and the most it may send.
    pub tries: u32,
    pub limit: u32,
    /// When the try in flight was sent, in microseconds (its identity).
    pub sent: u64,
    /// The last backoff drawn (decorrelated jitter grows from it).
    pub previous: Duration,
    /// The probe's lease number, when the run probes a half-open circuit.
    pub probe: Option<u64>,
    /// Whether the run has ended.
    pub over: bool,
}

/// The strategy's state for a fleet of `clients`: per client, or one for all.
pub struct Guard {
    strategy: Strategy,
    settings: Settings,
    backoff: Backoff,
    /// The fleet's one record (the shared strategies).
    shared: Shared,
    /// Per client, the outcomes of its last `WINDOW` calls (the per-client breaker).
    recent: Vec<VecDeque<bool>>,
    /// Per-client token buckets.
    tokens: Vec<f64>,
    /// The runs started so far (the last run's number).
    started: u64,
}

impl Guard {
    /// The state of `strategy` for `clients` clients.
    pub fn new(strategy: Strategy, settings: Settings, clients: u32) -> Guard {
        let per_client = |on: bool| if on { clients as usize } else { 0 };
        Guard {
            strategy,
            settings,
            backoff: strategy.backoff(settings.base, settings.cap),
            shared: Shared::new(strategy.sharing(), settings.limits),
            recent: vec![VecDeque::new(); per_client(strategy == Strategy::Breaker)],
            tokens: vec![settings.bucket_size; per_client(strategy == Strategy::Bucket)],
            started: 0,
        }
    }

    /// A run of `client` starting at `now` (ms), or None when the shared breaker refuses it;
    /// `lease`: how long a probe may hold the half-open circuit.
    pub fn open(&mut self, client: u32, now: Millis, lease: Duration) -> Option<Run> {
        let attempts = if self.strategy == Strategy::NoRetry {
            1
        } else {
            self.settings.attempts
        };
        let (limit, probe) = match self.shared.admit(now, lease) {
            Admitted::Run => (attempts, None),
            Admitted::Probe(id) => (1, Some(id)),
            Admitted::Refused => return None,
        };
        self.started += 1;
        Some(Run {
            client,
            id: self.started,
            tries: 0,
            limit,
            sent: 0,
            previous: self.settings.base,
            probe,
            over: false,
        })
    }

    /// Whether `client`'s run numbered `run` may retry at `now` after try `tried` failed (the
    /// budget or the bucket may refuse); the wait before it when it may (`previous`: the
    /// last backoff drawn).
    pub fn retry(
        &mut self,
        (client, run): (u32, u64),
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
            Strategy::Breaker => {
                let recent = self.recent.get(client as usize)?;
                let failed = recent.iter().filter(|ok| !**ok).count();
                if failed * 10 > recent.len() {
                    return None;
                }
            }
            _ if !self.shared.retry(now, run) => return None,
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

    /// A try of `run` failed at `now`: the wait before the next one, or None when the run
    /// ends here (out of tries, or refused a retry), recorded as failed.
    pub fn failed(&mut self, run: &mut Run, now: Millis, rng: &mut dyn Rng) -> Option<Duration> {
        self.observe(run.client, false);
        let wait = if run.tries < run.limit {
            self.retry((run.client, run.id), now, run.tries, run.previous, rng)
        } else {
            None
        };
        match wait {
            Some(w) => run.previous = w.max(self.settings.base),
            None => {
                run.over = true;
                self.finish(run.client, now, false, run.probe);
            }
        }
        wait
    }

    /// A try of `run` succeeded at `now`: the run ends, recorded as served.
    pub fn served(&mut self, run: &mut Run, now: Millis) {
        run.over = true;
        self.observe(run.client, true);
        self.finish(run.client, now, true, run.probe);
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
        self.shared.finish(now, success, probe);
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
        for s in Strategy::OUTAGE {
            assert_eq!(Strategy::parse_outage(s.name()), Ok(s));
        }
        assert!(Strategy::parse("jittery").is_err());
        assert!(Strategy::parse_outage("retries").is_err());
    }

    /// The outage model's shared-breaker is the whole record; the other models' the breaker.
    #[test]
    fn the_shared_strategies_share_what_their_model_says() {
        use Sharing::*;
        let of = |s: Strategy| (s.sharing(), s.outage_sharing());
        assert_eq!(of(Strategy::SharedBudget), (Budget, Budget));
        assert_eq!(of(Strategy::SharedBreaker), (Breaker, BreakerAndBudget));
        assert_eq!(of(Strategy::Bucket), (Nothing, Nothing));
    }

    /// `--state`'s breaker shared by the fleet: closed, it admits every run; after
    /// `threshold` failed runs in a row it opens and refuses runs for the cooldown; then one
    /// run probes (the others are refused while it holds the lease); a served probe closes it.
    #[test]
    fn the_shared_breaker_opens_after_its_threshold_and_half_opens_after_the_cooldown() {
        let limits = Limits {
            threshold: 4,
            ..crate::outage::STATE_DEFAULTS
        };
        let minute = Duration::from_secs(60);
        let mut f = Shared::new(Sharing::BreakerAndBudget, limits);
        for i in 0..3 {
            assert_eq!(f.admit(i, minute), Admitted::Run);
            f.finish(i, false, None);
            assert!(!f.is_open(), "{i} failures");
        }
        f.finish(3, false, None);
        assert!(f.is_open());
        assert_eq!(f.admit(4, minute), Admitted::Refused);
        assert_eq!(f.admit(3 + 29_999, minute), Admitted::Refused);
        let Admitted::Probe(id) = f.admit(3 + 30_000, minute) else {
            panic!("no probe after the cooldown");
        };
        assert_eq!(
            f.admit(3 + 30_001, minute),
            Admitted::Refused,
            "probe in flight"
        );
        f.finish(3 + 30_002, true, Some(id));
        assert!(!f.is_open());
        assert_eq!(f.admit(3 + 30_003, minute), Admitted::Run);
        // A budget-only fleet has no breaker: every run is admitted.
        let mut b = Shared::new(Sharing::Budget, limits);
        for i in 0..10 {
            b.finish(i, false, None);
        }
        assert_eq!(b.admit(10, minute), Admitted::Run);
    }

    /// A run's limit and probe as `open` gives them (None: refused).
    fn opened(g: &mut Guard, client: u32, now: Millis, lease: Duration) -> Option<(u32, bool)> {
        g.open(client, now, lease)
            .map(|r| (r.limit, r.probe.is_some()))
    }

    #[test]
    fn the_shared_budget_is_the_state_budget() {
        let mut g = Guard::new(Strategy::SharedBudget, Settings::default(), 100);
        let rng = &mut StdRng::seed_from_u64(1);
        let granted = (0..50)
            .filter(|i| {
                g.retry((i % 100, u64::from(i % 100)), 1_000, 1, Duration::ZERO, rng)
                    .is_some()
            })
            .count();
        assert_eq!(granted, 10, "the floor, fleet-wide");
        for i in 0..200 {
            g.finish(i % 100, 2_000, true, None);
        }
        let granted = (0..50)
            .filter(|i| {
                g.retry((*i, 100 + u64::from(*i)), 2_000, 1, Duration::ZERO, rng)
                    .is_some()
            })
            .count();
        assert_eq!(
            granted, 10,
            "10% of 200 successes, 10 already taken by other runs"
        );
    }

    #[test]
    fn a_client_breaker_stops_retries_while_its_calls_fail() {
        let mut g = Guard::new(Strategy::Breaker, Settings::default(), 2);
        let rng = &mut StdRng::seed_from_u64(1);
        assert!(
            g.retry((0, 0), 0, 1, Duration::ZERO, rng).is_some(),
            "nothing seen yet"
        );
        for _ in 0..9 {
            g.observe(0, true);
        }
        g.observe(0, false);
        assert!(
            g.retry((0, 0), 0, 1, Duration::ZERO, rng).is_some(),
            "1 of 10 failed"
        );
        g.observe(0, false);
        assert!(
            g.retry((0, 0), 0, 1, Duration::ZERO, rng).is_none(),
            "2 of 11"
        );
        assert!(
            g.retry((1, 1), 0, 1, Duration::ZERO, rng).is_some(),
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
        assert!(g.retry((0, 0), 0, 1, Duration::ZERO, rng).is_some());
        assert!(g.retry((0, 0), 0, 2, Duration::ZERO, rng).is_some());
        assert!(
            g.retry((0, 0), 0, 1, Duration::ZERO, rng).is_none(),
            "spent"
        );
        assert!(
            g.retry((1, 1), 0, 1, Duration::ZERO, rng).is_some(),
            "its own bucket"
        );
        g.finish(0, 0, true, None);
        g.finish(0, 0, true, None);
        assert!(
            g.retry((0, 0), 0, 1, Duration::ZERO, rng).is_some(),
            "refilled"
        );
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
                        .map(|_| g.retry((0, 0), 0, tried, ms(100), rng).expect("no limit"))
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
        assert_eq!(opened(&mut g, 0, 0, Duration::ZERO), Some((1, false)));
        let mut g = Guard::new(Strategy::Full, s, 1);
        assert_eq!(opened(&mut g, 0, 0, Duration::ZERO), Some((3, false)));
    }

    /// A failed try of a run retries after a wait (which becomes the run's `previous`, at
    /// least the base) while tries are left, then ends the run as failed, and the shared
    /// breaker counts it; a served try ends the run as served.
    #[test]
    fn a_run_retries_until_its_last_try_then_ends_failed() {
        let s = Settings::default();
        let mut g = Guard::new(Strategy::SharedBreaker, s, 1);
        let rng = &mut StdRng::seed_from_u64(1);
        let lease = Duration::from_secs(10);
        for _ in 0..s.limits.threshold {
            let mut run = g.open(0, 0, lease).expect("closed");
            for tried in 1..=run.limit {
                run.tries = tried;
                let wait = g.failed(&mut run, 0, rng);
                assert_eq!(wait.is_none(), tried == run.limit, "try {tried}");
                if wait.is_some() {
                    assert!(run.previous >= s.base && !run.over);
                }
            }
            assert!(run.over);
        }
        assert!(
            g.open(0, 1, lease).is_none(),
            "5 failed runs open the circuit"
        );
        let mut g = Guard::new(Strategy::Full, s, 1);
        let mut run = g.open(0, 0, lease).expect("no breaker");
        g.served(&mut run, 0);
        assert!(run.over);
    }

    /// The shared breaker is the fleet's: failures of different clients add up, a success
    /// of any client resets the count (the run's record, `--state`'s rule), and once open it
    /// lets one probe through after the cooldown.
    #[test]
    fn the_shared_breaker_counts_failed_runs_of_every_client() {
        let mut g = Guard::new(Strategy::SharedBreaker, Settings::default(), 10);
        let lease = Duration::from_secs(10);
        for c in 0..4 {
            assert_eq!(opened(&mut g, c, 0, lease), Some((3, false)));
            g.finish(c, 0, false, None);
        }
        g.finish(9, 0, true, None);
        for c in 4..8 {
            assert_eq!(
                opened(&mut g, c, 0, lease),
                Some((3, false)),
                "reset by a success"
            );
            g.finish(c, 0, false, None);
        }
        g.finish(8, 0, false, None);
        assert_eq!(opened(&mut g, 9, 1, lease), None, "5 in a row, 4 clients");
        // After the cooldown (5 s), one run of one try probes for the fleet.
        assert_eq!(opened(&mut g, 8, 6_000, lease), Some((1, true)));
        assert_eq!(opened(&mut g, 9, 6_001, lease), None, "one probe");
    }
}
