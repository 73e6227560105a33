//! `simulate` on the command line: checks the model's flags and builds its scenario, runs
//! the strategies (or the policy search, or a sweep), and prints a table, JSON, or an SVG
//! plot. The outage model is written here; the overload and failure-rate models' output is
//! in `report` and their plots in `plot`.

use crate::cli::{LogFormat, SimModel, SimPopulation};
use crate::cli::{SimFormat, SimulateArgs};
use crate::exit::Outcome;
use crate::policy::{Backoff, Jitter};
use crate::report::Reporter;
use crate::simulate::report::{self, FailureRun, OverloadRun};
use crate::simulate::{self, Figures, Scenario, Strategy};
use crate::simulate::{failures, guard, overload, plot as model_plot, sweep};
use crate::units::fmt_duration;
use serde_json::json;
use std::fmt::Write;
use std::time::Duration;

/// The most simulated requests one command may process (clients x attempts x runs x
/// policies): a few seconds of work, not an accidental hour.
const MAX_WORK: u64 = 200_000_000;

/// The most tries one overload or failure-rate command may send, estimated from above
/// (first tries per second x seconds x attempts, per strategy, seed and swept point). An
/// overload try costs more than an outage's request (a timeout, a server with its requests
/// in flight): this is a minute of work at most.
const MAX_TRIES: f64 = 100_000_000.0;

/// The most tries one run of the overload or failure-rate model may send, estimated the
/// same way: a run keeps every try it sent (the overload server keeps a request it has not
/// finished, answered or not), so this bounds its memory to a few hundred megabytes.
const MAX_RUN_TRIES: f64 = 2_000_000.0;

/// The longest overload or failure-rate run: the overload model keeps per-second series.
const MAX_SIM_DURATION: Duration = Duration::from_secs(24 * 3600);

fn scenario(a: &SimulateArgs) -> Result<Scenario, String> {
    let d = Scenario::default();
    let base = a.base.unwrap_or(d.base);
    let cap = a.cap.unwrap_or(d.cap);
    let window = a.window.unwrap_or(d.window);
    if base < Duration::from_millis(1) {
        return Err("--base must be at least 1ms".into());
    }
    if base > cap {
        return Err("--base is above --cap: the base must not exceed the cap".into());
    }
    if window.is_zero() {
        return Err("--window must be longer than 0".into());
    }
    Ok(Scenario {
        clients: a.clients.unwrap_or(d.clients),
        outage: a.outage.unwrap_or(d.outage),
        capacity: a.capacity.unwrap_or(d.capacity),
        window,
        attempts: a.attempts.unwrap_or(d.attempts),
        base,
        cap,
        deadline: a.deadline.filter(|d| !d.is_zero()),
        limits: crate::fleet::record::Limits {
            budget_pct: a.retry_budget.unwrap_or(d.limits.budget_pct),
            floor: a.budget_floor.unwrap_or(d.limits.floor),
            threshold: a.breaker_threshold.unwrap_or(d.limits.threshold),
            ..d.limits
        },
    })
}

/// What one command does, checked.
enum Job {
    Outage(Scenario, Vec<Strategy>),
    Overload(OverloadRun, Vec<guard::Strategy>),
    Boundary(OverloadRun, Vec<guard::Strategy>, u32),
    Failures(FailureRun, Vec<guard::Strategy>),
    FailureSweep(FailureRun, Vec<guard::Strategy>),
}

