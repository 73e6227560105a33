//! What `simulate` prints: the tables and the JSON of the four models. The outage model's
//! comparison table (the physical limit last) and the search's Pareto front as flags to
//! paste; the overload model's table, its boundary map and their JSON; the failure-rate
//! model's table, its sweep and their JSON; the cron model's busiest second against the
//! mean, and its JSON. The figures come from `outage`, `sweep` and `cron`.

use super::outage::{self, Figures, Scenario};
use super::overload::{self, Population};
use super::sweep::{FailureRun, OverloadRun, Point};
use super::{cron, failures};
use retry_http_policy::units::{flag_value, fmt_duration};
use retry_http_policy::{Backoff, Jitter};
use serde_json::{Value, json};
use std::fmt::Write;
use std::time::Duration;

fn last(o: &Figures) -> String {
    o.last_success_s
        .map_or_else(|| "-".into(), |s| format!("{s:.2}"))
}

/// The outage table's first line: the scenario, the seed and the runs.
fn outage_header(sc: &Scenario, seed: u64, runs: u32) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} clients; down {}, then {} per {}; {} attempts, base {}, cap {}{}; seed {}{}",
        sc.clients,
        fmt_duration(sc.outage),
        sc.capacity,
        fmt_duration(sc.window),
        sc.attempts,
        fmt_duration(sc.base),
        fmt_duration(sc.cap),
        sc.deadline
            .map(|d| format!(", deadline {}", fmt_duration(d)))
            .unwrap_or_default(),
        seed,
        if runs > 1 {
            format!(", mean of {runs} runs")
        } else {
            String::new()
        },
    );
    s
}

/// The outage model's comparison table, the physical limit last.
pub fn outage_table(
    sc: &Scenario,
    seed: u64,
    runs: u32,
    results: &[Figures],
    limit: &Figures,
) -> String {
    let mut s = outage_header(sc, seed, runs);
    if results.iter().any(|o| o.strategy.starts_with("shared-")) {
        let l = &sc.limits;
        let _ = writeln!(
            s,
            "shared: retry budget {}% of successes in {}, floor {}; breaker opens after {} failed runs, for {}",
            l.budget_pct,
            fmt_duration(l.window),
            l.floor,
            l.threshold,
            fmt_duration(l.cooldown)
        );
    }
    let _ = writeln!(
        s,
        "{:<15} {:>8} {:>8} {:>12} {:>14} {:>10} {:>8}",
        "strategy", "served%", "calls", "calls/served", "last success s", "peak load", "gave up"
    );
    for o in results.iter().chain(std::iter::once(limit)) {
        let _ = writeln!(
            s,
            "{:<15} {:>8.1} {:>8.0} {:>12} {:>14} {:>10} {:>8.1}",
            o.strategy,
            o.served_pct,
            o.calls,
            per_served(o),
            last(o),
            fmt_load(o.peak_load),
            o.gave_up
        );
    }
    let _ = writeln!(s, "{}", outage_legend(runs));
    let _ = writeln!(s, "{}", outage_verdict(results, limit));
    s
}

/// Calls per client served as the outage table writes it: `4.25`, or `-` when no client was
/// served, where the figure does not apply.
fn per_served(o: &Figures) -> String {
    match o.served_pct > 0.0 {
        true => format!("{:.2}", o.calls_per_served),
        false => "-".into(),
    }
}

/// A peak load as the outage table writes it: `1.7x`; two decimals below 0.1 (`0.04x`: one
/// request in a window of 24), so that a load that did occur never reads as `0.0x`; `-`
/// when no request arrived after the outage, where the figure does not apply.
fn fmt_load(load: f64) -> String {
    match load {
        l if l <= 0.0 => "-".into(),
        l if l < 0.095 => format!("{l:.2}x"),
        l => format!("{l:.1}x"),
    }
}

/// The outage table's legend: each column's meaning and unit.
fn outage_legend(runs: u32) -> String {
    let mean = if runs > 1 {
        ", a mean over the runs"
    } else {
        ""
    };
    format!(
        "served%: clients served, of all; calls: requests sent by every client; calls/served: \
         requests per client served (-: none served); last success s: seconds from the start to the last \
         success\npeak load: the busiest window after the outage, as a multiple of the \
         capacity (-: no request then); gave up: clients never served{mean}; physical_limit: \
         the best any policy could do"
    )
}

