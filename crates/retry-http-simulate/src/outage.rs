//! The outage model (after the AWS Architecture Blog's "Exponential Backoff And Jitter"
//! study): a fleet of clients retrying against a server that is down, then serves a fixed
//! capacity per window. The clients draw their waits from the very policy code the real
//! client uses.
//!
//! The model's rules are fixed so that results compare: requests take no time; every
//! client sends its first request at t = 0; a request at or after the end of the outage may
//! be served; capacity windows start when the outage ends; within a window requests are
//! served in arrival order up to the capacity, the rest rejected; peak load is measured after
//! the outage. With a deadline, each client decides as the real client does
//! (`policy::decision::schedule`, rows 13 and 14): a backoff that would end past the deadline
//! becomes one last attempt drawn before it. Also here: the physical limit (the best any
//! policy could do) and the search of the policy space.

use super::engine::{self, Model, Queue, millis};
use super::strategy::{Admitted, Shared, Sharing, Strategy};
use rand::SeedableRng;
use rand::rngs::StdRng;
use retry_http_policy::decision::{self, Attempt, Happened, Rules, Verdict};
use retry_http_policy::record::Limits;
use retry_http_policy::units::micros;
use retry_http_policy::{self as policy, Backoff, Jitter, WaitReason};
use std::collections::BTreeMap;
use std::time::Duration;

/// What the fleet faces.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scenario {
    /// Clients, all sending at t = 0.
    pub clients: u32,
    /// How long the server rejects everything.
    pub outage: Duration,
    /// Requests served per window once the outage ends.
    pub capacity: u32,
    /// The window length.
    pub window: Duration,
    /// Attempts per client, the first included.
    pub attempts: u32,
    /// Backoff base (and the fixed pause of `fixed`).
    pub base: Duration,
    /// Backoff cap.
    pub cap: Duration,
    /// Each client's deadline, if any.
    pub deadline: Option<Duration>,
    /// The circuit breaker's and the retry budget's settings, for the shared strategies
    /// (`--state`'s defaults: [`STATE_DEFAULTS`]).
    pub limits: Limits,
}

/// `--state`'s defaults: the circuit opens after 5 failed runs in a row and stays open 30 s;
/// retries may be 10% of the successful requests in a 10 min window, and at least 3 in it.
pub const STATE_DEFAULTS: Limits = Limits {
    threshold: 5,
    cooldown: Duration::from_secs(30),
    budget_pct: 10.0,
    window: Duration::from_secs(600),
    floor: 3,
    ttl: Duration::from_secs(24 * 3600),
};

impl Default for Scenario {
    /// The study's scenario: 200 clients, 600 ms down, then 24 per 100 ms; 8 attempts,
    /// base 100 ms, cap 8 s.
    fn default() -> Self {
        Scenario {
            clients: 200,
            outage: Duration::from_millis(600),
            capacity: 24,
            window: Duration::from_millis(100),
            attempts: 8,
            base: Duration::from_millis(100),
            cap: Duration::from_secs(8),
            deadline: None,
            limits: STATE_DEFAULTS,
        }
    }
}

impl Scenario {
    /// The backoff the real client would use for `strategy` in this scenario.
    pub fn backoff(&self, strategy: Strategy) -> Backoff {
        strategy.backoff(self.base, self.cap)
    }
}

/// What one simulated run (or an average of runs) gave.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    /// Strategy name (or `physical_limit`).
    pub strategy: String,
    /// Percent of clients served, 0 to 100.
    pub served_pct: f64,
    /// Requests sent by all clients.
    pub calls: f64,
    /// Calls per served client.
    pub calls_per_served: f64,
    /// Time of the last success, in seconds (None when nobody was served).
    pub last_success_s: Option<f64>,
    /// Most requests arriving in one window after the outage, as a multiple of capacity.
    pub peak_load: f64,
    /// Clients that ran out of attempts or deadline.
    pub gave_up: f64,
    /// Requests arriving per window, from t = 0 (for the plot).
    pub load: BTreeMap<u64, u32>,
    /// Requests served per window after the outage (checked by tests: never above capacity).
    pub served_per_window: BTreeMap<u64, u32>,
}

