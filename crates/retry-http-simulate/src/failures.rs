//! The failure-rate model (after Marc Brooker's "Fixing retries with token buckets and
//! circuit breakers", 2022): `clients` clients, each an open (Poisson) source, together
//! sending `rate` first tries per second; every call fails with probability `p`,
//! independently of the others and of the load (the server is not overloaded; something
//! else fails a share of calls). What a strategy costs is its load amplification (calls per
//! first try) and what it buys is its success rate (runs that succeeded). Splitting the same
//! load over more clients shows what state of each client's own can and cannot know.

use super::engine::{self, Counts, Model, Queue, exponential, millis};
use super::strategy::{Guard, Run, Settings, Strategy};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use retry_http_policy::units::micros;
use std::time::Duration;

/// The scenario.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scenario {
    /// Clients sharing the load (100).
    pub clients: u32,
    /// First tries per second, all clients together (100).
    pub rate: f64,
    /// The probability that a call fails (0 to 1).
    pub p: f64,
    /// How long a call takes (10 ms).
    pub latency: Duration,
    /// How long the run lasts (120 s).
    pub duration: Duration,
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            clients: 100,
            rate: 100.0,
            p: 0.1,
            latency: Duration::from_millis(10),
            duration: Duration::from_secs(120),
        }
    }
}

/// What a strategy did.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    /// The strategy's name.
    pub strategy: String,
    /// The failure probability and the clients, for a sweep's rows.
    pub p: f64,
    pub clients: u32,
    /// Runs ended and succeeded (a refused run ended unserved), calls and first tries: the
    /// success rate and the amplification are theirs.
    pub counts: Counts,
}

/// Events in time order (microseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// A client starts a run.
    Arrival { client: u32 },
    /// A try of run `run` is sent.
    Send { run: usize },
}

/// One failure-rate run in progress.
struct Sim<'a> {
    sc: &'a Scenario,
    guard: Guard,
    rng: StdRng,
    queue: Queue<Event>,
    runs: Vec<Run>,
    f: Figures,
    /// The end of the run, in microseconds.
    end: u64,
    /// The probability that a call fails, clamped to 0..=1 (a NaN fails nothing).
    p: f64,
    /// How long a probe may hold the half-open circuit.
    lease: Duration,
}

impl<'a> Sim<'a> {
    /// The run before t = 0: each client's first arrival scheduled.
    fn new(sc: &'a Scenario, strategy: Strategy, settings: Settings, seed: u64) -> Sim<'a> {
        let mut sim = Sim {
            sc,
            guard: Guard::new(strategy, settings, sc.clients),
            rng: StdRng::seed_from_u64(seed),
            queue: Queue::new(),
            runs: Vec::new(),
            f: Figures {
                strategy: strategy.name().to_string(),
                p: sc.p,
                clients: sc.clients,
                counts: Counts::default(),
            },
            end: micros(sc.duration),
            p: if sc.p.is_nan() {
                0.0
            } else {
                sc.p.clamp(0.0, 1.0)
            },
            lease: sc
                .latency
                .saturating_add(settings.cap)
                .saturating_mul(settings.attempts.max(1)),
        };
        for client in 0..sc.clients {
            let mean = sim.mean_gap();
            let t = exponential(&mut sim.rng, mean);
            sim.queue.push(t, Event::Arrival { client });
        }
        sim
    }

    /// The mean time between one client's first tries, in seconds.
    fn mean_gap(&self) -> f64 {
        1.0 / (self.sc.rate / f64::from(self.sc.clients.max(1)))
    }

    /// A client starts a run at `t` (unless the shared breaker refuses it) and draws its
    /// next arrival.
    fn arrival(&mut self, t: u64, client: u32) {
        let mean = self.mean_gap();
        let next = t.saturating_add(exponential(&mut self.rng, mean));
        self.queue.push(next, Event::Arrival { client });
        let Some(run) = self.guard.open(client, millis(t), self.lease) else {
            self.f.counts.ended += 1;
            return;
        };
        self.runs.push(run);
        let run = self.runs.len() - 1;
        self.queue.push(t, Event::Send { run });
    }

    /// A try of `run` leaves at `t` and ends a call's latency later, failed with
    /// probability p; a call that ends after the run ends no run.
    fn send(&mut self, t: u64, run: usize) {
        let r = &mut self.runs[run];
        r.tries += 1;
        self.f.counts.calls += 1;
        if r.tries == 1 {
            self.f.counts.first_tries += 1;
        }
        let ok = !self.rng.random_bool(self.p);
        let done = t.saturating_add(micros(self.sc.latency));
        if done >= self.end {
            return;
        }
        if ok {
            self.f.counts.ended += 1;
            self.f.counts.succeeded += 1;
            self.guard.served(r, millis(done));
            return;
        }
        match self.guard.failed(r, millis(done), &mut self.rng) {
            Some(w) => self
                .queue
                .push(done.saturating_add(micros(w)), Event::Send { run }),
            None => self.f.counts.ended += 1,
        }
    }
}

impl Model for Sim<'_> {
    type Event = Event;

