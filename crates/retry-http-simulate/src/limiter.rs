//! The limiter model (`--model limiter`): one batch against a token bucket that sheds load
//! a request at a time (nginx's `limit_req`: RATE a second, BURST more at once, 429 beyond),
//! with and without Retry-After, and a fixed window for comparison. The batch is the
//! client's: `--parallel-max-host` transfers in flight to the origin, one in flight until
//! the first answer, a Retry-After holding the origin (its transfers released over
//! `--retry-after-spread`), a 429 without one retried after the client's full-jitter
//! backoff, and, in the `pacer` strategy, the very pacer a batch runs (`policy::pacer`),
//! fed the simulated clock. Time advances in steps of [`TICK`]; the answer to a request
//! comes one round trip after it is sent.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use retry_http_policy::pacer::{self, Pacer, Send};
use retry_http_policy::{Backoff, Jitter};
use std::time::{Duration, Instant};

/// The step of simulated time.
pub const TICK: Duration = Duration::from_micros(250);

/// What the server limits with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Limit {
    /// A token bucket of `burst + 1` tokens, refilled at `rate` a second.
    Bucket {
        /// Tokens a second.
        rate: f64,
        /// Requests allowed at once beyond the rate.
        burst: f64,
    },
    /// A fixed window of one second allowing `rate` requests, aligned to the batch's start
    /// plus `phase`.
    Window {
        /// Requests a window.
        rate: f64,
        /// Where the first window ends, from the start.
        phase: Duration,
    },
}

/// One batch against one limiter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scenario {
    /// The URLs of the batch.
    pub requests: u32,
    /// Transfers in flight to the origin at most (`--parallel-max-host`).
    pub parallel: u32,
    /// The round trip of a request.
    pub rtt: Duration,
    /// The limit.
    pub limit: Limit,
    /// The 429's Retry-After, when it has one.
    pub retry_after: Option<Duration>,
    /// Attempts a transfer makes at most.
    pub attempts: u32,
}

/// What a strategy did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figures {
    /// From the first send to the last answer, seconds.
    pub wall_s: f64,
    /// Requests sent.
    pub sent: u32,
    /// Of which throttled.
    pub throttled: u32,
    /// Transfers that got a 200.
    pub succeeded: u32,
    /// The rate the pacer settled at, requests/s (None: not paced at the end).
    pub settled: Option<f64>,
}

/// The server's state.
struct Server {
    limit: Limit,
    tokens: f64,
    last: Duration,
    window_end: Duration,
    used: f64,
}

impl Server {
    fn new(limit: Limit) -> Server {
        let (tokens, window_end) = match limit {
            Limit::Bucket { burst, .. } => (burst + 1.0, Duration::ZERO),
            Limit::Window { phase, .. } => (0.0, phase),
        };
        Server {
            limit,
            tokens,
            last: Duration::ZERO,
            window_end,
            used: 0.0,
        }
    }

    /// Whether a request arriving at `t` (from the start) is served.
    fn accepts(&mut self, t: Duration) -> bool {
        match self.limit {
            Limit::Bucket { rate, burst } => {
                let dt = (t - self.last).as_secs_f64();
                self.last = t;
                self.tokens = (self.tokens + dt * rate).min(burst + 1.0);
                let ok = self.tokens >= 1.0;
                if ok {
                    self.tokens -= 1.0;
                }
                ok
            }
            Limit::Window { rate, .. } => {
                while t >= self.window_end {
                    self.window_end += Duration::from_secs(1);
                    self.used = 0.0;
                }
                self.used += 1.0;
                self.used <= rate
            }
        }
    }
}

/// A transfer of the batch.
#[derive(Debug, Clone, Copy)]
enum Slot {
    /// Ready to send its attempt `n` at this time.
    Ready(Duration, u32),
    /// In flight: answered at this time, served or not, attempt `n`.
    Flying(Duration, bool, u32),
}

/// The origin's table, as the client keeps it.
struct Origin {
    hold_until: Duration,
    answered: bool,
    in_flight: u32,
    pacer: Option<Pacer>,
}

/// Runs the batch with the pacer (`paced`) or without, `seed` drawing the spread and the
/// backoff.
pub fn run(sc: &Scenario, paced: bool, seed: u64) -> Figures {
    let epoch = Instant::now();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut server = Server::new(sc.limit);
    let mut o = Origin {
        hold_until: Duration::ZERO,
        answered: false,
        in_flight: 0,
        pacer: paced.then(Pacer::new),
    };
    let mut f = Figures {
        wall_s: 0.0,
        sent: 0,
        throttled: 0,
        succeeded: 0,
        settled: None,
    };
    let mut next_url = 0u32;
    let mut slots: Vec<Slot> = Vec::new();
    let mut t = Duration::ZERO;
    let horizon = Duration::from_secs(600);
    while t < horizon {
        while slots.len() < sc.parallel as usize && next_url < sc.requests {
            next_url += 1;
            slots.push(Slot::Ready(t, 1));
        }
        if slots.is_empty() {
            break;
        }
        slots = step(
            sc,
            (&mut o, &mut server, &mut f),
            slots,
            (t, epoch, &mut rng),
        );
        t += TICK;
    }
    f.wall_s = t.as_secs_f64();
    f.settled = o.pacer.as_ref().and_then(|p| p.rate(epoch + t));
    f
}

