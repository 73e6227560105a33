//! The overload and failure-rate models played over seeds and grids: one run per strategy
//! (seeds pooled), the vulnerability boundary (which triggers, by size and length, each
//! strategy recovers from) and the failure-rate sweep (success rate and amplification per
//! probability of failure and per number of clients). What they give is printed by
//! `report` and drawn by `plot`.

use super::strategy::{Settings, Strategy};
use super::{failures, overload};
use std::time::Duration;

/// What one command plays of the overload or failure-rate model: the scenario (`S`), the
/// strategies' settings, the first seed and how many seeds from it: the seeds of each point
/// of the overload sweep (1 without the sweep), or the failure-rate seeds pooled.
#[derive(Debug, Clone, Copy)]
pub struct ModelRun<S> {
    pub scenario: S,
    pub settings: Settings,
    pub seed: u64,
    pub runs: u32,
}

/// A run of the overload model.
pub type OverloadRun = ModelRun<overload::Scenario>;

/// A run of the failure-rate model.
pub type FailureRun = ModelRun<failures::Scenario>;

/// One point of the boundary sweep, over `runs` seeds.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// The strategy's name.
    pub strategy: &'static str,
    /// First tries per second during the trigger, and how long it lasted.
    pub spike_rate: f64,
    pub trigger_for: Duration,
    /// Seeds played, and those that recovered.
    pub runs: u32,
    pub recovered_runs: u32,
    /// The mean time to recover (seconds from the trigger's end) over the seeds that did.
    pub recover_s: Option<f64>,
    /// The means over the seeds.
    pub means: Means,
}

/// Means over a point's seeds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Means {
    /// Success rate (0 to 1), amplification (calls per first try), goodput of the last 10 s
    /// as a fraction of the level before the trigger.
    pub success_rate: f64,
    pub amplification: f64,
    pub final_goodput: f64,
}

impl Point {
    /// The share of seeds that recovered (0 to 1).
    pub fn recovered_share(&self) -> f64 {
        f64::from(self.recovered_runs) / f64::from(self.runs.max(1))
    }
}

/// Each strategy on the run's scenario, in the order given.
pub fn overload_figures(run: &OverloadRun, strategies: &[Strategy]) -> Vec<overload::Figures> {
    strategies
        .iter()
        .map(|s| overload::play(&run.scenario, *s, run.settings, run.seed))
        .collect()
}

/// The boundary: for each strategy, spike rate and trigger length (in that order),
/// `run.runs` seeds from `run.seed` on (wrapping past `u64::MAX`).
pub fn boundary(
    run: &OverloadRun,
    strategies: &[Strategy],
    (rates, lengths): (&[f64], &[Duration]),
) -> Vec<Point> {
    let mut out = Vec::new();
    for s in strategies {
        for &rate in rates {
            for &len in lengths {
                let sc = overload::Scenario {
                    spike_rate: rate,
                    trigger_for: len,
                    ..run.scenario
                };
                let all: Vec<overload::Figures> = (0..run.runs.max(1))
                    .map(|i| {
                        overload::play(&sc, *s, run.settings, run.seed.wrapping_add(u64::from(i)))
                    })
                    .collect();
                out.push(point(s.name(), &sc, &all));
            }
        }
    }
    out
}

/// The point of the boundary at `sc`'s trigger, from the figures of its seeds.
fn point(strategy: &'static str, sc: &overload::Scenario, all: &[overload::Figures]) -> Point {
    let n = all.len() as f64;
    let mean = |f: &dyn Fn(&overload::Figures) -> f64| all.iter().map(f).sum::<f64>() / n;
    let times: Vec<f64> = all.iter().filter_map(|f| f.recover_s).collect();
    Point {
        strategy,
        spike_rate: sc.spike_rate,
        trigger_for: sc.trigger_for,
        runs: all.len() as u32,
        recovered_runs: all.iter().filter(|f| f.recovered).count() as u32,
        recover_s: (!times.is_empty()).then(|| times.iter().sum::<f64>() / times.len() as f64),
        means: Means {
            success_rate: mean(&|f| f.counts.success_rate()),
            amplification: mean(&|f| f.counts.amplification()),
            final_goodput: mean(&|f| f.final_goodput()),
        },
    }
}