/// What one run counts as requests arrive. Sparse maps: a policy with hour-long waits must
/// not allocate a slot per empty window.
#[derive(Default)]
struct Tally {
    calls: u64,
    served: u32,
    gave_up: u32,
    /// When the last request was served, in microseconds.
    last_success: Option<u64>,
    /// Requests arriving per window, from t = 0.
    load: BTreeMap<u64, u32>,
    /// Requests served per window after the outage.
    served_in: BTreeMap<u64, u32>,
    /// Requests arriving per window after the outage.
    arrivals_in: BTreeMap<u64, u32>,
}

impl Tally {
    /// Counts a request arriving at `t` (microseconds) and says whether it is served: at or
    /// after the end of the outage, while its window has room (times in microseconds).
    fn arrive(&mut self, t: u64, outage: u64, window: u64, capacity: u32) -> bool {
        self.calls += 1;
        *self.load.entry(t / window).or_default() += 1;
        if t < outage {
            return false;
        }
        let w = (t - outage) / window;
        *self.arrivals_in.entry(w).or_default() += 1;
        let served_here = self.served_in.entry(w).or_default();
        if *served_here >= capacity {
            return false;
        }
        *served_here += 1;
        self.served += 1;
        self.last_success = Some(t);
        true
    }

    /// The figures of the run, for `name`.
    fn outcome(self, sc: &Scenario, name: &str) -> Figures {
        let peak = self.arrivals_in.values().copied().max().unwrap_or(0);
        let calls = self.calls as f64;
        Figures {
            strategy: name.to_string(),
            served_pct: f64::from(self.served) * 100.0 / f64::from(sc.clients.max(1)),
            calls,
            calls_per_served: per_served(calls, f64::from(self.served)),
            last_success_s: self.last_success.map(|t| t as f64 / 1e6),
            peak_load: f64::from(peak) / f64::from(sc.capacity.max(1)),
            gave_up: f64::from(self.gave_up),
            load: self.load,
            served_per_window: self.served_in,
        }
    }
}

/// Calls per served client; 0 when nobody was served.
fn per_served(calls: f64, served: f64) -> f64 {
    if served == 0.0 { 0.0 } else { calls / served }
}

/// One outage run in progress: the clients' progress, the fleet's shared record, the
/// requests to come (each event is a client's next request), and the tally.
struct Fleet<'a> {
    sc: &'a Scenario,
    rules: Rules<'a>,
    shared: Shared,
    /// How long a probe may hold the half-open circuit: the run's deadline, else a minute,
    /// as the client takes it.
    lease: Duration,
    rng: StdRng,
    queue: Queue<u32>,
    /// Per client: requests made, the last backoff drawn, whether its last wait was fitted
    /// before its deadline (rows 13 and 14), and its probe lease if it probes.
    made: Vec<u32>,
    previous: Vec<Duration>,
    fitted: Vec<bool>,
    probe: Vec<Option<u64>>,
    tally: Tally,
}