    fn queue(&mut self) -> &mut Queue<Event> {
        &mut self.queue
    }

    fn handle(&mut self, t: u64, event: Event) {
        match event {
            Event::Arrival { client } => self.arrival(t, client),
            Event::Send { run } => self.send(t, run),
        }
    }
}

/// Plays `strategy` on `sc` with `seed`.
pub fn play(sc: &Scenario, strategy: Strategy, settings: Settings, seed: u64) -> Figures {
    let mut sim = Sim::new(sc, strategy, settings, seed);
    let end = sim.end;
    engine::run(&mut sim, Some(end));
    sim.f
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::sweep;

    /// Seeds 1 and 2: a point holds some 12,000 runs, so two seeds are plenty.
    const SEEDS: [u64; 2] = [1, 2];

    /// The mean amplification and success rate over `SEEDS` of each strategy, client count
    /// and probability, as `sweep::failure_rates` gives them.
    struct Sweep(Vec<Figures>);

    impl Sweep {
        fn of(strategies: &[Strategy], ps: &[f64], clients: &[u32], settings: Settings) -> Sweep {
            let mut all = Vec::new();
            for seed in SEEDS {
                all.extend(sweep::failure_rates(
                    &Scenario::default(),
                    strategies,
                    (ps, clients),
                    settings,
                    seed,
                ));
            }
            Sweep(all)
        }

        fn mean(&self, s: Strategy, clients: u32, p: f64, of: impl Fn(&Figures) -> f64) -> f64 {
            let v: Vec<f64> = self
                .0
                .iter()
                .filter(|f| f.strategy == s.name() && f.clients == clients && f.p == p)
                .map(of)
                .collect();
            assert_eq!(v.len(), SEEDS.len(), "{} {clients} {p}", s.name());
            v.iter().sum::<f64>() / v.len() as f64
        }

        fn amp(&self, s: Strategy, clients: u32, p: f64) -> f64 {
            self.mean(s, clients, p, |f| f.counts.amplification())
        }

        fn success(&self, s: Strategy, clients: u32, p: f64) -> f64 {
            self.mean(s, clients, p, |f| f.counts.success_rate())
        }
    }

    /// Three tries (two retries) send `1 + p + p^2` calls per run, 1.75 at p = 0.5, and
    /// never more than 1 + 2: Brooker's "N retries" line, whatever the client count.
    /// A call that would end after the run is not counted as an end: a latency longer than
    /// the run leaves every run unfinished, not every run a success.
    #[test]
    fn calls_that_end_after_the_run_end_no_run() {
        let sc = Scenario {
            latency: Duration::from_secs(3600),
            ..Scenario::default()
        };
        let f = play(&sc, Strategy::Retries, Settings::default(), 1);
        assert_eq!((f.counts.ended, f.counts.succeeded), (0, 0));
    }

    #[test]
    fn n_retries_multiply_the_load_by_up_to_one_plus_n() {
        let ps = [0.0, 0.1, 0.3, 0.5, 0.9];
        let sw = Sweep::of(&[Strategy::Retries], &ps, &[10, 1000], Settings::default());
        for n in [10, 1000] {
            for p in ps {
                let amp = sw.amp(Strategy::Retries, n, p);
                let expected = 1.0 + p + p * p;
                assert!((amp - expected).abs() < 0.05, "{n} p={p}: {amp}");
                assert!(amp <= 3.0, "{n} p={p}: {amp}");
                let success = sw.success(Strategy::Retries, n, p);
                assert!(
                    (success - (1.0 - p.powi(3))).abs() < 0.03,
                    "{n} p={p}: {success}"
                );
            }
        }
        assert_eq!(sw.amp(Strategy::Retries, 10, 0.0), 1.0);
    }

    /// A client's own breaker judges from its own calls: with 10 clients each sees 10 calls
    /// a second and keeps retrying while under a tenth fail; with 1000 each sees one call in
    /// ten seconds, one failure is most of its window, and it stops retrying at once: it
    /// drifts towards "no retries" (amplification near 1, success rate near `1 - p`).
    #[test]
    fn per_client_breakers_drift_towards_no_retries_as_clients_multiply() {
        let ps = [0.05, 0.1, 0.2, 0.5];
        let clients = [10, 100, 1000];
        let sw = Sweep::of(&[Strategy::Breaker], &ps, &clients, Settings::default());
        let excess = |n: u32| {
            ps.iter()
                .map(|p| sw.amp(Strategy::Breaker, n, *p) - 1.0)
                .sum::<f64>()
        };
        for p in ps {
            let (few, many) = (
                sw.amp(Strategy::Breaker, 10, p),
                sw.amp(Strategy::Breaker, 1000, p),
            );
            assert!(many <= few + 0.005, "p={p}: 10 clients {few}, 1000 {many}");
            assert!(many < 1.03, "p={p}: 1000 clients {many}");
            let success = sw.success(Strategy::Breaker, 1000, p);
            assert!((success - (1.0 - p)).abs() < 0.03, "p={p}: {success}");
        }
        assert!(
            excess(1000) < excess(10) / 2.0,
            "extra calls per run summed over p: 10 clients {}, 1000 {}",
            excess(10),
            excess(1000)
        );
        let few = sw.amp(Strategy::Breaker, 10, 0.05);
        assert!(few > 1.03, "10 clients still retry at p=0.05: {few}");
    }

    /// A client's own token bucket (10 tokens, a tenth of one back per success) drains only
    /// if its client makes many calls: with 10 clients it runs dry and holds the load near 1,
    /// with 1000 clients each makes about 12 runs in the 120 s and its bucket barely empties,
    /// so it drifts towards "N retries".
    #[test]
    fn per_client_buckets_drift_towards_n_retries_as_clients_multiply() {
        let ps = [0.3, 0.5];
        let clients = [10, 100, 1000];
        let sw = Sweep::of(
            &[Strategy::Bucket, Strategy::Retries],
            &ps,
            &clients,
            Settings::default(),
        );
        for p in ps {
            let retries = sw.amp(Strategy::Retries, 1000, p);
            let amps: Vec<f64> = clients
                .iter()
                .map(|n| sw.amp(Strategy::Bucket, *n, p))
                .collect();
            assert!(amps[0] < amps[1] && amps[1] < amps[2], "p={p}: {amps:?}");
            assert!(
                amps[2] > retries - 0.15,
                "p={p}: {amps:?} against {retries}"
            );
            assert!(
                amps[0] - 1.0 < (retries - 1.0) / 3.0,
                "p={p}: {amps:?} against {retries}"
            );
        }
    }

    /// The budget shared by the fleet lets retries be a tenth of the successes (plus a floor
    /// of 10 per 10 s), whoever sends them: amplification at most about 1.1 at every client
    /// count and every p; twice the fraction, about twice the excess.
    #[test]
    fn the_shared_budget_holds_amplification_near_one_plus_its_fraction() {
        let ps = [0.0, 0.1, 0.2, 0.3, 0.5];
        let clients = [10, 100, 1000];
        let sw = Sweep::of(
            &[Strategy::SharedBudget],
            &ps,
            &clients,
            Settings::default(),
        );
        for n in clients {
            for p in ps {
                let amp = sw.amp(Strategy::SharedBudget, n, p);
                assert!((1.0..=1.15).contains(&amp), "{n} p={p}: {amp}");
            }
            // It does retry: with p = 0.1 it buys back most of the failures.
            let amp = sw.amp(Strategy::SharedBudget, n, 0.1);
            assert!(amp > 1.05, "{n}: {amp}");
        }
        let mut wide = Settings::default();
        wide.limits.budget_pct = 20.0;
        let sw20 = Sweep::of(&[Strategy::SharedBudget], &[0.3, 0.5], &clients, wide);
        for n in clients {
            for p in [0.3, 0.5] {
                let (a10, a20) = (
                    sw.amp(Strategy::SharedBudget, n, p),
                    sw20.amp(Strategy::SharedBudget, n, p),
                );
                assert!(
                    a20 <= 1.25 && a20 - 1.0 > 1.5 * (a10 - 1.0),
                    "{n} p={p}: {a10} {a20}"
                );
            }
        }
    }

    #[test]
    fn odd_scenarios_end_without_a_panic() {
        for sc in [
            Scenario {
                rate: 0.0,
                ..Scenario::default()
            },
            Scenario {
                clients: 0,
                ..Scenario::default()
            },
            Scenario {
                p: f64::NAN,
                duration: Duration::from_secs(1),
                ..Scenario::default()
            },
            Scenario {
                p: 2.0,
                duration: Duration::from_secs(1),
                ..Scenario::default()
            },
        ] {
            let f = play(&sc, Strategy::SharedBreaker, Settings::default(), 1);
            assert!((0.0..=1.0).contains(&f.counts.success_rate()), "{sc:?}");
        }
    }
}