/// Runs `retry-http simulate`.
pub fn simulate(a: &SimulateArgs) -> Outcome {
    let say = Reporter::new(crate::report::LogConfig::plain(LogFormat::Text));
    let job = match plan(a) {
        Ok(j) => j,
        Err(e) => {
            say.error(&e);
            return Outcome::Usage;
        }
    };
    let print = |text: &str| match crate::output::print_stdout(text) {
        Ok(()) => Outcome::Success,
        Err(e) => {
            say.error(&e);
            Outcome::Local
        }
    };
    let plotted = |r: Result<(), String>| {
        r.map_err(|e| {
            let path = a.plot.as_deref().unwrap_or(std::path::Path::new(""));
            say.error(&format!("cannot write the plot {}: {e}", path.display()));
        })
    };
    let json_out = |v: serde_json::Value| print(&format!("{v}\n"));
    match job {
        Job::Outage(sc, strategies) => outage(a, &sc, &strategies, &say),
        Job::Overload(run, strategies) => {
            let figures = report::overload_figures(&run, &strategies);
            if let Some(path) = &a.plot
                && plotted(model_plot::timeline(path, &run, &figures)).is_err()
            {
                return Outcome::Local;
            }
            match a.format {
                SimFormat::Table => print(&report::overload_table(&run, &figures)),
                SimFormat::Json => json_out(report::overload_json(&figures)),
            }
        }
        Job::Boundary(run, strategies, runs) => {
            let (rates, lengths) = (sweep::default_rates(), sweep::default_lengths());
            // The JSON reports each point's means too; the table and the map need only the
            // recovered share.
            let points = match a.format {
                SimFormat::Json => report::boundary(&run, &strategies, (&rates, &lengths), runs),
                SimFormat::Table => {
                    report::boundary_shares(&run, &strategies, (&rates, &lengths), runs)
                }
            };
            if let Some(path) = &a.plot
                && plotted(model_plot::boundary(path, &run, &points, runs)).is_err()
            {
                return Outcome::Local;
            }
            match a.format {
                SimFormat::Table => print(&report::boundary_table(&run, &points, runs)),
                SimFormat::Json => json_out(report::boundary_json(&run, &points)),
            }
        }
        Job::Failures(run, strategies) => {
            let figures = report::failure_figures(&run, &strategies);
            match a.format {
                SimFormat::Table => print(&report::failure_table(&run, &figures)),
                SimFormat::Json => json_out(report::failure_json(&run, &figures)),
            }
        }
        Job::FailureSweep(run, strategies) => {
            let ps = sweep::default_ps();
            let rows = report::failure_sweep(&run, &strategies, (&ps, &sweep::DEFAULT_CLIENTS));
            if let Some(path) = &a.plot
                && plotted(model_plot::failure_sweep(path, &run, &rows)).is_err()
            {
                return Outcome::Local;
            }
            match a.format {
                SimFormat::Table => print(&report::failure_sweep_table(&run, &rows)),
                SimFormat::Json => json_out(report::failure_json(&run, &rows)),
            }
        }
    }
}

/// The outage model: the strategies (or the search), as a table, JSON or a plot.
fn outage(a: &SimulateArgs, sc: &Scenario, strategies: &[Strategy], say: &Reporter) -> Outcome {
    let runs = a.runs.unwrap_or(1);
    let limit = simulate::physical_limit(sc);
    let print = |text: &str| match crate::output::print_stdout(text) {
        Ok(()) => Outcome::Success,
        Err(e) => {
            say.error(&e);
            Outcome::Local
        }
    };
    if a.search {
        return match a.format {
            SimFormat::Table => print(&search_report(sc, a.seed, runs, &limit)),
            SimFormat::Json => print(&format!("{}\n", search_json(sc, a.seed, runs, &limit))),
        };
    }
    let results: Vec<Figures> = strategies
        .iter()
        .map(|k| simulate::average_sharing(sc, &k.backoff(sc), k.sharing(), k.name(), a.seed, runs))
        .collect();
    if let Some(path) = &a.plot
        && let Err(e) = plot(path, sc, &results)
    {
        say.error(&format!("cannot write the plot {}: {e}", path.display()));
        return Outcome::Local;
    }
    match a.format {
        SimFormat::Table => print(&table(sc, a.seed, runs, &results, &limit)),
        SimFormat::Json => print(&format!("{}\n", to_json(sc, &results, &limit))),
    }
}

/// The models a flag belongs to, for the usage error of a flag given to another model.
fn models_words(models: &[SimModel]) -> String {
    let names: Vec<&str> = models
        .iter()
        .map(|m| match m {
            SimModel::Outage => "outage",
            SimModel::Overload => "overload",
            SimModel::FailureRate => "failure-rate",
        })
        .collect();
    names.join(" or ")
}

