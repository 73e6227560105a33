//! The overload and failure-rate models on the command line: their runs, sweeps, tables and
//! JSON. `command` checks the flags and builds the scenarios; this module plays them
//! (`overload::play`, `failures::play`) and writes what they gave.
//!
//! The boundary's table and map come from `sweep::boundary`; its JSON reports more of each
//! point (the success rate and amplification, means over the seeds), from `boundary` here,
//! which plays the same scenarios with the same seeds (a test holds the two equal).

use super::guard::{Settings, Strategy};
use super::overload::{self, Population};
use super::{failures, sweep};
use crate::units::fmt_duration;
use serde_json::{Value, json};
use std::fmt::Write;
use std::time::Duration;

/// An overload run: the scenario, the strategies' settings, and the seed.
#[derive(Debug, Clone, Copy)]
pub struct OverloadRun {
    pub scenario: overload::Scenario,
    pub settings: Settings,
    pub seed: u64,
}

/// A failure-rate run: the scenario, the settings, the first seed and how many seeds are
/// pooled.
#[derive(Debug, Clone, Copy)]
pub struct FailureRun {
    pub scenario: failures::Scenario,
    pub settings: Settings,
    pub seed: u64,
    pub runs: u32,
}

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
    /// The means over the seeds, when kept (`boundary`, not `boundary_shares`).
    pub means: Option<Means>,
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
    /// The share of seeds that recovered (0 to 1), as `sweep::boundary` gives it.
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

/// The boundary: for each strategy, spike rate and trigger length (in that order, as
/// `sweep::boundary`), `runs` seeds from `run.seed` on.
pub fn boundary(
    run: &OverloadRun,
    strategies: &[Strategy],
    (rates, lengths): (&[f64], &[Duration]),
    runs: u32,
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
                let all: Vec<overload::Figures> = (0..runs.max(1))
                    .map(|i| {
                        overload::play(&sc, *s, run.settings, run.seed.wrapping_add(u64::from(i)))
                    })
                    .collect();
                let n = all.len() as f64;
                let mean =
                    |f: &dyn Fn(&overload::Figures) -> f64| all.iter().map(f).sum::<f64>() / n;
                let times: Vec<f64> = all.iter().filter_map(|f| f.recover_s).collect();
                out.push(Point {
                    strategy: s.name(),
                    spike_rate: rate,
                    trigger_for: len,
                    runs: runs.max(1),
                    recovered_runs: all.iter().filter(|f| f.recovered).count() as u32,
                    recover_s: (!times.is_empty())
                        .then(|| times.iter().sum::<f64>() / times.len() as f64),
                    means: Some(Means {
                        success_rate: mean(&|f| f.success_rate()),
                        amplification: mean(&|f| f.amplification()),
                        final_goodput: mean(&|f| f.final_goodput()),
                    }),
                });
            }
        }
    }
    out
}

/// `sweep::boundary` over the same grid: the recovered share and the time to recover of
/// each point, without the means.
pub fn boundary_shares(
    run: &OverloadRun,
    strategies: &[Strategy],
    grid: (&[f64], &[Duration]),
    runs: u32,
) -> Vec<Point> {
    let runs = runs.max(1);
    // `sweep::boundary` adds the seeds without wrapping: past u64::MAX, the same points
    // from `boundary`, whose seeds wrap.
    if run.seed.checked_add(u64::from(runs - 1)).is_none() {
        return boundary(run, strategies, grid, runs)
            .into_iter()
            .map(|p| Point { means: None, ..p })
            .collect();
    }
    sweep::boundary(
        &run.scenario,
        strategies,
        grid,
        run.settings,
        (run.seed, runs),
    )
    .into_iter()
    .map(|b| Point {
        strategy: Strategy::ALL
            .iter()
            .map(|s| s.name())
            .find(|n| *n == b.strategy)
            .unwrap_or("?"),
        spike_rate: b.spike_rate,
        trigger_for: b.trigger_for,
        runs,
        recovered_runs: (b.recovered * f64::from(runs)).round() as u32,
        recover_s: b.recover_s,
        means: None,
    })
    .collect()
}

/// Adds `b`'s counts to `a` (the same strategy, p and clients; another seed).
fn pool(a: &mut failures::Figures, b: &failures::Figures) {
    a.ended += b.ended;
    a.succeeded += b.succeeded;
    a.calls += b.calls;
    a.first_tries += b.first_tries;
}

