//! Sweeps over the overload and failure-rate models: the vulnerability boundary (which
//! triggers, by size and length, each strategy recovers from) and the failure-rate sweep
//! (success rate and amplification per probability of failure and per number of clients).

use super::guard::{Settings, Strategy};
use super::{failures, overload};
use std::time::Duration;

/// One point of the boundary: a trigger and how often a strategy recovered from it.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundaryPoint {
    /// The strategy's name.
    pub strategy: String,
    /// First tries per second during the trigger, and how long it lasted.
    pub spike_rate: f64,
    pub trigger_for: Duration,
    /// The fraction of the seeds that recovered (0 to 1).
    pub recovered: f64,
    /// The mean time to recover over the seeds that did (None: none did).
    pub recover_s: Option<f64>,
}

/// For each strategy, each spike rate and each trigger length: the share of `seeds` runs
/// (seeds `seed`, `seed + 1`, ..., wrapping past `u64::MAX`) that recovered.
pub fn boundary(
    sc: &overload::Scenario,
    strategies: &[Strategy],
    (rates, lengths): (&[f64], &[Duration]),
    settings: Settings,
    (seed, seeds): (u64, u32),
) -> Vec<BoundaryPoint> {
    let mut out = Vec::new();
    for s in strategies {
        for &rate in rates {
            for &len in lengths {
                let point = overload::Scenario {
                    spike_rate: rate,
                    trigger_for: len,
                    ..*sc
                };
                let runs: Vec<overload::Figures> = (0..seeds.max(1))
                    .map(|i| overload::play(&point, *s, settings, seed.wrapping_add(u64::from(i))))
                    .collect();
                let ok: Vec<f64> = runs.iter().filter_map(|f| f.recover_s).collect();
                out.push(BoundaryPoint {
                    strategy: s.name().to_string(),
                    spike_rate: rate,
                    trigger_for: len,
                    recovered: runs.iter().filter(|f| f.recovered).count() as f64
                        / runs.len() as f64,
                    recover_s: (!ok.is_empty()).then(|| ok.iter().sum::<f64>() / ok.len() as f64),
                });
            }
        }
    }
    out
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

    fn at(pts: &[BoundaryPoint], s: Strategy, rate: f64, secs: u64) -> &BoundaryPoint {
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
        let pts = boundary(
            &overload::Scenario::default(),
            &strategies,
            (&rates, &lengths),
            Settings::default(),
            (1, 3),
        );
        assert_eq!(pts.len(), 2 * 3 * 3);
        let table: Vec<String> = pts
            .iter()
            .map(|p| {
                format!(
                    "{} {}/s {:?}: {:.2} {:?}",
                    p.strategy, p.spike_rate, p.trigger_for, p.recovered, p.recover_s
                )
            })
            .collect();
        let table = table.join("\n");
        let (mut only_shared, mut area) = (0, [0.0, 0.0]);
        for rate in rates {
            for secs in [1, 5, 10] {
                let r = at(&pts, Strategy::Retries, rate, secs).recovered;
                let s = at(&pts, Strategy::SharedBudget, rate, secs).recovered;
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
            at(&pts, Strategy::Retries, 60.0, 1).recovered > 0.6,
            "{table}"
        );
        assert_eq!(
            at(&pts, Strategy::Retries, 100.0, 10).recovered,
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