/// One tick at `t`: answers arrive, then the ready transfers ask the table; returns the
/// transfers still under way.
fn step(
    sc: &Scenario,
    (o, server, f): (&mut Origin, &mut Server, &mut Figures),
    slots: Vec<Slot>,
    (t, epoch, rng): (Duration, Instant, &mut StdRng),
) -> Vec<Slot> {
    let mut kept = Vec::with_capacity(slots.len());
    for slot in slots {
        match slot {
            Slot::Flying(at, served, n) if at <= t => {
                if let Some(next) = answered(sc, o, f, (served, n), (t, epoch, rng)) {
                    kept.push(next);
                }
            }
            Slot::Ready(at, n) if at <= t => kept.push(ask(sc, o, server, f, (n, t, epoch))),
            other => kept.push(other),
        }
    }
    kept
}

/// A ready transfer's attempt `n` asks the table at `t`: sent, or ready again later.
fn ask(
    sc: &Scenario,
    o: &mut Origin,
    server: &mut Server,
    f: &mut Figures,
    (n, t, epoch): (u32, Duration, Instant),
) -> Slot {
    let poll = Duration::from_millis(20);
    if t < o.hold_until {
        return Slot::Ready(o.hold_until, n);
    }
    if !o.answered && o.in_flight > 0 {
        return Slot::Ready(t + poll, n);
    }
    if let Some(p) = o.pacer.as_mut() {
        match p.before_send(epoch + t, o.in_flight) {
            Send::Go => {}
            Send::Room => return Slot::Ready(t + poll, n),
            Send::Wait(w) => return Slot::Ready(t + w.max(TICK), n),
        }
    }
    o.in_flight += 1;
    f.sent += 1;
    let served = server.accepts(t + sc.rtt / 2);
    Slot::Flying(t + sc.rtt, served, n)
}

/// The answer to attempt `n` arrives at `t`: the table and the pacer hear it; a throttle
/// is retried (after the hold and its spread, or the backoff), while attempts are left.
fn answered(
    sc: &Scenario,
    o: &mut Origin,
    f: &mut Figures,
    (served, n): (bool, u32),
    (t, epoch, rng): (Duration, Instant, &mut StdRng),
) -> Option<Slot> {
    o.in_flight = o.in_flight.saturating_sub(1);
    o.answered = true;
    let ra = sc.retry_after.filter(|_| !served);
    if let Some(p) = o.pacer.as_mut() {
        let a = pacer::Answer {
            throttled: !served,
            retry_after: ra,
            accepted: served,
        };
        p.heard(epoch + t, if served { 200 } else { 429 }, a);
    }
    if served {
        f.succeeded += 1;
        return None;
    }
    f.throttled += 1;
    if n >= sc.attempts {
        return None;
    }
    let wait = match ra {
        Some(ra) => {
            o.hold_until = o.hold_until.max(t + ra);
            ra + Duration::from_millis(100).mul_f64(rng.random::<f64>())
        }
        None => backoff(n, rng),
    };
    Some(Slot::Ready(t + wait, n + 1))
}

/// The client's default backoff before retry `n` (1-based): full jitter, base 250 ms, cap
/// 8 s (`--base`, `--cap`).
fn backoff(n: u32, rng: &mut StdRng) -> Duration {
    let b = Backoff {
        base: Duration::from_millis(250),
        cap: Duration::from_secs(8),
        jitter: Jitter::Full,
    };
    b.draw(n - 1, Duration::ZERO, rng).total()
}

/// The model's scenarios, as the table names them: 300 URLs, 6 in flight (the default
/// `--parallel-max-host`), a 1 ms round trip, 11 attempts (benches/pacing.sh's).
pub fn scenarios() -> Vec<(&'static str, Scenario)> {
    let base = Scenario {
        requests: 300,
        parallel: 6,
        rtt: Duration::from_millis(1),
        limit: Limit::Bucket {
            rate: 40.0,
            burst: 10.0,
        },
        retry_after: None,
        attempts: 11,
    };
    let one = Some(Duration::from_secs(1));
    let window = Limit::Window {
        rate: 40.0,
        phase: Duration::from_millis(500),
    };
    vec![
        ("token bucket 40/s burst 10, 429", base),
        (
            "token bucket 40/s burst 10, 429 + Retry-After 1",
            Scenario {
                retry_after: one,
                ..base
            },
        ),
        (
            "fixed window 40/s, 429 + Retry-After 1",
            Scenario {
                limit: window,
                retry_after: one,
                ..base
            },
        ),
    ]
}

/// The strategies: the batch without its pacer (`hold`: Retry-After and backoff only) and
/// with it (`pacer`).
pub const STRATEGIES: [(&str, bool); 2] = [("hold", false), ("pacer", true)];

