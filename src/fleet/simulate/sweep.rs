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
/// (seeds `seed`, `seed + 1`, ...) that recovered.
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
                    .map(|i| overload::play(&point, *s, settings, seed + u64::from(i)))
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