/// Each strategy on the failure-rate scenario, the seeds' counts pooled.
pub fn failure_figures(run: &FailureRun, strategies: &[Strategy]) -> Vec<failures::Figures> {
    strategies
        .iter()
        .map(|s| {
            let mut f = failures::play(&run.scenario, *s, run.settings, run.seed);
            for i in 1..run.runs {
                let g = failures::play(
                    &run.scenario,
                    *s,
                    run.settings,
                    run.seed.wrapping_add(u64::from(i)),
                );
                pool(&mut f, &g);
            }
            f
        })
        .collect()
}

/// `sweep::failure_rates` over `ps` x `clients`, once per seed, the seeds' counts pooled;
/// rows by strategy, then clients, then p.
pub fn failure_sweep(
    run: &FailureRun,
    strategies: &[Strategy],
    (ps, clients): (&[f64], &[u32]),
) -> Vec<failures::Figures> {
    let mut rows = sweep::failure_rates(
        &run.scenario,
        strategies,
        (ps, clients),
        run.settings,
        run.seed,
    );
    for i in 1..run.runs {
        let more = sweep::failure_rates(
            &run.scenario,
            strategies,
            (ps, clients),
            run.settings,
            run.seed.wrapping_add(u64::from(i)),
        );
        for (a, b) in rows.iter_mut().zip(&more) {
            pool(a, b);
        }
    }
    rows
}

/// `d` in seconds, as a JSON number.
fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// A rate as the tables write it: `40`, `2.5`.
pub fn fmt_rate(r: f64) -> String {
    if r.fract() == 0.0 {
        format!("{r:.0}")
    } else {
        format!("{r}")
    }
}

/// What the trigger is, in words: `80/s from 20s for 5s`, a capacity drop, or both.
fn trigger_words(sc: &overload::Scenario) -> String {
    let when = format!(
        "from {} for {}",
        fmt_duration(sc.trigger_at),
        fmt_duration(sc.trigger_for)
    );
    let spike = sc.spike_rate != sc.base_rate;
    let drop = sc.capacity_drop > 0.0;
    match (spike, drop) {
        (true, true) => format!(
            "{}/s and {:.0}% of capacity lost {when}",
            fmt_rate(sc.spike_rate),
            sc.capacity_drop * 100.0
        ),
        (false, true) => format!("{:.0}% of capacity lost {when}", sc.capacity_drop * 100.0),
        (true, false) => format!("{}/s {when}", fmt_rate(sc.spike_rate)),
        (false, false) => "no trigger".into(),
    }
}

/// The first line of an overload report: the scenario and the settings.
fn overload_header(run: &OverloadRun, sweep: Option<u32>) -> String {
    let sc = &run.scenario;
    let who = match sc.population {
        Population::Open => format!("open population, {} clients", sc.clients),
        Population::Closed => format!("closed population of {} clients", sc.clients),
    };
    let trigger = match sweep {
        Some(_) => format!(
            "swept trigger from {}{}",
            fmt_duration(sc.trigger_at),
            if sc.capacity_drop > 0.0 {
                format!(
                    ", {:.0}% of capacity lost during it",
                    sc.capacity_drop * 100.0
                )
            } else {
                String::new()
            }
        ),
        None => trigger_words(sc),
    };
    let seeds = match sweep {
        Some(n) if n > 1 => format!(
            "seeds {}..{}",
            run.seed,
            run.seed.wrapping_add(u64::from(n) - 1)
        ),
        _ => format!("seed {}", run.seed),
    };
    format!(
        "overload: {who}; {}/s first tries, {trigger}; server {} + {} per request in flight, network about {} each way; timeout {}; {} attempts, base {}, cap {}; {}; {seeds}",
        fmt_rate(sc.base_rate),
        fmt_duration(sc.latency),
        fmt_duration(sc.per_request),
        fmt_duration(sc.network),
        fmt_duration(sc.timeout),
        run.settings.attempts,
        fmt_duration(run.settings.base),
        fmt_duration(run.settings.cap),
        fmt_duration(sc.duration),
    )
}

/// The overload table: one row per strategy.
pub fn overload_table(run: &OverloadRun, figures: &[overload::Figures]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}", overload_header(run, None));
    let _ = writeln!(
        s,
        "{:<15} {:>8} {:>13} {:>9} {:>9} {:>13}",
        "strategy", "success%", "amplification", "recovered", "recover s", "final goodput"
    );
    for f in figures {
        let _ = writeln!(
            s,
            "{:<15} {:>8.1} {:>12.2}x {:>9} {:>9} {:>12.0}%",
            f.strategy,
            f.success_rate() * 100.0,
            f.amplification(),
            if f.recovered { "yes" } else { "no" },
            f.recover_s
                .map_or_else(|| "stuck".into(), |t| format!("{t:.0}")),
            f.final_goodput() * 100.0
        );
    }
    let level = figures.first().map_or(0.0, |f| f.level);
    let _ = writeln!(
        s,
        "goodput before the trigger: {level:.1}/s; recovered: answers per first try over the last 10s at 90% or more of their share before the trigger; recover s: from the trigger's end to the first 5s window at 90%"
    );
    s
}