/// The first flag given that the chosen model does not take, as a usage error.
fn foreign_flag(a: &SimulateArgs) -> Result<(), String> {
    use SimModel::{FailureRate, Outage, Overload};
    let both: &[SimModel] = &[Overload, FailureRate];
    let flags: [(&str, bool, &[SimModel]); 21] = [
        ("--outage", a.outage.is_some(), &[Outage]),
        ("--capacity", a.capacity.is_some(), &[Outage]),
        ("--window", a.window.is_some(), &[Outage]),
        ("--deadline", a.deadline.is_some(), &[Outage]),
        ("--search", a.search, &[Outage]),
        ("--retry-budget", a.retry_budget.is_some(), &[Outage]),
        ("--budget-floor", a.budget_floor.is_some(), &[Outage]),
        (
            "--breaker-threshold",
            a.breaker_threshold.is_some(),
            &[Outage],
        ),
        ("--sweep", a.sweep, both),
        ("--population", a.population.is_some(), &[Overload]),
        ("--spike-rate", a.spike_rate.is_some(), &[Overload]),
        ("--trigger-at", a.trigger_at.is_some(), &[Overload]),
        ("--trigger-for", a.trigger_for.is_some(), &[Overload]),
        ("--capacity-drop", a.capacity_drop.is_some(), &[Overload]),
        ("--timeout", a.timeout.is_some(), &[Overload]),
        ("--per-request", a.per_request.is_some(), &[Overload]),
        ("--network", a.network.is_some(), &[Overload]),
        ("--base-rate", a.base_rate.is_some(), both),
        ("--duration", a.duration.is_some(), both),
        ("--latency", a.latency.is_some(), both),
        ("--failure-rate", a.failure_rate.is_some(), &[FailureRate]),
    ];
    for (name, given, models) in flags {
        if given && !models.contains(&a.model) {
            return Err(format!(
                "{name} belongs to --model {}, not --model {}",
                models_words(models),
                models_words(&[a.model])
            ));
        }
    }
    Ok(())
}

/// Checks the command before any work is done: the flags against the model, then the
/// model's own checks. The error is the message of a usage error.
fn plan(a: &SimulateArgs) -> Result<Job, String> {
    foreign_flag(a)?;
    match a.model {
        SimModel::Outage => plan_outage(a),
        SimModel::Overload => plan_overload(a),
        SimModel::FailureRate => plan_failures(a),
    }
}

/// The outage model, in this order: the scenario, the strategies, the amount of work (at
/// most `MAX_WORK` requests), the plot's folder.
fn plan_outage(a: &SimulateArgs) -> Result<Job, String> {
    let sc = scenario(a)?;
    let strategies = a
        .strategies
        .as_deref()
        .unwrap_or("fixed,exponential,full,equal,decorrelated")
        .split(',')
        .map(Strategy::parse)
        .collect::<Result<Vec<Strategy>, String>>()?;
    let policies = if a.search {
        400
    } else {
        strategies.len() as u64
    };
    let runs = a.runs.unwrap_or(1);
    let work = u64::from(sc.clients) * u64::from(sc.attempts) * u64::from(runs) * policies;
    if work > MAX_WORK {
        return Err(format!(
            "this simulation would process up to {work} requests; the limit is {MAX_WORK}: lower --clients, --attempts or --runs"
        ));
    }
    plot_folder(a)?;
    Ok(Job::Outage(sc, strategies))
}

/// The plot's folder exists, and the plot's path is not a folder itself (both found before
/// the simulation runs).
fn plot_folder(a: &SimulateArgs) -> Result<(), String> {
    if let Some(path) = &a.plot {
        if path.is_dir() || crate::files::names_a_folder(path) {
            return Err(format!(
                "--plot {} is a folder: give the SVG file's path, such as load.svg",
                path.display()
            ));
        }
        let dir = crate::files::folder(path);
        if !dir.is_dir() {
            return Err(format!(
                "--plot {}: the folder {} does not exist",
                path.display(),
                dir.display()
            ));
        }
    }
    Ok(())
}

/// The strategies of the overload and failure-rate models (all eleven by default).
fn model_strategies(a: &SimulateArgs) -> Result<Vec<guard::Strategy>, String> {
    match &a.strategies {
        None => Ok(guard::Strategy::ALL.to_vec()),
        Some(list) => {
            let mut out: Vec<guard::Strategy> = Vec::new();
            for s in list.split(',').map(guard::Strategy::parse) {
                let s = s?;
                // A strategy named twice is played once.
                if !out.contains(&s) {
                    out.push(s);
                }
            }
            Ok(out)
        }
    }
}

