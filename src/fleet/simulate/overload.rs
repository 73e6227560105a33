//! The overload model (after Marc Brooker's "Congestive collapse" simulation, 2023): a
//! server whose latency grows with the requests in flight (1 s + 10 ms per request by
//! default), clients that give up after a timeout (3 s) and try again, a network that adds
//! a random delay each way, and a trigger: a load spike (40 to 80 requests/s for 5 s at
//! t = 20 s) or a capacity drop. Work done for a request whose client already timed out is
//! wasted. After the trigger ends the system either recovers or stays stuck: retries keep
//! the latency above the timeout (a metastable failure: Bronson et al., HotOS 2021; Huang
//! et al., OSDI 2022).
//!
//! The model's rules: the server starts every request at once, in parallel; a request's
//! latency is fixed when it arrives, from the requests then in flight (times `1 / (1 -
//! drop)` during a capacity drop); an open population draws first tries as a Poisson
//! process at the base rate (the spike rate during a spike), each from one of `clients`
//! clients chosen at random; a closed population is `clients` clients that each start their
//! next run a random think time after the last ended (the mean chosen so that the offered
//! rate is the base rate when answers are quick). Figures are per second of simulated time.

use super::guard::{Guard, Settings, Start, Strategy};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

/// Who sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Population {
    /// Arrivals that keep coming whatever happens (each cron tick a new first try).
    Open,
    /// A fixed population that waits for its answer before it sends again.
    Closed,
}

/// The overload scenario.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scenario {
    /// How long the run lasts (80 s).
    pub duration: Duration,
    /// First tries per second before and after the trigger (40), and during a spike (80).
    pub base_rate: f64,
    pub spike_rate: f64,
    /// When the trigger starts (20 s) and how long it lasts (5 s).
    pub trigger_at: Duration,
    pub trigger_for: Duration,
    /// The fraction of capacity lost during the trigger (0: none).
    pub capacity_drop: f64,
    /// The server's latency with nothing in flight (1 s), and what each request in flight
    /// adds (10 ms).
    pub latency: Duration,
    pub per_request: Duration,
    /// The client's timeout per try (3 s).
    pub timeout: Duration,
    /// The most the network adds each way (uniform from 0; 50 ms).
    pub network: Duration,
    /// Distinct clients (1000).
    pub clients: u32,
    /// Open or closed.
    pub population: Population,
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            duration: Duration::from_secs(80),
            base_rate: 40.0,
            spike_rate: 80.0,
            trigger_at: Duration::from_secs(20),
            trigger_for: Duration::from_secs(5),
            capacity_drop: 0.0,
            latency: Duration::from_secs(1),
            per_request: Duration::from_millis(10),
            timeout: Duration::from_secs(3),
            network: Duration::from_millis(50),
            clients: 1000,
            population: Population::Open,
        }
    }
}

/// What one strategy did over the run.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    /// The strategy's name.
    pub strategy: String,
    /// Per second: tries sent (offered load), answers the server finished (throughput),
    /// answers that reached their client before its timeout (goodput), first tries.
    pub offered: Vec<u32>,
    pub throughput: Vec<u32>,
    pub goodput: Vec<u32>,
    pub first: Vec<u32>,
    /// Runs started, runs that ended (succeeded, failed or refused) before the end of the
    /// simulation, runs that succeeded, runs refused by a breaker.
    pub runs: u64,
    pub ended: u64,
    pub succeeded: u64,
    pub refused: u64,
    /// Tries sent, first tries.
    pub calls: u64,
    pub first_tries: u64,
    /// Goodput before the trigger (mean per second over the 15 s before it).
    pub level: f64,
    /// Recovered: goodput back to 90% of `level` (as a 5 s moving average) and held there
    /// for the last 10 s of the run.
    pub recovered: bool,
    /// Seconds from the trigger's end to recovery (None: stuck).
    pub recover_s: Option<f64>,
}

impl Figures {
    /// Succeeded runs / runs that ended (0 to 1); a refused run has ended, unserved.
    pub fn success_rate(&self) -> f64 {
        if self.ended == 0 {
            1.0
        } else {
            self.succeeded as f64 / self.ended as f64
        }
    }

    /// Tries / first tries.
    pub fn amplification(&self) -> f64 {
        if self.first_tries == 0 {
            1.0
        } else {
            self.calls as f64 / self.first_tries as f64
        }
    }

    /// Goodput over the last 10 s, as a fraction of the level before the trigger.
    pub fn final_goodput(&self) -> f64 {
        let tail: Vec<u32> = self.goodput.iter().rev().take(10).copied().collect();
        let mean = tail.iter().sum::<u32>() as f64 / tail.len().max(1) as f64;
        if self.level > 0.0 {
            mean / self.level
        } else {
            0.0
        }
    }
}