impl<'a> Fleet<'a> {
    /// Every client about to send its first request at t = 0.
    fn new(sc: &'a Scenario, rules: Rules<'a>, sharing: Sharing, seed: u64) -> Fleet<'a> {
        let n = sc.clients as usize;
        let mut queue = Queue::new();
        for c in 0..sc.clients {
            queue.push(0, c);
        }
        Fleet {
            sc,
            shared: Shared::new(sharing, sc.limits),
            lease: sc.deadline.unwrap_or(Duration::from_secs(60)),
            rng: StdRng::seed_from_u64(seed),
            queue,
            made: vec![0; n],
            previous: vec![rules.backoff.base; n],
            fitted: vec![false; n],
            probe: vec![None; n],
            tally: Tally::default(),
            rules,
        }
    }

    /// Client `c`'s request at `t` (microseconds): admitted by the shared breaker (a first
    /// request), served or rejected, then the client's next request or its end.
    fn request(&mut self, t: u64, c: usize) {
        let ms = millis(t);
        if self.made[c] == 0 {
            match self.shared.admit(ms, self.lease) {
                Admitted::Run => {}
                Admitted::Probe(id) => self.probe[c] = Some(id),
                Admitted::Refused => {
                    self.tally.gave_up += 1;
                    return;
                }
            }
        }
        self.made[c] += 1;
        let (outage, window) = (micros(self.sc.outage), micros(self.sc.window).max(1));
        if self.tally.arrive(t, outage, window, self.sc.capacity) {
            self.shared.finish(ms, true, self.probe[c]);
            return;
        }
        if self.probe[c].is_none() {
            let attempt = self.attempt(t, c);
            if let Verdict::Retry(r) = decision::schedule(&self.rules, &attempt, &mut self.rng)
                && self.shared.retry(ms, c as u64)
            {
                self.previous[c] = r.drawn;
                self.fitted[c] = r.planned.reason == WaitReason::Deadline;
                self.queue.push(t + micros(r.wait), c as u32);
                return;
            }
        }
        self.tally.gave_up += 1;
        self.shared.finish(ms, false, self.probe[c]);
    }

    /// What client `c`'s decision weighs after its request at `t` was rejected: requests
    /// take no time, so the last attempt before the deadline needs only the least attempt
    /// time.
    fn attempt(&self, t: u64, c: usize) -> Attempt<'static> {
        Attempt {
            happened: Happened::Status(503),
            number: self.made[c],
            method: "GET",
            first_method: "GET",
            committed: false,
            deadline_passed: false,
            left: self
                .sc
                .deadline
                .map(|d| Duration::from_micros(micros(d).saturating_sub(t))),
            hint: None,
            previous: self.previous[c],
            longest: Duration::ZERO,
            after_not_ready: false,
            fitted: self.fitted[c],
        }
    }
}

/// Each event is a client's next request.
impl Model for Fleet<'_> {
    type Event = u32;

    fn queue(&mut self) -> &mut Queue<u32> {
        &mut self.queue
    }

    fn handle(&mut self, t: u64, client: u32) {
        self.request(t, client as usize);
    }
}

/// Runs one backoff once with a seed, the fleet sharing `sharing`: a run the open circuit
/// refuses sends nothing and gives up; a retry the budget refuses is not made (the client
/// gives up); a probe has one attempt.
pub fn play(sc: &Scenario, backoff: &Backoff, sharing: Sharing, name: &str, seed: u64) -> Figures {
    let retry_on = policy::StatusSet::from_ranges(vec![(503, 503)]);
    let rules = Rules {
        attempts: sc.attempts,
        retry_on: &retry_on,
        backoff: *backoff,
        retry_after_spread: Duration::ZERO,
        has_key: false,
        retry_unsafe: false,
    };
    let mut fleet = Fleet::new(sc, rules, sharing, seed);
    engine::run(&mut fleet, None);
    fleet.tally.outcome(sc, name)
}