/// The strategies' settings: `guard::Settings::default()` with --attempts, --base, --cap.
fn settings(a: &SimulateArgs) -> Result<guard::Settings, String> {
    let d = guard::Settings::default();
    let (base, cap) = (a.base.unwrap_or(d.base), a.cap.unwrap_or(d.cap));
    if base < Duration::from_millis(1) {
        return Err("--base must be at least 1ms".into());
    }
    if base > cap {
        return Err(format!(
            "--base is above --cap ({}): the base must not exceed the cap",
            fmt_duration(cap)
        ));
    }
    Ok(guard::Settings {
        attempts: a.attempts.unwrap_or(d.attempts),
        base,
        cap,
        ..d
    })
}

/// A duration flag of the overload and failure-rate models at least `min`.
fn at_least(flag: &str, d: Duration, min: Duration) -> Result<(), String> {
    if d < min {
        return Err(format!(
            "{flag} {} is too short: expected at least {}",
            fmt_duration(d),
            fmt_duration(min)
        ));
    }
    Ok(())
}

/// The run's length: at most `MAX_SIM_DURATION`.
fn duration_ok(d: Duration, min: Duration) -> Result<(), String> {
    at_least("--duration", d, min)?;
    if d > MAX_SIM_DURATION {
        return Err(format!(
            "--duration {} is too long: expected at most {}",
            fmt_duration(d),
            fmt_duration(MAX_SIM_DURATION)
        ));
    }
    Ok(())
}

/// The estimated tries are within `MAX_RUN_TRIES` for the largest run and `MAX_TRIES` in
/// all.
fn work_ok(largest: f64, tries: f64) -> Result<(), String> {
    if largest > MAX_RUN_TRIES {
        return Err(format!(
            "one run would send up to {largest:.0} tries; the limit is {MAX_RUN_TRIES:.0}: lower --base-rate, --spike-rate, --trigger-for, --duration or --attempts"
        ));
    }
    if tries > MAX_TRIES {
        return Err(format!(
            "this simulation would send up to {tries:.0} tries; the limit is {MAX_TRIES:.0}: lower --base-rate, --spike-rate, --trigger-for, --duration, --attempts, --runs or the strategies"
        ));
    }
    Ok(())
}