/// The overload figures as JSON: one object per strategy, the per-second series included.
pub fn overload_json(figures: &[overload::Figures]) -> Value {
    Value::Array(
        figures
            .iter()
            .map(|f| {
                json!({
                    "strategy": f.strategy,
                    "success_rate": f.success_rate(),
                    "amplification": f.amplification(),
                    "recovered": f.recovered,
                    "recover_s": f.recover_s,
                    "final_goodput": f.final_goodput(),
                    "level": f.level,
                    "runs": f.runs,
                    "ended": f.ended,
                    "succeeded": f.succeeded,
                    "refused": f.refused,
                    "calls": f.calls,
                    "first_tries": f.first_tries,
                    "offered": f.offered,
                    "throughput": f.throughput,
                    "goodput": f.goodput,
                    "first": f.first,
                })
            })
            .collect(),
    )
}

/// The boundary map, one block per strategy: rows are trigger lengths, columns spike rates,
/// each cell the seeds that recovered out of those played.
pub fn boundary_table(run: &OverloadRun, points: &[Point], runs: u32) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}", overload_header(run, Some(runs)));
    let _ = writeln!(
        s,
        "each cell: the seeds that recovered, of {runs}; rows: trigger length; columns: first tries/s during it"
    );
    let rates = distinct(points.iter().map(|p| p.spike_rate));
    let mut names: Vec<&str> = Vec::new();
    for p in points {
        if !names.contains(&p.strategy) {
            names.push(p.strategy);
        }
    }
    for name in names {
        let mine: Vec<&Point> = points.iter().filter(|p| p.strategy == name).collect();
        let all = mine.iter().filter(|p| p.recovered_runs == p.runs).count();
        let none = mine.iter().filter(|p| p.recovered_runs == 0).count();
        let _ = writeln!(
            s,
            "\n{name}: of {} triggers, {all} recovered on every seed, {none} stuck on every seed",
            mine.len()
        );
        let _ = write!(s, "{:>8}", "");
        for r in &rates {
            let _ = write!(s, " {:>5}", fmt_rate(*r));
        }
        s.push('\n');
        let mut lengths: Vec<Duration> = Vec::new();
        for p in &mine {
            if !lengths.contains(&p.trigger_for) {
                lengths.push(p.trigger_for);
            }
        }
        for len in lengths {
            let _ = write!(s, "{:>8}", fmt_duration(len));
            for r in &rates {
                let cell = mine
                    .iter()
                    .find(|p| p.trigger_for == len && p.spike_rate == *r)
                    .map_or_else(String::new, |p| format!("{}/{}", p.recovered_runs, p.runs));
                let _ = write!(s, " {cell:>5}");
            }
            s.push('\n');
        }
    }
    s
}