/// One sentence that says what the outage table shows: which strategies serve every client,
/// the cheapest of them against the physical limit, and what a shared state cost.
fn outage_verdict(results: &[Figures], limit: &Figures) -> String {
    let all: Vec<&Figures> = results.iter().filter(|o| o.served_pct >= 100.0).collect();
    let mut out = match all
        .iter()
        .min_by(|a, b| a.calls_per_served.total_cmp(&b.calls_per_served))
    {
        Some(best) => format!(
            "what it shows: {} of {} {} every client; the cheapest, {}, sends {:.2} calls per \
             client served, against {:.2} at the physical limit",
            all.len(),
            results.len(),
            if all.len() == 1 {
                "strategies serves"
            } else {
                "strategies serve"
            },
            best.strategy,
            best.calls_per_served,
            limit.calls_per_served
        ),
        None => "what it shows: no strategy serves every client within its attempts and deadline"
            .to_string(),
    };
    let shared: Vec<&str> = results
        .iter()
        .filter(|o| o.strategy.starts_with("shared-") && o.gave_up > 0.0)
        .map(|o| o.strategy.as_str())
        .collect();
    if !shared.is_empty() {
        out.push_str(&format!(
            "; {} gave up on clients whose retries the shared budget or breaker refused: \
             fewer calls, at the price of those runs",
            shared.join(" and ")
        ));
    }
    out
}

/// The same figures as a JSON array; the physical limit is the last object. Besides the
/// outage model's own figures, each object has the keys every model's rows share:
/// `success_rate` (served clients, 0 to 1) and `amplification` (calls per client: each
/// client makes one first try).
pub fn outage_json(sc: &Scenario, results: &[Figures], limit: &Figures) -> serde_json::Value {
    let row = |o: &Figures| {
        json!({
            "strategy": o.strategy,
            "success_rate": o.served_pct / 100.0,
            "amplification": o.calls / f64::from(sc.clients.max(1)),
            "served_pct": o.served_pct,
            "calls": o.calls,
            "calls_per_served": o.calls_per_served,
            "last_success_s": o.last_success_s,
            "peak_load": o.peak_load,
            "gave_up": o.gave_up,
        })
    };
    serde_json::Value::Array(
        results
            .iter()
            .chain(std::iter::once(limit))
            .map(row)
            .collect(),
    )
}

/// The flags that give this backoff in a scenario like `sc`.
fn flags(sc: &Scenario, b: &Backoff) -> String {
    let jitter = match b.jitter {
        Jitter::None => "none".to_string(),
        other => other.label(),
    };
    let deadline = sc
        .deadline
        .map(|d| format!(" --deadline {}", flag_value(d)))
        .unwrap_or_default();
    format!(
        "--attempts {} --base {} --cap {} --jitter {jitter}{deadline}",
        sc.attempts,
        flag_value(b.base),
        flag_value(b.cap)
    )
}

/// The search's Pareto front as a table of flags to paste, the point nearest the
/// physical limit marked.
pub fn search_table(sc: &Scenario, seed: u64, runs: u32, limit: &Figures) -> String {
    let front = outage::search(sc, seed, runs);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Pareto front over jitter x base (10ms..2s) x cap (1s..60s), policies that serve every client; physical limit: {} calls, last success {}s",
        limit.calls,
        last(limit)
    );
    if front.is_empty() {
        let _ = writeln!(
            s,
            "no policy in the search space serves every client within the attempts and deadline given"
        );
        return s;
    }
    let best = outage::nearest_to_limit(&front, limit);
    let _ = writeln!(s, "{:>8} {:>14}  flags", "calls", "last success s");
    for (i, c) in front.iter().enumerate() {
        let mark = if Some(i) == best {
            "  <- nearest the physical limit"
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "{:>8.0} {:>14}  {}{mark}",
            c.outcome.calls,
            last(&c.outcome),
            flags(sc, &c.backoff)
        );
    }
    let _ = writeln!(
        s,
        "calls: requests sent by every client; last success s: seconds from the start to the \
         last success; flags: the policy, to paste"
    );
    let _ = writeln!(
        s,
        "what it shows: {} policies that no other beats on both calls and time, fewest calls first",
        front.len()
    );
    s
}