/// The overload model: its scenario from the defaults and the flags, checked; one run per
/// strategy, or the boundary sweep.
fn plan_overload(a: &SimulateArgs) -> Result<Job, String> {
    let d = overload::Scenario::default();
    if a.sweep {
        for (flag, given) in [
            ("--spike-rate", a.spike_rate.is_some()),
            ("--trigger-for", a.trigger_for.is_some()),
        ] {
            if given {
                return Err(format!(
                    "{flag} cannot be given with --sweep: the sweep varies the spike rate (50 to 100 first tries/s) and the trigger's length (1, 2, 5, 10, 20s)"
                ));
            }
        }
    } else if a.runs.is_some() {
        return Err(
            "--runs with --model overload needs --sweep: a single run is one seed (choose it with --seed)"
                .into(),
        );
    }
    let sc = overload::Scenario {
        duration: a.duration.unwrap_or(d.duration),
        base_rate: a.base_rate.unwrap_or(d.base_rate),
        spike_rate: a.spike_rate.unwrap_or(d.spike_rate),
        trigger_at: a.trigger_at.unwrap_or(d.trigger_at),
        trigger_for: a.trigger_for.unwrap_or(d.trigger_for),
        capacity_drop: a.capacity_drop.unwrap_or(d.capacity_drop),
        latency: a.latency.unwrap_or(d.latency),
        per_request: a.per_request.unwrap_or(d.per_request),
        timeout: a.timeout.unwrap_or(d.timeout),
        network: a.network.unwrap_or(d.network),
        clients: a.clients.unwrap_or(d.clients),
        population: match a.population {
            Some(SimPopulation::Closed) => overload::Population::Closed,
            Some(SimPopulation::Open) | None => overload::Population::Open,
        },
    };
    let ms = Duration::from_millis(1);
    at_least("--timeout", sc.timeout, ms)?;
    at_least("--latency", sc.latency, ms)?;
    at_least("--trigger-at", sc.trigger_at, Duration::from_secs(1))?;
    let lengths = sweep::default_lengths();
    let longest = if a.sweep {
        lengths.iter().copied().max().unwrap_or(sc.trigger_for)
    } else {
        sc.trigger_for
    };
    // Recovery is judged on the last 10 s: they must come after the trigger.
    let need = sc.trigger_at + longest + Duration::from_secs(10);
    if sc.duration < need {
        return Err(format!(
            "--duration {} is too short: the run must last 10s past the end of the {}trigger (--trigger-at {} + {} + 10s = {})",
            fmt_duration(sc.duration),
            if a.sweep { "longest swept " } else { "" },
            fmt_duration(sc.trigger_at),
            fmt_duration(longest),
            fmt_duration(need)
        ));
    }
    duration_ok(sc.duration, need)?;
    let st = settings(a)?;
    let strategies = model_strategies(a)?;
    let per_run = |spike: f64, len: Duration| {
        let len = len.as_secs_f64().min(sc.duration.as_secs_f64());
        (sc.base_rate * (sc.duration.as_secs_f64() - len) + spike * len) * f64::from(st.attempts)
    };
    let n = strategies.len() as f64;
    let run = OverloadRun {
        scenario: sc,
        settings: st,
        seed: a.seed,
    };
    if a.sweep {
        let runs = a.runs.unwrap_or(3);
        let each: Vec<f64> = sweep::default_rates()
            .iter()
            .flat_map(|r| lengths.iter().map(move |l| (*r, *l)))
            .map(|(r, l)| per_run(r, l))
            .collect();
        let largest = each.iter().copied().fold(0.0, f64::max);
        work_ok(largest, each.iter().sum::<f64>() * n * f64::from(runs))?;
        plot_folder(a)?;
        return Ok(Job::Boundary(run, strategies, runs));
    }
    let one = per_run(sc.spike_rate, sc.trigger_for);
    work_ok(one, one * n)?;
    plot_folder(a)?;
    Ok(Job::Overload(run, strategies))
}

/// The failure-rate model: its scenario, checked; one run per strategy (seeds pooled), or
/// the p sweep.
fn plan_failures(a: &SimulateArgs) -> Result<Job, String> {
    let d = failures::Scenario::default();
    if a.sweep {
        for (flag, given) in [
            ("--failure-rate", a.failure_rate.is_some()),
            ("--clients", a.clients.is_some()),
        ] {
            if given {
                return Err(format!(
                    "{flag} cannot be given with --sweep: the sweep varies p (0 to 0.5 by 0.05) and the clients (10, 100, 1000)"
                ));
            }
        }
    } else if a.plot.is_some() {
        return Err(
            "--plot with --model failure-rate needs --sweep: the plot is amplification against p"
                .into(),
        );
    }
    let sc = failures::Scenario {
        clients: a.clients.unwrap_or(d.clients),
        rate: a.base_rate.unwrap_or(d.rate),
        p: a.failure_rate.unwrap_or(d.p),
        latency: a.latency.unwrap_or(d.latency),
        duration: a.duration.unwrap_or(d.duration),
    };
    duration_ok(sc.duration, Duration::from_secs(1))?;
    let st = settings(a)?;
    let strategies = model_strategies(a)?;
    let runs = a.runs.unwrap_or(1);
    let per_run = sc.rate * sc.duration.as_secs_f64() * f64::from(st.attempts);
    let points = if a.sweep {
        (sweep::default_ps().len() * sweep::DEFAULT_CLIENTS.len()) as f64
    } else {
        1.0
    };
    work_ok(
        per_run,
        per_run * points * strategies.len() as f64 * f64::from(runs),
    )?;
    plot_folder(a)?;
    let run = FailureRun {
        scenario: sc,
        settings: st,
        seed: a.seed,
        runs,
    };
    Ok(if a.sweep {
        Job::FailureSweep(run, strategies)
    } else {
        Job::Failures(run, strategies)
    })
}

fn last(o: &Figures) -> String {
    o.last_success_s
        .map_or_else(|| "-".into(), |s| format!("{s:.2}"))
}