/// The physical limit: the most clients any policy could serve, as early and with as few
/// calls as possible. Every client calls at t = 0: when the server is up then, the first
/// window serves up to its capacity at once; the others (all of them, during an outage) are
/// rejected, and each needs one more call, placed in the earliest window with room that
/// starts before the deadline. A client that cannot be served gives up after its first call.
pub fn physical_limit(sc: &Scenario) -> Figures {
    let clients = u64::from(sc.clients);
    let capacity = u64::from(sc.capacity.max(1));
    let window = micros(sc.window).max(1);
    let outage = micros(sc.outage);
    let first_served = if outage == 0 {
        clients.min(capacity)
    } else {
        0
    };
    // Windows whose start a second call can reach: all of them, or those before the deadline.
    let windows = match sc.deadline.map(micros) {
        None => u64::MAX,
        Some(d) if d < outage => 0,
        Some(d) => (d - outage) / window + 1,
    };
    let served = if sc.attempts >= 2 {
        clients.min(capacity.saturating_mul(windows))
    } else {
        first_served
    };
    let calls = clients + served - first_served;
    let last = (served > 0).then(|| outage + (served.div_ceil(capacity) - 1) * window);
    let peak = if outage == 0 {
        clients as f64 / capacity as f64
    } else {
        served.min(capacity) as f64 / capacity as f64
    };
    Figures {
        strategy: "physical_limit".into(),
        served_pct: served as f64 * 100.0 / clients.max(1) as f64,
        calls: calls as f64,
        calls_per_served: per_served(calls as f64, served as f64),
        last_success_s: last.map(|t| t as f64 / 1e6),
        peak_load: peak,
        gave_up: (clients - served) as f64,
        load: BTreeMap::new(),
        served_per_window: BTreeMap::new(),
    }
}

/// Runs a backoff with seeds `seed`, `seed + 1`, ... (the fleet sharing `sharing`) and
/// averages the figures. The load curve is the first run's.
pub fn average(
    sc: &Scenario,
    backoff: &Backoff,
    sharing: Sharing,
    name: &str,
    seed: u64,
    runs: u32,
) -> Figures {
    // Only the first run's load curve is kept: the others' would cost memory for nothing.
    let all: Vec<Figures> = (0..runs.max(1))
        .map(|i| {
            let mut o = play(sc, backoff, sharing, name, seed.wrapping_add(u64::from(i)));
            if i > 0 {
                o.load.clear();
                o.served_per_window.clear();
            }
            o
        })
        .collect();
    let k = all.len() as f64;
    let mean = |f: &dyn Fn(&Figures) -> f64| all.iter().map(f).sum::<f64>() / k;
    let lasts: Vec<f64> = all.iter().filter_map(|o| o.last_success_s).collect();
    Figures {
        strategy: name.to_string(),
        served_pct: mean(&|o| o.served_pct),
        calls: mean(&|o| o.calls),
        calls_per_served: mean(&|o| o.calls_per_served),
        last_success_s: (!lasts.is_empty()).then(|| lasts.iter().sum::<f64>() / lasts.len() as f64),
        peak_load: mean(&|o| o.peak_load),
        gave_up: mean(&|o| o.gave_up),
        load: all[0].load.clone(),
        served_per_window: all[0].served_per_window.clone(),
    }
}

/// One point of the policy search: a policy, and how it did.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The backoff tried.
    pub backoff: Backoff,
    /// How it did (averaged over the runs).
    pub outcome: Figures,
}

/// `n` values spaced evenly on a log scale from `lo` to `hi`, each rounded to two
/// significant digits of milliseconds (616 ms is 620ms, 24155 ms is 24s): the search
/// suggests flags as people type them, and the values it simulated are exactly those.
pub fn log_spaced(lo: Duration, hi: Duration, n: u32) -> Vec<Duration> {
    let (a, b) = (lo.as_secs_f64().ln(), hi.as_secs_f64().ln());
    (0..n)
        .map(|i| {
            let x = a + (b - a) * f64::from(i) / f64::from(n.max(2) - 1);
            Duration::from_millis(two_digits((x.exp() * 1000.0).round() as u64))
        })
        .collect()
}

/// `ms` rounded to two significant digits (half away from zero): 616 is 620, 24155 is
/// 24000, 99 stays 99.
fn two_digits(ms: u64) -> u64 {
    let mut unit = 1;
    while ms / unit >= 100 {
        unit *= 10;
    }
    (ms + unit / 2) / unit * unit
}