/// Events, in time order (microseconds); ties in the order they were made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// A client starts a run.
    Arrival { client: u32 },
    /// A try reaches the server.
    AtServer { run: usize },
    /// The server may have finished its first request (stale unless `epoch` is current).
    Tick { epoch: u64 },
    /// The trigger begins or ends (the server's speed may change).
    Edge,
    /// The answer reaches the client.
    Answer { run: usize, sent: u64 },
    /// The client's timeout for the try sent at `sent`.
    Timeout { run: usize, sent: u64 },
    /// A retry is due.
    Retry { run: usize },
}

/// One run's progress.
struct Run {
    client: u32,
    tries: u32,
    limit: u32,
    /// When the try in flight was sent (its identity).
    sent: u64,
    previous: Duration,
    probe: Option<u64>,
    over: bool,
}

/// The server: processor sharing. Every request in flight progresses at the same speed,
/// `latency / (latency + per_request x n)` of a request's solo work per second with `n` in
/// flight (times `1 - drop` during a capacity drop), so a request alone takes `latency`
/// and each one more in flight slows them all; a request needs `latency` of solo work. The
/// work is counted on a virtual clock that runs at that speed, so the next completion is
/// known without touching every request.
struct Server {
    /// Solo work per request and the slowdown per request in flight, in seconds.
    work: f64,
    per: f64,
    /// The fraction of capacity lost now.
    slow: f64,
    /// The virtual clock (seconds of solo work done per request) and when it was read.
    virt: f64,
    at: u64,
    /// Requests in flight by the virtual time they finish at: (finish, run, sent).
    heap: BinaryHeap<Reverse<(Finish, usize, u64)>>,
    /// Bumped whenever the speed changes: older ticks are stale.
    epoch: u64,
}

/// A virtual finishing time, ordered.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
struct Finish(f64);

impl Eq for Finish {}

impl Ord for Finish {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl Server {
    fn new(sc: &Scenario) -> Server {
        Server {
            work: sc.latency.as_secs_f64(),
            per: sc.per_request.as_secs_f64(),
            slow: 0.0,
            virt: 0.0,
            at: 0,
            heap: BinaryHeap::new(),
            epoch: 0,
        }
    }

    /// Solo work done per second of real time now.
    fn speed(&self) -> f64 {
        let n = self.heap.len() as f64;
        self.work / (self.work + self.per * n) * (1.0 - self.slow)
    }

    /// Runs the virtual clock up to `t` (microseconds).
    fn advance(&mut self, t: u64) {
        let dt = t.saturating_sub(self.at) as f64 / 1e6;
        self.virt += dt * self.speed();
        self.at = t;
    }

    fn admit(&mut self, run: usize, sent: u64) {
        self.heap
            .push(Reverse((Finish(self.virt + self.work), run, sent)));
        self.epoch += 1;
    }

    /// The requests whose work is done, taken out.
    fn finished(&mut self) -> Vec<(usize, u64)> {
        let mut done = Vec::new();
        while let Some(Reverse((Finish(v), run, sent))) = self.heap.peek().copied() {
            if v > self.virt + 1e-9 {
                break;
            }
            self.heap.pop();
            done.push((run, sent));
        }
        if !done.is_empty() {
            self.epoch += 1;
        }
        done
    }