/// For each strategy, each number of clients and each probability: one run each.
pub fn failure_rates(
    sc: &failures::Scenario,
    strategies: &[Strategy],
    (ps, clients): (&[f64], &[u32]),
    settings: Settings,
    seed: u64,
) -> Vec<failures::Figures> {
    let mut out = Vec::new();
    for s in strategies {
        for &n in clients {
            for &p in ps {
                let point = failures::Scenario {
                    p,
                    clients: n,
                    ..*sc
                };
                out.push(failures::play(&point, *s, settings, seed));
            }
        }
    }
    out
}

/// [`failure_rates`] over `ps` x `clients`, once per seed, the seeds' counts pooled; rows
/// by strategy, then clients, then p. The grid of the scenario's own p and clients gives
/// one row per strategy.
pub fn failure_sweep(
    run: &FailureRun,
    strategies: &[Strategy],
    grid: (&[f64], &[u32]),
) -> Vec<failures::Figures> {
    let (sc, settings) = (&run.scenario, run.settings);
    let mut rows = failure_rates(sc, strategies, grid, settings, run.seed);
    for i in 1..run.runs {
        let seed = run.seed.wrapping_add(u64::from(i));
        let more = failure_rates(sc, strategies, grid, settings, seed);
        for (a, b) in rows.iter_mut().zip(&more) {
            a.counts.add(&b.counts);
        }
    }
    rows
}

/// The probabilities of the failure-rate sweep: 0 to 0.5 by 0.05.
pub fn default_ps() -> Vec<f64> {
    (0..=10).map(|i| f64::from(i) * 0.05).collect()
}

/// The client counts of the failure-rate sweep.
pub const DEFAULT_CLIENTS: [u32; 3] = [10, 100, 1000];

/// The spike rates of the boundary sweep (requests/s during the trigger): 50 to 100 by 10.
pub fn default_rates() -> Vec<f64> {
    (5..=10).map(|i| f64::from(i) * 10.0).collect()
}