/// Explores every jitter mode (and none) x base x cap for the scenario, keeping policies
/// that serve every client; returns the Pareto front of calls against time of the last
/// success, sorted by calls.
pub fn search(sc: &Scenario, seed: u64, runs: u32) -> Vec<Candidate> {
    let bases = log_spaced(Duration::from_millis(10), Duration::from_secs(2), 10);
    let caps = log_spaced(Duration::from_secs(1), Duration::from_secs(60), 10);
    let jitters = [
        Jitter::Full,
        Jitter::Equal,
        Jitter::Decorrelated,
        Jitter::None,
    ];
    let mut all = Vec::new();
    for jitter in jitters {
        for &base in &bases {
            for &cap in caps.iter().filter(|c| **c >= base) {
                let backoff = Backoff { base, cap, jitter };
                let outcome = average(sc, &backoff, Sharing::Nothing, "search", seed, runs);
                if outcome.served_pct >= 100.0 {
                    all.push(Candidate { backoff, outcome });
                }
            }
        }
    }
    pareto(all)
}

/// Keeps the candidates that no other beats on both calls and time of the last success.
fn pareto(mut all: Vec<Candidate>) -> Vec<Candidate> {
    let last = |c: &Candidate| c.outcome.last_success_s.unwrap_or(f64::INFINITY);
    all.sort_by(|a, b| {
        a.outcome
            .calls
            .total_cmp(&b.outcome.calls)
            .then(last(a).total_cmp(&last(b)))
    });
    let mut front: Vec<Candidate> = Vec::new();
    for c in all {
        if front.last().is_none_or(|f| last(&c) < last(f)) {
            front.push(c);
        }
    }
    front
}