/// The comparison table.
pub fn table(sc: &Scenario, seed: u64, runs: u32, results: &[Figures], limit: &Figures) -> String {
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
            "{:<15} {:>8.1} {:>8.0} {:>12.2} {:>14} {:>9.1}x {:>8.1}",
            o.strategy,
            o.served_pct,
            o.calls,
            o.calls_per_served,
            last(o),
            o.peak_load,
            o.gave_up
        );
    }
    s
}

/// The same figures as a JSON array; the physical limit is the last object. Besides the
/// outage model's own figures, each object has the keys every model's rows share:
/// `success_rate` (served clients, 0 to 1) and `amplification` (calls per client: each
/// client makes one first try).
pub fn to_json(sc: &Scenario, results: &[Figures], limit: &Figures) -> serde_json::Value {
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

/// A duration as `--base` accepts it and people type it: milliseconds below a second
/// (620ms), seconds above, with their decimals (1.1s, 24s, 2.5s).
fn flag_duration(d: std::time::Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let secs = format!("{}.{:03}", ms / 1000, ms % 1000);
    format!("{}s", secs.trim_end_matches('0').trim_end_matches('.'))
}

/// The flags that give this backoff in a scenario like `sc`.
fn flags(sc: &Scenario, b: &Backoff) -> String {
    let jitter = match b.jitter {
        Jitter::None => "none".to_string(),
        other => other.label(),
    };
    let deadline = sc
        .deadline
        .map(|d| format!(" --deadline {}", flag_duration(d)))
        .unwrap_or_default();
    format!(
        "--attempts {} --base {} --cap {} --jitter {jitter}{deadline}",
        sc.attempts,
        flag_duration(b.base),
        flag_duration(b.cap)
    )
}

fn search_report(sc: &Scenario, seed: u64, runs: u32, limit: &Figures) -> String {
    let front = simulate::search(sc, seed, runs);
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
    let best = simulate::nearest_to_limit(&front, limit);
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
    s
}

/// The search's Pareto front as a JSON array, one object per policy: its calls, time to the
/// last success, served share, the flags that give it, and whether it is the point nearest
/// the physical limit.
fn search_json(sc: &Scenario, seed: u64, runs: u32, limit: &Figures) -> serde_json::Value {
    let front = simulate::search(sc, seed, runs);
    let best = simulate::nearest_to_limit(&front, limit);
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

/// A sparse load curve as points, with a zero on each side of every gap (a gap of any
/// length costs two points, not one per empty window).
fn curve(load: &std::collections::BTreeMap<u64, u32>) -> impl Iterator<Item = (u64, u32)> + '_ {
    let mut points = Vec::new();
    let mut previous: Option<u64> = None;
    for (&w, &n) in load {
        match previous {
            Some(p) if w > p + 1 => {
                points.push((p + 1, 0));
                if w > p + 2 {
                    points.push((w - 1, 0));
                }
            }
            None if w > 0 => points.push((0, 0)),
            _ => {}
        }
        points.push((w, n));
        previous = Some(w);
    }
    points.into_iter()
}

/// The chart `plot` draws on: seconds across, requests per window up.
type Chart<'a, 'b> = plotters::chart::ChartContext<
    'a,
    plotters::prelude::SVGBackend<'b>,
    plotters::coord::cartesian::Cartesian2d<
        plotters::coord::types::RangedCoordf64,
        plotters::coord::types::RangedCoordf64,
    >,
>;

/// How far the plot reaches: the windows until the last request of any strategy, and the
/// most requests in one window (at least the capacity).
fn extent(sc: &Scenario, results: &[Figures]) -> (u64, f64) {
    let longest = results
        .iter()
        .filter_map(|o| o.load.keys().next_back())
        .max()
        .map_or(1, |last| last + 1);
    let top = results
        .iter()
        .flat_map(|o| o.load.values())
        .copied()
        .max()
        .unwrap_or(1)
        .max(sc.capacity) as f64;
    (longest, top)
}

/// The y axis reaches at most this multiple of the capacity: the burst of every client at
/// t = 0 (200 requests against 24 a window in the study) would otherwise squash the capacity
/// line and the strategies into one band at the bottom. Higher windows are drawn at the top
/// edge, marked with a triangle and their count.
pub const CLIP_CAPACITIES: f64 = 3.0;

/// The outage's shade in the outage plot (drawn at 45% opacity).
pub const OUTAGE_SHADE: (u8, u8, u8) = (255, 200, 120);

/// The top of the outage plot's y axis: the highest window, clipped to `CLIP_CAPACITIES`
/// times the capacity, and never below the capacity.
fn y_top(sc: &Scenario, highest: f64) -> f64 {
    let cap = f64::from(sc.capacity.max(1));
    highest.min(cap * CLIP_CAPACITIES).max(cap)
}

/// Load over time per strategy, with the capacity line, as an SVG file at `path`.
fn plot(path: &std::path::Path, sc: &Scenario, results: &[Figures]) -> Result<(), String> {
    use plotters::prelude::*;
    let window_s = sc.window.as_secs_f64();
    let (longest, highest) = extent(sc, results);
    let top = y_top(sc, highest);
    let end_s = (longest as f64 * window_s).max(sc.outage.as_secs_f64() + window_s);
    let root = SVGBackend::new(path, (1000, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let clipped = if highest > top {
        format!(" (axis clipped at {CLIP_CAPACITIES}x capacity: triangles mark higher windows)")
    } else {
        String::new()
    };
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "{} clients: requests per {} window{clipped}",
                sc.clients,
                fmt_duration(sc.window)
            ),
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(0f64..end_s, 0f64..top * 1.08)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc("requests per window")
        .draw()
        .map_err(|e| e.to_string())?;
    draw_outage(&mut chart, sc, top * 1.08)?;
    draw_loads(&mut chart, results, window_s, top)?;
    draw_capacity(&mut chart, sc, end_s)?;
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())
}

/// The outage, shaded from t = 0 to its end over the whole height `top`, and labelled.
fn draw_outage(chart: &mut Chart, sc: &Scenario, top: f64) -> Result<(), String> {
    use plotters::prelude::*;
    let end = sc.outage.as_secs_f64();
    if end <= 0.0 {
        return Ok(());
    }
    let (r, g, b) = OUTAGE_SHADE;
    chart
        .draw_series(std::iter::once(Rectangle::new(
            [(0.0, 0.0), (end, top)],
            RGBColor(r, g, b).mix(0.45).filled(),
        )))
        .map_err(|e| e.to_string())?
        .label(format!("outage ({})", fmt_duration(sc.outage)))
        .legend(move |(x, y)| {
            Rectangle::new([(x, y - 5), (x + 18, y + 5)], RGBColor(r, g, b).filled())
        });
    Ok(())
}

/// One line per strategy: requests per window (`window_s` seconds long), labelled.
fn draw_loads(
    chart: &mut Chart,
    results: &[Figures],
    window_s: f64,
    top: f64,
) -> Result<(), String> {
    use plotters::prelude::*;
    let colors = [RED, BLUE, GREEN, MAGENTA, CYAN, BLACK];
    for (i, o) in results.iter().enumerate() {
        let color = colors[i % colors.len()];
        // Empty windows are points at zero, so the line drops between waves; windows above
        // the axis are drawn at its top and marked below.
        let points = curve(&o.load).map(|(w, n)| (w as f64 * window_s, f64::from(n).min(top)));
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))
            .map_err(|e| e.to_string())?
            .label(o.strategy.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
        let over: Vec<(f64, u32)> = o
            .load
            .iter()
            .filter(|(_, n)| f64::from(**n) > top)
            .map(|(w, n)| (*w as f64 * window_s, *n))
            .collect();
        let dx = 8 + 30 * i as i32;
        chart
            .draw_series(over.into_iter().map(|(x, n)| {
                EmptyElement::at((x, top))
                    + TriangleMarker::new((0, 0), 6, color.filled())
                    + Text::new(
                        n.to_string(),
                        (dx, -14),
                        ("sans-serif", 12).into_font().color(&color),
                    )
            }))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The capacity line, from the end of the outage to `end_s` seconds, labelled.
fn draw_capacity(chart: &mut Chart, sc: &Scenario, end_s: f64) -> Result<(), String> {
    use plotters::prelude::*;
    let cap = f64::from(sc.capacity);
    let start = sc.outage.as_secs_f64();
    chart
        .draw_series(LineSeries::new(
            vec![(start, cap), (end_s, cap)],
            BLACK.stroke_width(1),
        ))
        .map_err(|e| e.to_string())?
        .label("capacity")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK));
    Ok(())
}