/// The trigger lengths of the boundary sweep: 1, 2, 5, 10 and 20 s.
pub fn default_lengths() -> Vec<Duration> {
    [1, 2, 5, 10, 20].map(Duration::from_secs).to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(pts: &[Point], s: Strategy, rate: f64, secs: u64) -> &Point {
        pts.iter()
            .find(|p| {
                p.strategy == s.name()
                    && p.spike_rate == rate
                    && p.trigger_for == Duration::from_secs(secs)
            })
            .expect("the point was swept")
    }

    /// The vulnerability boundary, spike rate by spike length, 3 seeds a point: immediate
    /// retries recover from the small triggers only; the shared budget recovers from every
    /// one of them, so its region holds the retries' region and more.
    #[test]
    fn the_shared_budget_moves_the_boundary_out() {
        let rates = [60.0, 80.0, 100.0];
        let lengths = [1, 5, 10].map(Duration::from_secs);
        let strategies = [Strategy::Retries, Strategy::SharedBudget];
        let run = OverloadRun {
            scenario: overload::Scenario::default(),
            settings: Settings::default(),
            seed: 1,
            runs: 3,
        };
        let pts = boundary(&run, &strategies, (&rates, &lengths));
        assert_eq!(pts.len(), 2 * 3 * 3);
        let table: Vec<String> = pts
            .iter()
            .map(|p| {
                format!(
                    "{} {}/s {:?}: {:.2} {:?}",
                    p.strategy,
                    p.spike_rate,
                    p.trigger_for,
                    p.recovered_share(),
                    p.recover_s
                )
            })
            .collect();
        let table = table.join("\n");
        let (mut only_shared, mut area) = (0, [0.0, 0.0]);
        for rate in rates {
            for secs in [1, 5, 10] {
                let r = at(&pts, Strategy::Retries, rate, secs).recovered_share();
                let s = at(&pts, Strategy::SharedBudget, rate, secs).recovered_share();
                assert!(
                    s >= r - 0.34,
                    "{rate}/s {secs} s: none the other way round\n{table}"
                );
                if s - r > 0.6 {
                    only_shared += 1;
                }
                area[0] += r;
                area[1] += s;
            }
        }
        assert!(only_shared >= 3, "{table}");
        assert!(area[1] > area[0] + 2.0, "{area:?}\n{table}");
        // A boundary, not a wall: retries ride out the smallest trigger, not the largest.
        assert!(
            at(&pts, Strategy::Retries, 60.0, 1).recovered_share() > 0.6,
            "{table}"
        );
        assert_eq!(
            at(&pts, Strategy::Retries, 100.0, 10).recovered_share(),
            0.0,
            "{table}"
        );
        assert!(
            at(&pts, Strategy::Retries, 100.0, 10).recover_s.is_none(),
            "{table}"
        );
        // The shared budget takes longer to recover from a larger trigger.
        let quick = at(&pts, Strategy::SharedBudget, 60.0, 1).recover_s;
        let slow = at(&pts, Strategy::SharedBudget, 100.0, 10).recover_s;
        assert!(
            quick.zip(slow).is_some_and(|(q, s)| q < s && s <= 20.0),
            "{table}"
        );
    }

    #[test]
    fn the_failure_rate_sweep_gives_a_row_per_strategy_client_count_and_p() {
        let sc = failures::Scenario {
            duration: Duration::from_secs(5),
            ..failures::Scenario::default()
        };
        let rows = failure_rates(
            &sc,
            &[Strategy::NoRetry, Strategy::Retries],
            (&[0.0, 0.5], &[10, 100]),
            Settings::default(),
            1,
        );
        let keys: Vec<(String, u32, f64)> = rows
            .iter()
            .map(|f| (f.strategy.clone(), f.clients, f.p))
            .collect();
        let want: Vec<(String, u32, f64)> = [
            ("no-retry", 10),
            ("no-retry", 100),
            ("retries", 10),
            ("retries", 100),
        ]
        .iter()
        .flat_map(|(s, n)| [0.0, 0.5].map(|p| (s.to_string(), *n, p)))
        .collect();
        assert_eq!(keys, want);
    }

    #[test]
    fn pooled_seeds_add_up() {
        let run = FailureRun {
            scenario: failures::Scenario {
                duration: Duration::from_secs(10),
                p: 0.3,
                ..failures::Scenario::default()
            },
            settings: Settings::default(),
            seed: 5,
            runs: 2,
        };
        let sc = &run.scenario;
        let pooled = failure_sweep(&run, &[Strategy::Retries], (&[sc.p], &[sc.clients]));
        let one = |seed| failures::play(sc, Strategy::Retries, run.settings, seed);
        let (a, b) = (one(5).counts, one(6).counts);
        assert_eq!(pooled[0].counts.calls, a.calls + b.calls);
        assert_eq!(pooled[0].counts.first_tries, a.first_tries + b.first_tries);
    }

    #[test]
    fn the_default_grids() {
        let ps = default_ps();
        assert_eq!(ps.len(), 11);
        assert_eq!(ps[0], 0.0);
        assert!((ps[10] - 0.5).abs() < 1e-12);
        assert_eq!(DEFAULT_CLIENTS, [10, 100, 1000]);
        assert_eq!(default_rates(), [50.0, 60.0, 70.0, 80.0, 90.0, 100.0]);
        assert_eq!(
            default_lengths(),
            [1, 2, 5, 10, 20].map(Duration::from_secs)
        );
    }
}