/// The index of the candidate nearest the physical limit, each axis measured as a ratio to
/// the limit's value.
pub fn nearest_to_limit(front: &[Candidate], limit: &Figures) -> Option<usize> {
    let lim_last = limit.last_success_s.unwrap_or(1.0).max(1e-9);
    let score = |c: &Candidate| {
        let dc = c.outcome.calls / limit.calls.max(1.0) - 1.0;
        let dt = c.outcome.last_success_s.unwrap_or(f64::INFINITY) / lim_last - 1.0;
        dc * dc + dt * dt
    };
    (0..front.len()).min_by(|&a, &b| score(&front[a]).total_cmp(&score(&front[b])))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn study(strategy: Strategy) -> Figures {
        let sc = Scenario::default();
        play(
            &sc,
            &sc.backoff(strategy),
            Sharing::Nothing,
            strategy.name(),
            1,
        )
    }

    /// The study's findings: a fixed pause serves about a quarter; plain exponential backoff
    /// drags on and gives up on some; full jitter serves everyone fast, with fewer calls.
    #[test]
    fn full_jitter_serves_everyone_fast_with_fewer_calls() {
        let fixed = study(Strategy::Fixed);
        assert!((20.0..=30.0).contains(&fixed.served_pct), "{fixed:?}");
        let exp = study(Strategy::Exponential);
        assert!(exp.gave_up > 0.0, "{exp:?}");
        assert!(exp.last_success_s.unwrap() >= 8.0, "{exp:?}");
        let full = study(Strategy::Full);
        assert_eq!(full.served_pct, 100.0, "{full:?}");
        assert!(full.last_success_s.unwrap() < 5.0, "{full:?}");
        assert!(
            full.calls < exp.calls && full.calls < fixed.calls,
            "{full:?} {exp:?} {fixed:?}"
        );
    }

    fn scenarios() -> Vec<Scenario> {
        let ms = Duration::from_millis;
        vec![
            Scenario::default(),
            Scenario {
                clients: 50,
                outage: ms(0),
                capacity: 5,
                window: ms(50),
                ..Scenario::default()
            },
            Scenario {
                clients: 500,
                outage: ms(2000),
                capacity: 40,
                window: ms(250),
                attempts: 12,
                ..Scenario::default()
            },
            Scenario {
                clients: 120,
                outage: ms(350),
                capacity: 7,
                window: ms(100),
                deadline: Some(ms(5000)),
                ..Scenario::default()
            },
        ]
    }

    #[test]
    fn no_window_serves_more_than_its_capacity_and_nobody_beats_the_limit() {
        for sc in scenarios() {
            let limit = physical_limit(&sc);
            for k in Strategy::OUTAGE {
                for seed in 0..5 {
                    let o = play(&sc, &sc.backoff(k), k.outage_sharing(), k.name(), seed);
                    assert!(
                        o.served_per_window.values().all(|n| *n <= sc.capacity),
                        "{sc:?} {o:?}"
                    );
                    let served = o.served_per_window.values().sum::<u32>();
                    assert_eq!(
                        f64::from(served) * 100.0 / f64::from(sc.clients),
                        o.served_pct
                    );
                    assert!(o.served_pct <= limit.served_pct, "{sc:?} {o:?} {limit:?}");
                    if o.served_pct == limit.served_pct {
                        assert!(o.calls >= limit.calls, "{sc:?} {o:?}");
                        assert!(o.last_success_s >= limit.last_success_s, "{sc:?} {o:?}");
                    }
                    let calls_needed =
                        if sc.outage.is_zero() { 1.0 } else { 2.0 } * f64::from(served);
                    assert!(o.calls >= calls_needed);
                }
            }
        }
    }

    #[test]
    fn same_seed_same_result() {
        for sc in scenarios() {
            for k in Strategy::OUTAGE {
                let b = sc.backoff(k);
                let once = || play(&sc, &b, k.outage_sharing(), "x", 9);
                assert_eq!(once(), once());
            }
        }
    }

    #[test]
    fn search_front_is_pareto_and_serves_everyone() {
        let sc = Scenario {
            clients: 60,
            ..Scenario::default()
        };
        let front = search(&sc, 1, 1);
        assert!(!front.is_empty());
        for w in front.windows(2) {
            assert!(w[0].outcome.calls <= w[1].outcome.calls);
            assert!(w[0].outcome.last_success_s > w[1].outcome.last_success_s);
        }
        assert!(front.iter().all(|c| c.outcome.served_pct >= 100.0));
    }

    #[test]
    fn physical_limit_in_edge_cases() {
        let ms = Duration::from_millis;
        let one = physical_limit(&Scenario {
            attempts: 1,
            ..Scenario::default()
        });
        assert_eq!(
            (one.served_pct, one.calls, one.gave_up),
            (0.0, 200.0, 200.0)
        );
        let up = physical_limit(&Scenario {
            outage: ms(0),
            ..Scenario::default()
        });
        assert_eq!(up.calls, 200.0 + 176.0);
        assert!((up.last_success_s.unwrap() - 0.8).abs() < 1e-9);
        let short = physical_limit(&Scenario {
            deadline: Some(ms(1000)),
            ..Scenario::default()
        });
        assert_eq!(short.served_pct, 5.0 * 24.0 * 100.0 / 200.0);
    }

    /// The client's rule at the deadline (decision rows 13 and 14): a backoff that would end
    /// past the deadline becomes one last attempt drawn before it, and another follows while
    /// the room left is at least the base. So a client that is never served keeps trying
    /// until less than the base (plus the least attempt time) is left, and never sends at or
    /// past its deadline: for every strategy, deadline and seed (one client a run, so the
    /// last window with a request is that client's last request).
    #[test]
    fn a_client_that_is_never_served_tries_until_just_before_its_deadline() {
        let ms = Duration::from_millis;
        let mut runs = 0;
        for deadline in [ms(700), ms(5000), ms(60_000)] {
            for k in Strategy::OUTAGE
                .into_iter()
                .filter(|k| k.outage_sharing() == Sharing::Nothing)
            {
                for seed in 0..40 {
                    let sc = Scenario {
                        clients: 1,
                        outage: deadline * 2,
                        window: ms(1),
                        attempts: decision::UNLIMITED,
                        deadline: Some(deadline),
                        ..Scenario::default()
                    };
                    let o = play(&sc, &sc.backoff(k), Sharing::Nothing, k.name(), seed);
                    let last = o.load.keys().next_back().copied().unwrap_or(0);
                    let least = deadline - sc.base - policy::MIN_ATTEMPT;
                    assert!(
                        ms(last) >= least && ms(last) < deadline,
                        "{} {deadline:?} seed {seed}: last request at {last} ms",
                        k.name()
                    );
                    assert_eq!(o.gave_up, 1.0);
                    runs += 1;
                }
            }
        }
        assert_eq!(runs, 3 * 5 * 40);
    }

    /// The budget shared by the fleet never lets retries exceed its ratio of the successes
    /// or its floor, whichever is more, by more than one run's retries less one (Google
    /// SRE's client-side retry budget, a run's own retries not counted against it: the
    /// bound of `fleet::budget`; the window, 10 min, is longer than any run here, so
    /// nothing leaves it): over scenarios x ratios x floors x seeds, both shared strategies
    /// (the breaker's threshold out of reach, so that every client sends its first request
    /// and the calls past the clients are retries).
    #[test]
    fn the_shared_budget_never_lets_retries_exceed_its_ratio_or_floor() {
        let mut runs = 0;
        for base in scenarios() {
            for (pct, floor) in [(10.0, 3), (10.0, 300), (50.0, 0), (200.0, 20)] {
                let sc = Scenario {
                    limits: Limits {
                        budget_pct: pct,
                        floor,
                        threshold: u32::MAX,
                        ..STATE_DEFAULTS
                    },
                    ..base
                };
                for k in [Strategy::SharedBudget, Strategy::SharedBreaker] {
                    for seed in 0..5 {
                        let o = play(&sc, &sc.backoff(k), k.outage_sharing(), k.name(), seed);
                        let served = o.served_per_window.values().sum::<u32>();
                        let retries = o.calls - f64::from(sc.clients);
                        let earned = (f64::from(served) * pct / 100.0).floor();
                        let allowed = earned.max(f64::from(floor));
                        let one_run = f64::from(sc.attempts - 1);
                        let bound = if allowed > 0.0 {
                            allowed + one_run - 1.0
                        } else {
                            0.0
                        };
                        assert!(
                            retries <= bound,
                            "{} {pct}% floor {floor} {sc:?}: {retries} retries, {served} served",
                            k.name()
                        );
                        runs += 1;
                    }
                }
            }
        }
        assert_eq!(runs, 4 * 4 * 2 * 5);
    }

    /// The fleet's shared record (`Shared`, tested in `strategy`) in the outage model,
    /// with the defaults (a floor of 3 retries): the first runs spend the floor (one of
    /// them may go on past it with its own retries, 7 at most, the fleet's retries staying
    /// within 3 + 7 - 1), the budget refuses the rest their retry, and once 5 of them ended
    /// the circuit refuses every later run: they send nothing.
    #[test]
    fn the_shared_breaker_shuts_out_the_fleet_after_five_failed_runs() {
        let sc = Scenario::default();
        let k = Strategy::SharedBreaker;
        let o = play(&sc, &sc.backoff(k), k.outage_sharing(), k.name(), 1);
        assert!(o.gave_up >= 199.0, "{o:?}");
        assert!(o.calls <= 5.0 + 3.0 + 7.0 - 1.0 + 3.0, "{o:?}");
    }

    #[test]
    fn log_spacing_covers_the_range() {
        let v = log_spaced(Duration::from_millis(10), Duration::from_secs(2), 10);
        assert_eq!(v.len(), 10);
        assert_eq!(v[0], Duration::from_millis(10));
        assert_eq!(v[9], Duration::from_secs(2));
        assert!(v.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(two_digits(616), 620);
        assert_eq!(two_digits(24_155), 24_000);
        assert_eq!(two_digits(99), 99);
        assert_eq!(two_digits(995), 1000);
        // Two significant digits each, so the flags print as typed: 620ms, 1.1s, 24s.
        for d in v.iter().chain(&log_spaced(
            Duration::from_secs(1),
            Duration::from_secs(60),
            10,
        )) {
            let ms = d.as_millis() as u64;
            assert_eq!(two_digits(ms), ms, "{d:?}");
        }
    }
}
