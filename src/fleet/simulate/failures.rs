//! The failure-rate model (after Marc Brooker's "Fixing retries with token buckets and
//! circuit breakers", 2022): `clients` clients, each an open (Poisson) source, together
//! sending `rate` first tries per second; every call fails with probability `p`,
//! independently of the others and of the load (the server is not overloaded; something
//! else fails a share of calls). What a strategy costs is its load amplification (calls per
//! first try) and what it buys is its success rate (runs that succeeded). Splitting the same
//! load over more clients shows what state of each client's own can and cannot know.

use super::guard::{Guard, Settings, Start, Strategy};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
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
    /// Runs that ended, and those that succeeded (a refused run ended unserved).
    pub ended: u64,
    pub succeeded: u64,
    /// Calls, and first tries.
    pub calls: u64,
    pub first_tries: u64,
}

impl Figures {
    /// Succeeded runs / runs that ended (0 to 1).
    pub fn success_rate(&self) -> f64 {
        if self.ended == 0 {
            1.0
        } else {
            self.succeeded as f64 / self.ended as f64
        }
    }

    /// Calls / first tries.
    pub fn amplification(&self) -> f64 {
        if self.first_tries == 0 {
            1.0
        } else {
            self.calls as f64 / self.first_tries as f64
        }
    }
}

/// Events in time order (microseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// A client starts a run.
    Arrival { client: u32 },
    /// A try of run `run` is sent.
    Send { run: usize },
}

struct Run {
    client: u32,
    tries: u32,
    limit: u32,
    previous: Duration,
    probe: Option<u64>,
}

fn us(d: Duration) -> u64 {
    d.as_micros().min(u128::from(u64::MAX)) as u64
}

/// Plays `strategy` on `sc` with `seed`.
pub fn play(sc: &Scenario, strategy: Strategy, settings: Settings, seed: u64) -> Figures {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut guard = Guard::new(strategy, settings, sc.clients);
    let mut f = Figures {
        strategy: strategy.name().to_string(),
        p: sc.p,
        clients: sc.clients,
        ended: 0,
        succeeded: 0,
        calls: 0,
        first_tries: 0,
    };
    let end = us(sc.duration);
    let per_client = sc.rate / f64::from(sc.clients.max(1));
    let exp = |rng: &mut StdRng, mean_s: f64| -> u64 {
        let u: f64 = rng.random_range(f64::EPSILON..1.0);
        (-u.ln() * mean_s * 1e6) as u64
    };
    let mut queue: BinaryHeap<Reverse<(u64, u64, Event)>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut push = |q: &mut BinaryHeap<Reverse<(u64, u64, Event)>>, t: u64, e: Event| {
        seq += 1;
        q.push(Reverse((t, seq, e)));
    };
    for client in 0..sc.clients {
        let t = exp(&mut rng, 1.0 / per_client);
        push(&mut queue, t, Event::Arrival { client });
    }
    let lease = (sc.latency + settings.cap) * settings.attempts.max(1);
    let mut runs: Vec<Run> = Vec::new();
    while let Some(Reverse((t, _, event))) = queue.pop() {
        if t >= end {
            break;
        }
        let ms = t / 1000;
        match event {
            Event::Arrival { client } => {
                push(
                    &mut queue,
                    t + exp(&mut rng, 1.0 / per_client),
                    Event::Arrival { client },
                );
                let (limit, probe) = match guard.start(client, ms, lease) {
                    Start::Go(n) => (n, None),
                    Start::Probe(id) => (1, Some(id)),
                    Start::Refused => {
                        f.ended += 1;
                        continue;
                    }
                };
                runs.push(Run {
                    client,
                    tries: 0,
                    limit,
                    previous: guard.base(),
                    probe,
                });
                push(
                    &mut queue,
                    t,
                    Event::Send {
                        run: runs.len() - 1,
                    },
                );
            }
            Event::Send { run } => {
                let r = &mut runs[run];
                r.tries += 1;
                f.calls += 1;
                if r.tries == 1 {
                    f.first_tries += 1;
                }
                let ok = !rng.random_bool(sc.p.clamp(0.0, 1.0));
                let done = t + us(sc.latency);
                let (client, tries, limit, previous, probe) =
                    (r.client, r.tries, r.limit, r.previous, r.probe);
                guard.observe(client, ok);
                if ok {
                    f.ended += 1;
                    f.succeeded += 1;
                    guard.finish(client, done / 1000, true, probe);
                    continue;
                }
                let wait = if tries < limit {
                    guard.retry(client, done / 1000, tries, previous, &mut rng)
                } else {
                    None
                };
                match wait {
                    Some(w) => {
                        runs[run].previous = w.max(guard.base());
                        push(&mut queue, done + us(w), Event::Send { run });
                    }
                    None => {
                        f.ended += 1;
                        guard.finish(client, done / 1000, false, probe);
                    }
                }
            }
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(p: f64, clients: u32, s: Strategy) -> Figures {
        let sc = Scenario {
            p,
            clients,
            ..Scenario::default()
        };
        play(&sc, s, Settings::default(), 7)
    }

    #[test]
    #[ignore = "prints the sweep"]
    fn print_the_sweep() {
        for clients in [10, 100, 1000] {
            for p in [0.0, 0.1, 0.2, 0.3, 0.4, 0.5] {
                let row: Vec<String> = Strategy::ALL
                    .iter()
                    .map(|s| {
                        let f = at(p, clients, *s);
                        format!(
                            "{} {:.2}/{:.3}",
                            s.name(),
                            f.amplification(),
                            f.success_rate()
                        )
                    })
                    .collect();
                eprintln!("{clients:5} p={p:.1} {}", row.join("  "));
            }
        }
    }

    #[test]
    fn n_retries_multiply_the_load_and_the_shared_budget_holds_it() {
        for clients in [10, 100, 1000] {
            let retries = at(0.5, clients, Strategy::Retries);
            assert!(retries.amplification() > 1.6, "{}", retries.amplification());
            let shared = at(0.5, clients, Strategy::SharedBudget);
            assert!(
                shared.amplification() < 1.2,
                "{clients}: {}",
                shared.amplification()
            );
        }
        let none = at(0.0, 100, Strategy::Retries);
        assert_eq!(none.amplification(), 1.0);
        assert_eq!(none.success_rate(), 1.0);
    }
}