/// Every scenario with every strategy, from `seed`.
pub fn figures(seed: u64) -> Vec<(&'static str, &'static str, Figures)> {
    let mut rows = Vec::new();
    for (scenario, sc) in scenarios() {
        for (name, paced) in STRATEGIES {
            rows.push((scenario, name, run(&sc, paced, seed)));
        }
    }
    rows
}

/// The model's table.
pub fn table(seed: u64) -> String {
    let mut s = format!(
        "limiter: one batch of 300 URLs, 6 in flight, 1 ms round trip, against a limiter of 40/s; seed {seed}\n\n"
    );
    s.push_str(&format!(
        "{:<48} {:<9} {:>8} {:>7} {:>6} {:>10} {:>10} {:>10}\n",
        "limiter", "strategy", "wall s", "x 7.5s", "sent", "throttled", "succeeded", "settled/s"
    ));
    let mut worst = [0.0_f64; 2];
    for (scenario, name, f) in figures(seed) {
        let share = 100.0 * f64::from(f.throttled) / f64::from(f.sent.max(1));
        let at = usize::from(name == "pacer");
        worst[at] = worst[at].max(share);
        let settled = f.settled.map_or("-".to_string(), |r| format!("{r:.1}"));
        s.push_str(&format!(
            "{scenario:<48} {name:<9} {:>8.2} {:>7.2} {:>6} {:>9.1}% {:>10} {:>10}\n",
            f.wall_s,
            f.wall_s / 7.5,
            f.sent,
            share,
            f.succeeded,
            settled
        ));
    }
    s.push_str(
        "wall s: seconds to the batch's end; x 7.5s: that over 300/40 s, the limiter's own pace; \
         sent: requests, retries included; throttled: the share answered 429; settled/s: the \
         pacer's rate at the end (-: not paced)\n",
    );
    s.push_str(&format!(
        "what it shows: without the pacer, up to {:.1}% of requests are throttled; with it, up \
         to {:.1}%\n",
        worst[0], worst[1]
    ));
    s
}

/// The model's JSON: one object per scenario and strategy.
pub fn json(seed: u64) -> serde_json::Value {
    let rows: Vec<serde_json::Value> = figures(seed)
        .into_iter()
        .map(|(scenario, name, f)| {
            serde_json::json!({
                "limiter": scenario,
                "strategy": name,
                "wall_s": f.wall_s,
                "sent": f.sent,
                "throttled": f.throttled,
                "succeeded": f.succeeded,
                "settled_per_s": f.settled,
                "seed": seed,
            })
        })
        .collect();
    serde_json::Value::Array(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pacer_meets_the_goals_where_the_batch_without_it_does_not() {
        let sc = scenarios();
        for seed in 1..=5 {
            let (plain, ra) = (&sc[0].1, &sc[1].1);
            let p = run(plain, true, seed);
            let share = f64::from(p.throttled) / f64::from(p.sent);
            assert_eq!(p.succeeded, 300, "{p:?}");
            assert!(share <= 0.05 && p.wall_s <= 1.2 * 7.5, "{seed}: {p:?}");
            let h = run(plain, false, seed);
            assert!(f64::from(h.throttled) / f64::from(h.sent) > 0.2, "{h:?}");
            let p = run(ra, true, seed);
            let share = f64::from(p.throttled) / f64::from(p.sent);
            assert_eq!(p.succeeded, 300, "{p:?}");
            assert!(share <= 0.02 && p.wall_s <= 2.0 * 7.5, "{seed}: {p:?}");
        }
    }

    #[test]
    fn the_pacer_meets_the_fixed_window_goal_whatever_the_window_phase() {
        let window = scenarios()[2].1;
        for tenth in 0..10u64 {
            let limit = Limit::Window {
                rate: 40.0,
                phase: Duration::from_millis(tenth * 100 + 37),
            };
            let sc = Scenario { limit, ..window };
            for seed in 1..=3 {
                let p = run(&sc, true, seed);
                let share = f64::from(p.throttled) / f64::from(p.sent);
                assert_eq!(p.succeeded, 300, "{tenth} {seed}: {p:?}");
                assert!(
                    share <= 0.05 && p.wall_s <= 1.2 * 7.5,
                    "{tenth} {seed}: {p:?}"
                );
            }
        }
    }

    #[test]
    fn a_bucket_serves_its_burst_then_its_rate() {
        let mut s = Server::new(Limit::Bucket {
            rate: 40.0,
            burst: 10.0,
        });
        let at = |ms: u64| Duration::from_millis(ms);
        assert_eq!((0..20).filter(|_| s.accepts(at(0))).count(), 11);
        assert!(!s.accepts(at(20)) && s.accepts(at(45)));
        let mut w = Server::new(Limit::Window {
            rate: 40.0,
            phase: at(500),
        });
        assert_eq!((0..50).filter(|_| w.accepts(at(10))).count(), 40);
        assert!(w.accepts(at(500)));
    }
}