    /// When (microseconds) the first request in flight finishes at today's speed.
    fn next_done(&self, now: u64) -> u64 {
        match self.heap.peek() {
            Some(Reverse((Finish(v), _, _))) => {
                let left = (v - self.virt).max(0.0) / self.speed().max(1e-9);
                now + (left * 1e6).ceil() as u64
            }
            None => u64::MAX,
        }
    }
}

fn us(d: Duration) -> u64 {
    d.as_micros().min(u128::from(u64::MAX)) as u64
}

/// Plays `strategy` on `sc` with seed `seed`.
pub fn play(sc: &Scenario, strategy: Strategy, settings: Settings, seed: u64) -> Figures {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut guard = Guard::new(strategy, settings, sc.clients);
    let end = us(sc.duration);
    let secs = sc.duration.as_secs().max(1) as usize;
    let mut f = Figures {
        strategy: strategy.name().to_string(),
        offered: vec![0; secs],
        throughput: vec![0; secs],
        goodput: vec![0; secs],
        first: vec![0; secs],
        runs: 0,
        ended: 0,
        succeeded: 0,
        refused: 0,
        calls: 0,
        first_tries: 0,
        level: 0.0,
        recovered: false,
        recover_s: None,
    };
    let second = |t: u64| ((t / 1_000_000) as usize).min(secs - 1);
    let (t0, t1) = (us(sc.trigger_at), us(sc.trigger_at + sc.trigger_for));
    let rate = |t: u64| {
        if t >= t0 && t < t1 {
            sc.spike_rate
        } else {
            sc.base_rate
        }
    };
    let mut queue: BinaryHeap<Reverse<(u64, u64, Event)>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut push = |q: &mut BinaryHeap<Reverse<(u64, u64, Event)>>, t: u64, e: Event| {
        seq += 1;
        q.push(Reverse((t, seq, e)));
    };
    let exp = |rng: &mut StdRng, mean_s: f64| -> u64 {
        let u: f64 = rng.random_range(f64::EPSILON..1.0);
        (-u.ln() * mean_s * 1e6) as u64
    };
    let net = |rng: &mut StdRng| rng.random_range(0..=us(sc.network));
    match sc.population {
        Population::Open => {
            let t = exp(&mut rng, 1.0 / sc.base_rate);
            let client = rng.random_range(0..sc.clients);
            push(&mut queue, t, Event::Arrival { client });
        }
        Population::Closed => {
            for client in 0..sc.clients {
                let t = exp(&mut rng, f64::from(sc.clients) / sc.base_rate);
                push(&mut queue, t, Event::Arrival { client });
            }
        }
    }
    let mut runs: Vec<Run> = Vec::new();
    let mut server = Server::new(sc);
    push(&mut queue, t0, Event::Edge);
    push(&mut queue, t1, Event::Edge);
    let lease = sc.timeout * settings.attempts.max(1) + settings.cap * settings.attempts;
    let ms = |t: u64| t / 1000;
    while let Some(Reverse((t, _, event))) = queue.pop() {
        if t >= end {
            break;
        }
        match event {
            Event::Arrival { client } => {
                f.runs += 1;
                f.first[second(t)] += 1;
                match sc.population {
                    Population::Open => {
                        let next = t + exp(&mut rng, 1.0 / rate(t));
                        let c = rng.random_range(0..sc.clients);
                        push(&mut queue, next, Event::Arrival { client: c });
                    }
                    Population::Closed => {}
                }
                let (limit, probe) = match guard.start(client, ms(t), lease) {
                    Start::Go(n) => (n, None),
                    Start::Probe(id) => (1, Some(id)),
                    Start::Refused => {
                        f.refused += 1;
                        f.ended += 1;
                        if sc.population == Population::Closed {
                            let think = f64::from(sc.clients) / rate(t);
                            push(
                                &mut queue,
                                t + exp(&mut rng, think),
                                Event::Arrival { client },
                            );
                        }
                        continue;
                    }
                };
                runs.push(Run {
                    client,
                    tries: 0,
                    limit,
                    sent: 0,
                    previous: guard.base(),
                    probe,
                    over: false,
                });
                // The first try is sent by a Retry event at once (counted there).
                let run = runs.len() - 1;
                push(&mut queue, t, Event::Retry { run });
            }
            Event::Retry { run } => {
                let r = &mut runs[run];
                if r.over {
                    continue;
                }
                r.tries += 1;
                r.sent = t;
                if r.tries == 1 {
                    f.first_tries += 1;
                }
                f.calls += 1;
                f.offered[second(t)] += 1;
                push(&mut queue, t + net(&mut rng), Event::AtServer { run });
                push(
                    &mut queue,
                    t + us(sc.timeout),
                    Event::Timeout { run, sent: t },
                );
            }
            Event::AtServer { run } => {
                server.advance(t);
                server.admit(run, runs[run].sent);
                push(
                    &mut queue,
                    server.next_done(t),
                    Event::Tick {
                        epoch: server.epoch,
                    },
                );
            }
            Event::Edge => {
                server.advance(t);
                server.slow = if t >= t0 && t < t1 {
                    sc.capacity_drop.clamp(0.0, 0.99)
                } else {
                    0.0
                };
                server.epoch += 1;
                push(
                    &mut queue,
                    server.next_done(t),
                    Event::Tick {
                        epoch: server.epoch,
                    },
                );
            }
            Event::Tick { epoch } => {
                if epoch != server.epoch {
                    continue;
                }
                server.advance(t);
                for (run, sent) in server.finished() {
                    f.throughput[second(t)] += 1;
                    push(&mut queue, t + net(&mut rng), Event::Answer { run, sent });
                }
                push(
                    &mut queue,
                    server.next_done(t),
                    Event::Tick {
                        epoch: server.epoch,
                    },
                );
            }
            Event::Answer { run, sent } => {
                let r = &mut runs[run];
                if r.over || r.sent != sent || t > sent + us(sc.timeout) {
                    continue; // the client gave up on this try: wasted work
                }
                r.over = true;
                f.goodput[second(t)] += 1;
                f.succeeded += 1;
                f.ended += 1;
                let (client, probe) = (r.client, r.probe);
                guard.observe(client, true);
                guard.finish(client, ms(t), true, probe);
                if sc.population == Population::Closed {
                    let think = f64::from(sc.clients) / rate(t);
                    push(
                        &mut queue,
                        t + exp(&mut rng, think),
                        Event::Arrival { client },
                    );
                }
            }
            Event::Timeout { run, sent } => {
                let r = &mut runs[run];
                if r.over || r.sent != sent {
                    continue;
                }
                let (client, tries, limit, previous) = (r.client, r.tries, r.limit, r.previous);
                guard.observe(client, false);
                let wait = if tries < limit {
                    guard.retry(client, ms(t), tries, previous, &mut rng)
                } else {
                    None
                };
                let r = &mut runs[run];
                match wait {
                    Some(w) => {
                        r.previous = w.max(guard.base());
                        push(&mut queue, t + us(w), Event::Retry { run });
                    }
                    None => {
                        r.over = true;
                        f.ended += 1;
                        let probe = r.probe;
                        guard.finish(client, ms(t), false, probe);
                        if sc.population == Population::Closed {
                            let think = f64::from(sc.clients) / rate(t);
                            push(
                                &mut queue,
                                t + exp(&mut rng, think),
                                Event::Arrival { client },
                            );
                        }
                    }
                }
            }
        }
    }
    judge(sc, &mut f);
    f
}

/// The goodput before the trigger (the mean of the 15 s before it, the first 5 s of the run
/// left out as its warm-up), and whether and when
/// it came back: recovered when the mean goodput of the last 10 s of the run is at least 90%
/// of that level; the recovery time is from the trigger's end to the first second whose 5 s
/// moving average reaches 90% of it. (Means, not single seconds: at 40 answers per second
/// one second's count varies by about 6.)
fn judge(sc: &Scenario, f: &mut Figures) {
    let at = sc.trigger_at.as_secs() as usize;
    let from = at.saturating_sub(15).max(5.min(at.saturating_sub(1)));
    let before = &f.goodput[from..at.min(f.goodput.len())];
    f.level = before.iter().sum::<u32>() as f64 / before.len().max(1) as f64;
    let avg = |i: usize| {
        let lo = i.saturating_sub(4);
        let w = &f.goodput[lo..=i];
        w.iter().sum::<u32>() as f64 / w.len() as f64
    };
    let end = (sc.trigger_at + sc.trigger_for).as_secs() as usize;
    f.recovered = f.level > 0.0 && f.final_goodput() >= 0.9;
    f.recover_s = (end..f.goodput.len())
        .find(|&i| avg(i) >= 0.9 * f.level)
        .filter(|_| f.recovered)
        .map(|i| (i + 1).saturating_sub(end) as f64);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(strategy: Strategy) -> Figures {
        play(&Scenario::default(), strategy, Settings::default(), 1)
    }

    #[test]
    #[ignore = "prints the figures of every strategy"]
    fn print_every_strategy() {
        for s in Strategy::ALL {
            let f = run(s);
            eprintln!(
                "{:15} rec {:5} {:?} succ {:.3} amp {:.2} final {:.2} goodput {:?}",
                s.name(),
                f.recovered,
                f.recover_s,
                f.success_rate(),
                f.amplification(),
                f.final_goodput(),
                &f.goodput[15..]
            );
        }
    }

    #[test]
    fn without_a_trigger_every_strategy_serves_the_load() {
        let sc = Scenario {
            spike_rate: 40.0,
            ..Scenario::default()
        };
        for s in Strategy::ALL {
            let f = play(&sc, s, Settings::default(), 2);
            assert!(f.recovered, "{}: {:?}", s.name(), f.goodput);
            assert!(f.success_rate() > 0.99, "{}", s.name());
        }
    }

    #[test]
    fn a_spike_with_three_tries_leaves_it_stuck_and_the_shared_budget_recovers() {
        let stuck = run(Strategy::Retries);
        assert!(!stuck.recovered, "{:?}", stuck.goodput);
        assert!(stuck.final_goodput() < 0.2, "{}", stuck.final_goodput());
        let full = run(Strategy::Full);
        assert!(!full.recovered, "backoff alone: {:?}", full.goodput);
        let shared = run(Strategy::SharedBudget);
        assert!(shared.recovered, "{:?}", shared.goodput);
        assert!(
            shared.recover_s.is_some_and(|s| s <= 30.0),
            "{:?}",
            shared.recover_s
        );
        let none = run(Strategy::NoRetry);
        assert!(none.recovered, "{:?}", none.goodput);
    }
}