/// The search's Pareto front as a JSON array, one object per policy: its calls, time to the
/// last success, served share, the flags that give it, and whether it is the point nearest
/// the physical limit.
pub fn search_json(sc: &Scenario, seed: u64, runs: u32, limit: &Figures) -> serde_json::Value {
    let front = outage::search(sc, seed, runs);
    let best = outage::nearest_to_limit(&front, limit);
    serde_json::Value::Array(
        front
            .iter()
            .enumerate()
            .map(|(i, c)| {
                json!({
                    "calls": c.outcome.calls,
                    "last_success_s": c.outcome.last_success_s,
                    "served_pct": c.outcome.served_pct,
                    "success_rate": c.outcome.served_pct / 100.0,
                    "amplification": c.outcome.calls / f64::from(sc.clients.max(1)),
                    "flags": flags(sc, &c.backoff),
                    "nearest_limit": Some(i) == best,
                })
            })
            .collect(),
    )
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

/// `n` seeds from `seed` on, in words: `seed 4`, or `seeds 4..6` (wrapping past `u64::MAX`)
/// followed by `pooled`, when they are.
fn seeds_words(seed: u64, n: u32, pooled: &str) -> String {
    match n {
        0 | 1 => format!("seed {seed}"),
        _ => format!(
            "seeds {seed}..{}{pooled}",
            seed.wrapping_add(u64::from(n) - 1)
        ),
    }
}

/// The first line of an overload report: the scenario and the settings.
fn overload_header(run: &OverloadRun, sweep: bool) -> String {
    let sc = &run.scenario;
    let who = match sc.population {
        Population::Open => format!("open population, {} clients", sc.clients),
        Population::Closed => format!("closed population of {} clients", sc.clients),
    };
    let trigger = match sweep {
        true => format!(
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
        false => trigger_words(sc),
    };
    let seeds = seeds_words(run.seed, run.runs, "");
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
    let _ = writeln!(s, "{}", overload_header(run, false));
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
            f.counts.success_rate() * 100.0,
            f.counts.amplification(),
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
    let _ = writeln!(
        s,
        "success%: runs that succeeded, of those that ended; amplification: tries per first try; \
         final goodput: the last 10s, as a share of the goodput before the trigger"
    );
    let _ = writeln!(s, "{}", overload_verdict(figures));
    s
}

/// One sentence that says what the overload table shows: which strategies recovered, and
/// what the stuck ones mean.
fn overload_verdict(figures: &[overload::Figures]) -> String {
    let up: Vec<&str> = figures
        .iter()
        .filter(|f| f.recovered)
        .map(|f| f.strategy.as_str())
        .collect();
    match (up.len(), figures.len()) {
        (k, n) if k == n => "what it shows: every strategy recovered after the trigger".into(),
        (0, _) => "what it shows: no strategy recovered: after the trigger, retries keep the \
                   server overloaded (stuck)"
            .into(),
        (k, n) => format!(
            "what it shows: {k} of {n} strategies recovered ({}); the others stay stuck after \
             the trigger is gone: their retries keep the server overloaded",
            up.join(", ")
        ),
    }
}

/// The overload figures as JSON: one object per strategy, the per-second series included.
pub fn overload_json(figures: &[overload::Figures]) -> Value {
    Value::Array(
        figures
            .iter()
            .map(|f| {
                json!({
                    "strategy": f.strategy,
                    "success_rate": f.counts.success_rate(),
                    "amplification": f.counts.amplification(),
                    "recovered": f.recovered,
                    "recover_s": f.recover_s,
                    "final_goodput": f.final_goodput(),
                    "level": f.level,
                    "runs": f.runs,
                    "ended": f.counts.ended,
                    "succeeded": f.counts.succeeded,
                    "refused": f.refused,
                    "calls": f.counts.calls,
                    "first_tries": f.counts.first_tries,
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
pub fn boundary_table(run: &OverloadRun, points: &[Point]) -> String {
    let (mut s, runs) = (String::new(), run.runs);
    let _ = writeln!(s, "{}", overload_header(run, true));
    let _ = writeln!(
        s,
        "each cell: the seeds that recovered, of {runs}; rows: trigger length; columns: first tries/s during it"
    );
    let rates = distinct(points.iter().map(|p| p.spike_rate));
    let names = distinct(points.iter().map(|p| p.strategy));
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
        let lengths = distinct(mine.iter().map(|p| p.trigger_for));
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

/// The distinct values of `it`, in the order first seen (the strategies, rates, lengths,
/// probabilities or client counts of a sweep's points).
pub fn distinct<T: PartialEq>(it: impl Iterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
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
                    "success_rate": p.means.success_rate,
                    "amplification": p.means.amplification,
                    "final_goodput": p.means.final_goodput,
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
    let seeds = seeds_words(run.seed, run.runs, " pooled");
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
            f.counts.success_rate() * 100.0,
            f.counts.amplification(),
            f.counts.calls,
            f.counts.first_tries
        );
    }
    let _ = writeln!(
        s,
        "success%: runs that succeeded, of those that ended; amplification: calls per first \
         try; calls, first tries: counts over the run"
    );
    let least = figures.iter().min_by(|a, b| {
        a.counts
            .amplification()
            .total_cmp(&b.counts.amplification())
    });
    let most = figures
        .iter()
        .max_by(|a, b| a.counts.success_rate().total_cmp(&b.counts.success_rate()));
    if let (Some(least), Some(most)) = (least, most) {
        let _ = writeln!(
            s,
            "what it shows: the least load added: {} ({:.2}x); the highest success rate: {} \
             ({:.1}%); each retry buys success with load",
            least.strategy,
            least.counts.amplification(),
            most.strategy,
            most.counts.success_rate() * 100.0
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
    let names = distinct(rows.iter().map(|r| r.strategy.as_str()));
    let counts = distinct(rows.iter().map(|r| r.clients));
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
                            r.counts.amplification(),
                            r.counts.success_rate() * 100.0
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
                    "success_rate": r.counts.success_rate(),
                    "amplification": r.counts.amplification(),
                    "ended": r.counts.ended,
                    "succeeded": r.counts.succeeded,
                    "calls": r.counts.calls,
                    "first_tries": r.counts.first_tries,
                    "seeds": run.runs,
                })
            })
            .collect(),
    )
}

/// The cron model's table: per request and per store operation, the busiest second of the
/// period, its count, the mean per second and their ratio; then what the store's busiest
/// second asks of one Redis primary.
pub fn cron_table(sc: &cron::Scenario, loads: &[cron::Load]) -> String {
    let mut s = String::new();
    let splay = match sc.splay.is_zero() {
        true => "no splay".to_string(),
        false => format!("splay {}", fmt_duration(sc.splay)),
    };
    let _ = writeln!(
        s,
        "cron: {} hosts on one {} schedule, {splay}; {} store operations a run; target {}",
        sc.clients,
        fmt_duration(sc.period),
        sc.store_ops,
        cron::TARGET
    );
    let _ = writeln!(
        s,
        "{:<16} {:>14} {:>9} {:>9} {:>9}",
        "", "busiest second", "peak/s", "mean/s", "peak/mean"
    );
    for l in loads {
        let (at, peak) = l.peak();
        let _ = writeln!(
            s,
            "{:<16} {at:>14} {peak:>9} {:>9.1} {:>9.2}",
            l.what.replace('_', " "),
            l.mean(),
            l.peak_to_mean()
        );
    }
    let _ = writeln!(
        s,
        "busiest second: the second of the period, from 0, with the most; peak/s: its count; \
         mean/s: the period's mean; peak/mean: their ratio, 1.00 for an even spread"
    );
    if let Some(ops) = loads.iter().find(|l| l.what == "store_operations") {
        let _ = writeln!(
            s,
            "one Redis primary takes {} operations in the busiest second ({:.0}/s on average)",
            ops.peak().1,
            ops.mean()
        );
    }
    s
}

/// The cron model as JSON: one object per load (`requests`, `store_operations`), each with
/// its scenario, its busiest second, the mean, `peak_to_mean` and the counts per second.
pub fn cron_json(sc: &cron::Scenario, loads: &[cron::Load]) -> Value {
    let row = |l: &cron::Load| {
        let (at, peak) = l.peak();
        json!({
            "what": l.what,
            "clients": sc.clients,
            "period_s": secs(sc.period),
            "splay_s": secs(sc.splay),
            "store_ops": sc.store_ops,
            "busiest_second": at,
            "peak": peak,
            "mean": l.mean(),
            "peak_to_mean": l.peak_to_mean(),
            "per_second": l.per_second,
        })
    };
    Value::Array(loads.iter().map(row).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peak_load_never_reads_as_nought_unless_it_does_not_apply() {
        assert_eq!(fmt_load(0.0), "-");
        assert_eq!(fmt_load(1.0 / 24.0), "0.04x");
        assert_eq!(fmt_load(0.094), "0.09x");
        assert_eq!(fmt_load(0.095), "0.1x");
        assert_eq!(fmt_load(1.66), "1.7x");
        assert_eq!(fmt_load(8.3), "8.3x");
    }

    #[test]
    fn seeds_are_one_or_a_range_that_wraps() {
        assert_eq!(seeds_words(4, 1, " pooled"), "seed 4");
        assert_eq!(seeds_words(4, 3, " pooled"), "seeds 4..6 pooled");
        assert_eq!(
            seeds_words(u64::MAX, 2, ""),
            format!("seeds {}..0", u64::MAX)
        );
    }
}