/// The distinct values of `it`, in the order first seen.
fn distinct(it: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut out: Vec<f64> = Vec::new();
    for v in it {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// The boundary's points as JSON, each with its scenario.
pub fn boundary_json(run: &OverloadRun, points: &[Point]) -> Value {
    let sc = &run.scenario;
    Value::Array(
        points
            .iter()
            .map(|p| {
                json!({
                    "strategy": p.strategy,
                    "spike_rate": p.spike_rate,
                    "trigger_for_s": secs(p.trigger_for),
                    "trigger_at_s": secs(sc.trigger_at),
                    "base_rate": sc.base_rate,
                    "capacity_drop": sc.capacity_drop,
                    "clients": sc.clients,
                    "runs": p.runs,
                    "recovered_runs": p.recovered_runs,
                    "recovered_share": p.recovered_share(),
                    "recovered": p.recovered_runs == p.runs,
                    "recover_s": p.recover_s,
                    "success_rate": p.means.map(|m| m.success_rate),
                    "amplification": p.means.map(|m| m.amplification),
                    "final_goodput": p.means.map(|m| m.final_goodput),
                })
            })
            .collect(),
    )
}

/// The first line of a failure-rate report.
fn failure_header(run: &FailureRun, sweep: bool) -> String {
    let sc = &run.scenario;
    let what = if sweep {
        format!(
            "{}/s first tries in all, split over each client count",
            fmt_rate(sc.rate)
        )
    } else {
        format!(
            "{} clients, {}/s first tries in all, p = {}",
            sc.clients,
            fmt_rate(sc.rate),
            sc.p
        )
    };
    let seeds = if run.runs > 1 {
        format!(
            "seeds {}..{} pooled",
            run.seed,
            run.seed.wrapping_add(u64::from(run.runs) - 1)
        )
    } else {
        format!("seed {}", run.seed)
    };
    format!(
        "failure-rate: {what}; each call takes {} and fails with probability p; {} attempts, base {}, cap {}; {}; {seeds}",
        fmt_duration(sc.latency),
        run.settings.attempts,
        fmt_duration(run.settings.base),
        fmt_duration(run.settings.cap),
        fmt_duration(sc.duration),
    )
}

/// The failure-rate table: one row per strategy.
pub fn failure_table(run: &FailureRun, figures: &[failures::Figures]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}", failure_header(run, false));
    let _ = writeln!(
        s,
        "{:<15} {:>8} {:>13} {:>9} {:>11}",
        "strategy", "success%", "amplification", "calls", "first tries"
    );
    for f in figures {
        let _ = writeln!(
            s,
            "{:<15} {:>8.1} {:>12.2}x {:>9} {:>11}",
            f.strategy,
            f.success_rate() * 100.0,
            f.amplification(),
            f.calls,
            f.first_tries
        );
    }
    s
}

/// The failure-rate sweep: a table per client count, rows p, a column per strategy with its
/// amplification and success rate.
pub fn failure_sweep_table(run: &FailureRun, rows: &[failures::Figures]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}", failure_header(run, true));
    let _ = writeln!(
        s,
        "each cell: amplification (calls per first try) and success rate"
    );
    let mut names: Vec<&str> = Vec::new();
    let mut counts: Vec<u32> = Vec::new();
    for r in rows {
        if !names.contains(&r.strategy.as_str()) {
            names.push(&r.strategy);
        }
        if !counts.contains(&r.clients) {
            counts.push(r.clients);
        }
    }
    let ps = distinct(rows.iter().map(|r| r.p));
    for n in counts {
        let _ = writeln!(s, "\n{n} clients");
        let _ = write!(s, "{:>5}", "p");
        for name in &names {
            let _ = write!(s, " {name:>14}");
        }
        s.push('\n');
        for p in &ps {
            let _ = write!(s, "{p:>5.2}");
            for name in &names {
                let cell = rows
                    .iter()
                    .find(|r| r.clients == n && r.p == *p && r.strategy == *name)
                    .map_or_else(String::new, |r| {
                        format!(
                            "{:.2}x {:5.1}%",
                            r.amplification(),
                            r.success_rate() * 100.0
                        )
                    });
                let _ = write!(s, " {cell:>14}");
            }
            s.push('\n');
        }
    }
    s
}

/// Failure-rate rows as JSON, each with its scenario.
pub fn failure_json(run: &FailureRun, rows: &[failures::Figures]) -> Value {
    Value::Array(
        rows.iter()
            .map(|r| {
                json!({
                    "strategy": r.strategy,
                    "p": r.p,
                    "clients": r.clients,
                    "rate": run.scenario.rate,
                    "success_rate": r.success_rate(),
                    "amplification": r.amplification(),
                    "ended": r.ended,
                    "succeeded": r.succeeded,
                    "calls": r.calls,
                    "first_tries": r.first_tries,
                    "seeds": run.runs,
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A short scenario, so the test stays quick.
    fn short() -> OverloadRun {
        OverloadRun {
            scenario: overload::Scenario {
                duration: Duration::from_secs(45),
                trigger_at: Duration::from_secs(10),
                ..overload::Scenario::default()
            },
            settings: Settings::default(),
            seed: 3,
        }
    }

    #[test]
    fn the_boundary_is_the_sweeps() {
        let run = short();
        let strategies = [Strategy::Retries, Strategy::SharedBudget];
        let rates = [60.0, 90.0];
        let lengths = [Duration::from_secs(1), Duration::from_secs(5)];
        let ours = boundary(&run, &strategies, (&rates, &lengths), 2);
        let theirs = boundary_shares(&run, &strategies, (&rates, &lengths), 2);
        assert_eq!(ours.len(), 8);
        assert!(ours.iter().all(|p| p.means.is_some()));
        let without_means: Vec<Point> = ours
            .into_iter()
            .map(|p| Point { means: None, ..p })
            .collect();
        assert_eq!(without_means, theirs);
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
        let pooled = failure_figures(&run, &[Strategy::Retries]);
        let one = |seed| failures::play(&run.scenario, Strategy::Retries, run.settings, seed);
        let (a, b) = (one(5), one(6));
        assert_eq!(pooled[0].calls, a.calls + b.calls);
        assert_eq!(pooled[0].first_tries, a.first_tries + b.first_tries);
        let swept = failure_sweep(&run, &[Strategy::Retries], (&[0.3], &[100]));
        assert_eq!(swept[0].calls, pooled[0].calls);
    }
}
